#include "engine_placement.hpp"

#include "device_contexts.hpp"
#include "errors.hpp"
#include "host_registry.hpp"

namespace xcuda
{
    engine_placement::engine_placement(device_contexts& session)
        : m_session(session)
    {
    }

    engine_placement::~engine_placement() = default;

    std::string engine_placement::join(const std::string& label, const std::string& directory,
                                       const std::function<void(const std::string&)>& warn_sharing)
    {
        if (m_host)
        {
            return "";
        }
        m_label = label;
        try
        {
            m_host = std::make_unique<host_registry>(directory);
            // A refused XCUDA_DEVICE or rank stays refused: no slot hides it.
            if (m_session.choice_problem().empty() && m_session.choice().open_to_host_slot())
            {
                int slot = m_host->lease_slot(m_label);
                m_session.set_host_slot({slot, m_label});
            }
            for (int ordinal = 0; ordinal < 64; ++ordinal)
            {
                if (m_session.context(ordinal))
                {
                    // Contexts made before this process knew it was an engine.
                    std::string warning = record_gpu(ordinal);
                    if (!warning.empty())
                    {
                        warn_sharing(warning);
                    }
                }
            }
        }
        catch (const error& e)
        {
            // The engine still works, on the device chosen without a slot; say why it was not placed.
            m_host.reset();
            return std::string("xcuda: this engine could not join its host's engine registry: ") + e.what() +
                   ". It stays on device " + std::to_string(m_session.device_ordinal()) +
                   " and is not checked for sharing a GPU.";
        }
        return "";
    }

    std::string engine_placement::record_gpu(int ordinal)
    {
        if (!m_host)
        {
            return "";
        }
        std::string uuid = m_session.gpu_uuid(ordinal);
        if (uuid.empty())
        {
            return "";  // a driver without cuDeviceGetUuid: no id that every process agrees on
        }
        std::vector<std::string> others = m_host->use_gpu(uuid, m_label + " on device " + std::to_string(ordinal));
        if (others.empty())
        {
            return "";
        }
        std::string names;
        for (const auto& other : others)
        {
            names += (names.empty() ? "" : "; ") + other;
        }
        return "xcuda: device " + std::to_string(ordinal) + " (" + uuid + ") is also used by " + names +
               ". Engines on one GPU share its memory and compute. Start as many engines per host as it has "
               "GPUs, or give each engine its own XCUDA_DEVICE.";
    }

    std::vector<std::string> engine_placement::sharing_now() const
    {
        int ordinal = m_session.device_ordinal();
        if (!m_host || ordinal < 0 || !m_session.context(ordinal))
        {
            return {};
        }
        std::string uuid = m_session.gpu_uuid(ordinal);
        return uuid.empty() ? std::vector<std::string>{} : m_host->others_on(uuid);
    }

    engine_placement::report engine_placement::choice_report()
    {
        m_session.settle_device_choice();
        const device_choice& choice = m_session.choice();
        std::string problem = m_session.choice_problem();
        report r;
        if (problem.empty())
        {
            r.ordinal = m_session.device_ordinal();
        }
        r.source = problem.empty() ? choice.source_name() : std::string("refused");
        r.reason = problem.empty() ? choice.reason() : problem;
        if (m_host)
        {
            r.engine = m_label;
            if (m_host->slot() >= 0)
            {
                r.host_slot = m_host->slot();
            }
            r.registry = m_host->directory();
        }
        int ordinal = m_session.device_ordinal();
        if (ordinal >= 0 && m_session.context(ordinal))
        {
            r.gpu_uuid = m_session.gpu_uuid(ordinal);
        }
        r.shared_with = sharing_now();
        return r;
    }
}
