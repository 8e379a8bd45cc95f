#pragma once
// Where an ipyparallel engine computes among the xcuda engines of its host: its slot in the host
// registry (runtime/host_registry), which chooses its device when neither XCUDA_DEVICE nor a
// launcher's local rank did, the GPUs it makes contexts on recorded by UUID, and the warning when
// another engine already uses one of them. Also what xcuda.device_choice() reports.
//
// Why here: the binding only says whether the process is an engine (xcuda.parallel.engine_label()),
// turns the report into a dict and raises the warnings this class words. A plain notebook never makes
// the registry.
//
// Ownership: owns the host_registry once joined; uses the session's device_contexts it is given (a
// cuda_session is one). Threading: join and report with the GIL held (the binding's); record_gpu runs
// from the session's context hook, on any thread that makes a context; it touches only the registry
// (its files are locked).

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace xcuda
{
    class device_contexts;
    class host_registry;

    class engine_placement
    {
    public:
        explicit engine_placement(device_contexts& session);
        ~engine_placement();
        engine_placement(const engine_placement&) = delete;
        engine_placement& operator=(const engine_placement&) = delete;

        // Joins the registry of `directory` as the engine `label` (once: a later call does nothing): leases a
        // slot when the device choice is open to one, and records the GPUs that have contexts already,
        // calling warn_sharing with the text of each sharing warning (it may throw). A registry that fails
        // (an xcuda::error) leaves the engine unplaced; the text of the warning that says so is returned,
        // "" when it joined.
        std::string join(const std::string& label, const std::string& directory,
                         const std::function<void(const std::string&)>& warn_sharing);
        bool joined() const noexcept { return static_cast<bool>(m_host); }

        // Records device `ordinal` (its context exists) when joined; the sharing warning's text when other
        // engines use its GPU, else "".
        std::string record_gpu(int ordinal);
        // The labels of the other engines on the current device's GPU (joined and with a context there).
        std::vector<std::string> sharing_now() const;

        // xcuda.device_choice(): empty optionals are None.
        struct report
        {
            std::optional<int> ordinal;  // none when the environment's value was refused
            std::string source;
            std::string reason;
            std::optional<std::string> engine;
            std::optional<int> host_slot;
            std::optional<std::string> registry;
            std::optional<std::string> gpu_uuid;
            std::vector<std::string> shared_with;
        };
        report choice_report();

    private:
        device_contexts& m_session;
        std::unique_ptr<host_registry> m_host;
        std::string m_label;
    };
}
