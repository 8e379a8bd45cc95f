#include "session_report.hpp"

#include <cstdio>
#include <cstdlib>

#include "compiler.hpp"
#include "cuda_driver.hpp"
#include "cuda_module.hpp"
#include "device_choice.hpp"
#include "cuda_session.hpp"
#include "module_registry.hpp"
#include "nvrtc_compiler.hpp"
#include "nvrtc_library.hpp"
#include "text.hpp"

namespace xcuda
{
    namespace
    {
        // Every device: the current one marked, memory free where xcuda has a context there.
        text_table devices_table(cuda_session& session)
        {
            text_table table{"Devices", {"device", "name", "arch", "multiprocessors", "memory", "context", "peers"}, {}, ""};
            int count = session.device_count();
            for (int ordinal = 0; ordinal < count; ++ordinal)
            {
                const device_properties& p = session.properties(ordinal);
                std::string memory = text::binary_bytes(p.total_memory);
                if (session.context(ordinal))
                {
                    auto [free_bytes, total_bytes] = session.memory_info(ordinal);
                    memory = text::binary_bytes(free_bytes) + " free of " + text::binary_bytes(total_bytes);
                }
                std::string peers;
                for (int other = 0; other < count; ++other)
                {
                    if (other != ordinal && session.peer_enabled(ordinal, other))
                    {
                        peers += (peers.empty() ? "" : ", ") + std::to_string(other);
                    }
                }
                table.rows.push_back({std::to_string(ordinal) + (ordinal == session.device_ordinal() ? " (current)" : ""),
                                      p.name, p.arch(), std::to_string(p.multiprocessors), memory,
                                      session.context(ordinal) ? "active" : "not yet", peers.empty() ? "-" : peers});
            }
            session.make_current();
            return table;
        }

        // Which device and why, and for an ipyparallel engine its place on the host and who shares its GPU.
        void placement_rows(text_table& table, const device_placement& choice, bool have_gpu)
        {
            if (choice.refused)
            {
                table.rows.push_back({"device choice", "refused: " + choice.reason});
            }
            else if (have_gpu)
            {
                table.rows.push_back({"chosen by", choice.reason});
            }
            else
            {
                table.rows.push_back({"device choice", "device " + std::to_string(choice.ordinal) + ": " + choice.reason});
            }
            if (!choice.in_engine)
            {
                return;
            }
            std::string engine = choice.engine;
            if (choice.host_slot >= 0)
            {
                engine += ", slot " + std::to_string(choice.host_slot);
            }
            table.rows.push_back({"engine", engine + " (registry " + choice.registry + ")"});
            if (choice.has_gpu_uuid)
            {
                table.rows.push_back({"GPU UUID", choice.gpu_uuid});
                std::string shared;
                for (const auto& other : choice.shared_with)
                {
                    shared += (shared.empty() ? "" : "; ") + other;
                }
                table.rows.push_back({"GPU shared with", shared.empty() ? "no other xcuda engine of this host" : "WARNING: " + shared});
            }
        }

        // The NVRTC row of %cuda_info: which one and why, and the driver note when it does not fit.
        void nvrtc_rows(text_table& table)
        {
            table.rows.push_back({"NVRTC", nvrtc_library::reason() + " (" + nvrtc_library::path() + ")"});
            if (!nvrtc_library::driver_note().empty())
            {
                table.rows.push_back({"NVRTC and driver", "WARNING: " + nvrtc_library::driver_note()});
            }
        }

        std::string loaded_on(const cuda_module& module)
        {
            std::vector<int> devices = module.loaded_devices();
            if (devices.empty())
            {
                return "no";
            }
            std::string text = "device";
            text += devices.size() > 1 ? "s " : " ";
            for (std::size_t i = 0; i < devices.size(); ++i)
            {
                text += (i ? ", " : "") + std::to_string(devices[i]);
            }
            return text;
        }

        // The module's target, and what runs it: the PTX simulator loads every module from its PTX.
        std::string target_of(const cuda_module& module)
        {
            const std::string& arch = module.compiled().arch;
            if (cuda_driver::available() && cuda_driver::get().simulated())
            {
                return arch + " PTX (the PTX simulator runs it)";
            }
            return arch + (module.compiled().cubin.empty() ? " PTX" : " CUBIN");
        }

