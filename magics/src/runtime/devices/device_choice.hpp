#pragma once
// Which device a process starts on, and why: a pure function of the environment's values, the
// process' slot among the xcuda engines of its host, and the device count. The session asks it at
// construction (count unknown: no driver is touched at import) and again once the driver has told
// the count; %cuda_info and xcuda.device_choice() show the reason it gives.
//
// Precedence, first match wins:
//   1. XCUDA_DEVICE=<n>: that device (the session refuses it at the first GPU operation if the
//      machine has no device n).
//   2. A launcher's local rank, the first of OMPI_COMM_WORLD_LOCAL_RANK (Open MPI), MPI_LOCALRANKID
//      (MPICH, Intel MPI), SLURM_LOCALID (srun), LOCAL_RANK (torchrun and others): rank modulo the
//      device count. MPI's variables come before Slurm's because a batch script's own SLURM_LOCALID=0
//      is inherited by every process that mpiexec starts inside it.
//   3. The slot of an ipyparallel engine among this host's xcuda engines (host_registry): slot
//      modulo the device count. Only engines have a slot.
//   4. Device 0.
// xcuda.set_device(n) replaces the choice with its own (by_call).
// XCUDA_DEVICE=gpu chooses as if it were unset (2 to 4) and only keeps the driver layer from falling back
// to the PTX simulator; once the simulator runs (XCUDA_DEVICE=simulator, xcuda.use_simulator(), the
// fallback), its one device is chosen by whoever chose the simulator (on_simulator).
//
// A malformed value (not a whole number from 0 to INT_MAX: "abc", "-1", "4294967296") throws
// usage_error naming the variable and its text; it is never narrowed or wrapped into another device.

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace xcuda
{
    // The environment's values that choose a device, read once.
    struct device_environment
    {
        std::string requested;  // XCUDA_DEVICE as written; "" when unset or empty
        // The local-rank variables that are set (name, text), in precedence order.
        std::vector<std::pair<std::string, std::string>> ranks;
        std::string visible_devices;  // CUDA_VISIBLE_DEVICES, named in the reason only

        // The local-rank variables xcuda reads, in precedence order.
        static const std::vector<std::string>& rank_variables();
        // From a lookup that returns nullptr for an unset variable (std::getenv, or a test's map).
        static device_environment from(const std::function<const char*(const char*)>& lookup);
        static device_environment from_process();
    };

    // An engine's place among the xcuda engines of its host (host_registry::lease_slot).
    struct host_slot
    {
        int index = -1;    // -1: not an engine, or not placed
        std::string what;  // who holds it, for the reason: "ipyparallel engine 3 (pid 4711)"
    };

    enum class device_source
    {
        variable,    // XCUDA_DEVICE
        local_rank,  // a launcher's local rank
        host_slot,   // the engine's slot on its host
        call,        // xcuda.set_device
        fallback,    // nothing chose: device 0
        simulator    // the PTX simulator's one device (XCUDA_DEVICE=simulator, use_simulator(), the fallback)
    };

    class device_choice
    {
    public:
        // device_count < 0: not known yet (no driver asked); ranks and slots are then taken as they are.
        // Throws usage_error for a malformed XCUDA_DEVICE or local rank.
        static device_choice choose(const device_environment& environment, const host_slot& slot, int device_count);
        // What xcuda.set_device(ordinal) makes of it.
        static device_choice by_call(int ordinal);
        // Device 0 of the PTX simulator, chosen by `who` (cuda_driver::chosen_by(): "xcuda.use_simulator()").
        static device_choice on_simulator(const std::string& who);

        int ordinal() const noexcept { return m_ordinal; }
        device_source source() const noexcept { return m_source; }
        // One sentence: which device and why, naming the variables (and those it overrides).
        const std::string& reason() const noexcept { return m_reason; }
        // "XCUDA_DEVICE", "SLURM_LOCALID", "host slot", "xcuda.set_device", "default".
        const std::string& source_name() const noexcept { return m_source_name; }
        // Whether the ordinal is taken modulo the device count (choose again once the count is known).
        bool depends_on_count() const noexcept
        {
            return m_source == device_source::local_rank || m_source == device_source::host_slot;
        }
        // Whether an engine's host slot would decide (nothing more explicit did): only then an engine
        // leases a slot.
        bool open_to_host_slot() const noexcept
        {
            return m_source == device_source::fallback || m_source == device_source::host_slot;
        }

        // Parses a device ordinal or a local rank: digits only, 0 to INT_MAX. Throws usage_error naming
        // `variable` and `text`; `meaning` says what the value is ("a device ordinal", "a local rank").
        static int parse(const std::string& variable, const std::string& text, const char* meaning);

    private:
        int m_ordinal = 0;
        device_source m_source = device_source::fallback;
        std::string m_source_name = "default";
        std::string m_reason;
    };
}
