#include "device_choice.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "errors.hpp"

namespace xcuda
{
    namespace
    {
        std::string devices_text(int count)
        {
            return std::to_string(count) + (count == 1 ? " device" : " devices");
        }

        // ", modulo the 2 devices this process sees" when the modulo changed the value.
        std::string modulo_text(int value, int device_count)
        {
            if (device_count > 0 && value >= device_count)
            {
                return ", modulo the " + devices_text(device_count) + " this process sees";
            }
            return "";
        }

        int modulo(int value, int device_count)
        {
            return device_count > 0 ? value % device_count : value;
        }

        std::string joined(const std::vector<std::string>& parts)
        {
            std::string text;
            for (std::size_t i = 0; i < parts.size(); ++i)
            {
                text += (i == 0 ? "" : (i + 1 == parts.size() ? " and " : ", ")) + parts[i];
            }
            return text;
        }
    }

    const std::vector<std::string>& device_environment::rank_variables()
    {
        static const std::vector<std::string> names{"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                                                    "LOCAL_RANK"};
        return names;
    }

    device_environment device_environment::from(const std::function<const char*(const char*)>& lookup)
    {
        device_environment environment;
        auto value = [&](const std::string& name) {
            const char* text = lookup(name.c_str());
            return std::string(text ? text : "");
        };
        environment.requested = value("XCUDA_DEVICE");
        for (const auto& name : rank_variables())
        {
            std::string text = value(name);
            if (!text.empty())
            {
                environment.ranks.emplace_back(name, text);
            }
        }
        environment.visible_devices = value("CUDA_VISIBLE_DEVICES");
        return environment;
    }

    device_environment device_environment::from_process()
    {
        return from([](const char* name) -> const char* { return std::getenv(name); });
    }

    int device_choice::parse(const std::string& variable, const std::string& text, const char* meaning)
    {
        // Digits only (no sign, no blanks), compared before converting: strtol would accept " 1" and
        // "+1", and narrowing its long to int turned 4294967296 into device 0.
        bool digits = !text.empty();
        for (char c : text)
        {
            digits = digits && c >= '0' && c <= '9';
        }
        std::string significant = digits ? text.substr(std::min(text.find_first_not_of('0'), text.size() - 1)) : "";
        long long value = digits && significant.size() <= 10 ? std::strtoll(significant.c_str(), nullptr, 10) : -1;
        if (value < 0 || value > INT_MAX)
        {
            throw usage_error(variable + "='" + text + "' is not " + meaning + ": expected a whole number from 0 to " +
                              std::to_string(INT_MAX) + ". " +
                              (variable == "XCUDA_DEVICE"
                                   ? "Set it to one of this machine's devices (0 is the first), or unset it to let "
                                     "the launcher's local rank choose."
                                   : "The launcher sets it; set XCUDA_DEVICE to choose the device yourself."));
        }
        return static_cast<int>(value);
    }

    device_choice device_choice::choose(const device_environment& environment, const host_slot& slot, int device_count)
    {
        device_choice choice;
        std::string visible = environment.visible_devices.empty()
                                  ? ""
                                  : "; CUDA_VISIBLE_DEVICES=" + environment.visible_devices +
                                        " numbers the devices this process sees";
        if (environment.requested == "simulator")
        {
            // The driver layer opened the PTX simulator instead of a driver (docs/simulator.md): one device.
            return on_simulator("XCUDA_DEVICE=simulator");
        }
        if (environment.requested == "gpu")
        {
            // A GPU, never the simulator (the driver layer reads that); the device as if it were unset.
            device_environment rest = environment;
            rest.requested.clear();
            choice = choose(rest, slot, device_count);
            const std::string unset = "XCUDA_DEVICE is unset";
            if (choice.m_reason.find(unset) != std::string::npos)
            {
                choice.m_reason.replace(choice.m_reason.find(unset), unset.size(), "XCUDA_DEVICE=gpu names no device");
            }
            choice.m_reason += "; XCUDA_DEVICE=gpu: a GPU, never the PTX simulator";
            return choice;
        }
        if (!environment.requested.empty())
        {
            choice.m_ordinal = parse("XCUDA_DEVICE", environment.requested, "a device ordinal");
            choice.m_source = device_source::variable;
            choice.m_source_name = "XCUDA_DEVICE";
            std::vector<std::string> overridden;
            for (const auto& [name, text] : environment.ranks)
            {
                overridden.push_back(name + "=" + text);
            }
            if (slot.index >= 0)
            {
                overridden.push_back("the engine's host slot " + std::to_string(slot.index));
            }
            choice.m_reason = "XCUDA_DEVICE=" + environment.requested +
                              (overridden.empty() ? "" : ", which overrides " + joined(overridden)) + visible;
            return choice;
        }
        if (!environment.ranks.empty())
        {
            const auto& [name, text] = environment.ranks.front();
            int rank = parse(name, text, "a local rank");
            choice.m_ordinal = modulo(rank, device_count);
            choice.m_source = device_source::local_rank;
            choice.m_source_name = name;
            std::vector<std::string> ignored;
            for (std::size_t i = 1; i < environment.ranks.size(); ++i)
            {
                ignored.push_back(environment.ranks[i].first + "=" + environment.ranks[i].second);
            }
            choice.m_reason = "local rank " + std::to_string(rank) + " (" + name + "=" + text + ")" +
                              modulo_text(rank, device_count) +
                              (ignored.empty() ? "" : "; " + joined(ignored) + " ignored: " + name + " comes first") +
                              visible;
            return choice;
        }
        if (slot.index >= 0)
        {
            choice.m_ordinal = modulo(slot.index, device_count);
            choice.m_source = device_source::host_slot;
            choice.m_source_name = "host slot";
            choice.m_reason = "slot " + std::to_string(slot.index) + " among this host's xcuda engines (" + slot.what +
                              ")" + modulo_text(slot.index, device_count) +
                              "; neither XCUDA_DEVICE nor a launcher's local rank is set" + visible;
            return choice;
        }
        choice.m_reason = "the default: XCUDA_DEVICE is unset and no launcher set a local rank (" +
                          joined(device_environment::rank_variables()) + ")" + visible;
        return choice;
    }

    device_choice device_choice::on_simulator(const std::string& who)
    {
        device_choice choice;
        choice.m_source = device_source::simulator;
        choice.m_source_name = who.rfind("XCUDA_DEVICE", 0) == 0 ? "XCUDA_DEVICE" : who.rfind("the fallback", 0) == 0 ? "simulator fallback" : who;
        choice.m_reason = who + ": the PTX simulator's one device";
        return choice;
    }

    device_choice device_choice::by_call(int ordinal)
    {
        device_choice choice;
        choice.m_ordinal = ordinal;
        choice.m_source = device_source::call;
        choice.m_source_name = "xcuda.set_device";
        choice.m_reason = "xcuda.set_device(" + std::to_string(ordinal) + ")";
        return choice;
    }
}