        // What made a module, in words: a variant and a cell without kernels are not bound to a name.
        std::string made_by(const cuda_module& module)
        {
            const std::string& name = module.name();
            const std::string variant = " [variant]";
            if (name.size() > variant.size() && name.compare(name.size() - variant.size(), variant.size(), variant) == 0)
            {
                return "Kernel.variant() of " + name.substr(0, name.size() - variant.size()) +
                       " (not bound to a name; kept while referenced)";
            }
            if (module.signatures().empty())
            {
                return "a %%cuda cell without __global__ functions";
            }
            return "a %%cuda cell or xcuda.compile()";
        }
    }

    std::string session_report::html() const
    {
        std::string out = "<div class=\"xcuda-report\">";
        for (const auto& table : tables)
        {
            out += table_view::html(table);
        }
        return out + "</div>";
    }

    std::string session_report::text() const
    {
        std::string out;
        for (const auto& table : tables)
        {
            out += (out.empty() ? "" : "\n") + table_view::text(table);
        }
        return out;
    }

    std::string session_report::version_text(int version)
    {
        return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
    }

    std::string session_report::home_relative(const std::string& path, const std::string& home)
    {
        if (!home.empty() && home != "/" && path.compare(0, home.size(), home) == 0 &&
            (path.size() == home.size() || path[home.size()] == '/'))
        {
            return "~" + path.substr(home.size());
        }
        return path;
    }

    device_placement device_placement::of(const engine_placement::report& choice)
    {
        device_placement p;
        p.refused = !choice.ordinal;
        p.ordinal = choice.ordinal.value_or(-1);
        p.reason = choice.reason;
        p.in_engine = choice.engine.has_value();
        p.engine = choice.engine.value_or("");
        p.host_slot = choice.host_slot.value_or(-1);
        p.registry = p.in_engine ? choice.registry.value_or("") : "";
        p.has_gpu_uuid = choice.gpu_uuid.has_value();
        p.gpu_uuid = choice.gpu_uuid.value_or("");
        p.shared_with = choice.shared_with;
        return p;
    }

    session_report session_report::info(cuda_session& session, const device_placement& placement)
    {
        session_report r;
        text_table table{"CUDA session", {"", ""}, {}, ""};
        nvrtc_compiler::version();  // loads NVRTC, or raises saying where it looked
        if (!session.try_ensure())
        {
            std::string reason;
            try
            {
                session.ensure();
            }
            catch (const std::exception& e)
            {
                reason = e.what();
            }
            if (!session.choice_problem().empty())
            {
                reason = "not used until the device choice below is fixed";
            }
            table.rows.push_back({"GPU", "none: " + reason.substr(0, reason.find('\n'))});
            placement_rows(table, placement, false);
            table.rows.push_back({"compile target", "compute_75 (PTX)"});
            nvrtc_rows(table);
            r.tables.push_back(table);
            return r;
        }
        const device_properties& p = session.properties();
        auto [free_bytes, total_bytes] = session.memory_info(session.device_ordinal());
        double peak = p.theoretical_bandwidth_gbs();
        table.rows.push_back({"device", std::to_string(p.ordinal) + " of " + std::to_string(session.device_count())});
        const bool simulated = cuda_driver::get().simulated();
        device_placement shown = placement;
        if (simulated && !shown.refused)
        {
            // The placement was read before this report made the context (and the fallback): who chose the
            // simulator, as the session says from now on.
            shown.reason = device_choice::on_simulator(cuda_driver::get().chosen_by()).reason();
        }
        placement_rows(table, shown, true);
        table.rows.push_back({"name", p.name});
        table.rows.push_back({"arch", p.arch() + " (compute capability " + std::to_string(p.cc_major) + "." +
                                          std::to_string(p.cc_minor) + ")"});
        if (simulated)
        {
            table.rows.push_back({"runs on", "the PTX simulator, on the CPU: modules load from PTX, one warp at a time; "
                                             "timings are the simulator's, not a GPU's"});
        }
        table.rows.push_back({"multiprocessors", std::to_string(p.multiprocessors) + (simulated ? " (simulated model)" : "")});
        table.rows.push_back({"memory", text::binary_bytes(free_bytes) + " free of " + text::binary_bytes(total_bytes)});
        if (peak > 0)
        {
            char text[64];
            std::snprintf(text, sizeof text, "%.0f GB/s (from clock and bus width)", peak);
            table.rows.push_back({"memory bandwidth", text});
        }
        table.rows.push_back({"max threads per block", std::to_string(p.max_threads_per_block)});
        table.rows.push_back({"shared memory per block", text::binary_bytes(static_cast<std::size_t>(p.max_shared_per_block)) +
                                                             " (" + text::binary_bytes(static_cast<std::size_t>(p.max_shared_per_block_optin)) +
                                                             " opt-in)"});
        table.rows.push_back({"driver", simulated ? "no driver (simulator)" : "CUDA " + version_text(session.driver_version())});
        nvrtc_rows(table);
        r.tables.push_back(table);
        r.tables.push_back(devices_table(session));
        return r;
    }

    session_report session_report::status(const module_registry& registry, compiler& compiler,
                                          const std::vector<named_array>& arrays, const session_resources* resources)
    {
        session_report r;
        text_table modules{"Modules", {"module", "made by", "kernels", "target", "loaded", "PTX", "headers"}, {},
                           "no modules: run a %%cuda cell"};
        for (const auto& module : registry.modules())
        {
            std::string kernels;
            for (const auto& signature : module->signatures())
            {
                kernels += (kernels.empty() ? "" : ", ") + signature.to_string();
            }
            std::string headers;
            for (const auto& header : module->headers())
            {
                headers += (headers.empty() ? "" : ", ") + header.first;
            }
            if (module->stale())
            {
                headers += " (STALE: " + module->stale_because() + " changed; re-run the cell)";
            }
            modules.rows.push_back({module->name(), made_by(*module), kernels, target_of(*module),
                                    loaded_on(*module), text::binary_bytes(module->compiled().ptx.size()), headers});
        }
        r.tables.push_back(modules);

        text_table buffers{"Device buffers", {"name", "shape", "dtype", "bytes", "device"}, {},
                           "no device arrays in the namespace"};
        for (const auto& array : arrays)
        {
            if (!array.name.empty() && array.name[0] == '_')
            {
                continue;  // IPython's output history (_, _1, ...)
            }
            buffers.rows.push_back({array.name, array.shape, array.dtype, text::binary_bytes(array.bytes),
                                    array.device >= 0 ? std::to_string(array.device) : "released"});
        }
        r.tables.push_back(buffers);
        if (resources)
        {
            text_table textures{"CUDA arrays, textures and surfaces", {"object", "what"}, {},
                                "none: xcuda.cuda_array, xcuda.texture and xcuda.surface make them"};
            for (const char* kind : {"cuda array", "texture", "surface"})
            {
                for (const std::string& text : resources->descriptions(kind))
                {
                    textures.rows.push_back({kind, text});
                }
            }
            r.tables.push_back(textures);
        }
        text_table cache{"Compile cache", {"entries", "hits", "misses", "on disk", "NVRTC runs in"}, {}, ""};
        compile_cache& c = compiler.memory();
        disk_cache& disk = compiler.disk();
        const char* home = std::getenv("HOME");
        compiler::process_info where = compiler.where_compiles();
        std::string runs_in = where.mode == "fork" ? "a fork per compile (no xcuda-compile beside the module)"
                              : where.mode == "in-process" ? "this process (XCUDA_COMPILE_PROCESS=0)"
                              : where.pid > 0 ? "xcuda-compile (pid " + std::to_string(where.pid) + ")"
                                              : "xcuda-compile (not started)";
        cache.rows.push_back({std::to_string(c.size()), std::to_string(c.hits()), std::to_string(c.misses()),
                              disk.enabled() ? home_relative(disk.directory(), home ? home : "") : "off", runs_in});
        r.tables.push_back(cache);
        return r;
    }
}
