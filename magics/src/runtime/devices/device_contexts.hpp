#pragma once
// The devices of the CUDA session and their primary contexts: found at the first GPU operation, each
// device's context retained lazily at the first operation that needs it and made current per thread, the
// properties of each device, the generation of each context, peer access between devices, which device
// the session is on (and why), and whether a kernel fault has lost the GPU. Also the session's registry
// of what lives in the contexts (session_resources) and its last launches (launch_history). This is the
// lowest part of cuda_session, which derives from it (through device_session) and adds the waits, the
// transfers, fault reports and close(); what the session's parts need of it (the waits, the staging of
// copies, page-locked memory, device buffers) they take from here, so none of them includes its owner.
//
// Why the primary context: it is the one CuPy, PyTorch and Numba use, so device pointers pass between
// them and xcuda without copies or context switches.
//
// Several devices: one session, one current device (set_device, `with xcuda.device(n)`), and per device
// its primary context, retained lazily at the first operation that needs it.
//
// Ownership: the session owns its context references (cuda_session::close() releases them). Device
// buffers and modules register themselves as session_resources (with their device) so that close() frees
// them before the contexts are released; each records the generation of its device's context, and a
// resource from an earlier generation is never used again. After a kernel fault (cuda_session::fault)
// the contexts are abandoned, never released, and lost_reason() says what happened.
//
// The device a session starts on: device_choice (XCUDA_DEVICE, a launcher's local rank, an engine's
// slot on its host, else 0), read at construction and chosen again, modulo the device count, when
// the driver has told the count. choice() says which and why; a malformed value is kept and refused
// (usage_error naming it) at the first GPU operation.
//
// Threading: what a launch uses may be called from several threads at once: ensure(), make_current(),
// properties(), generation(), record_launch() (contexts are made under a mutex, the launch history has
// its own, the device ordinal is atomic). make_current() makes the context current on the calling
// thread, as the driver requires per thread. The current device is the session's, not a thread's:
// set_device (and `with xcuda.device(n)`) while other threads launch changes where their next launches
// go. set_device, set_host_slot and the context hook's setter are for one thread while no other uses the
// session. The context hook runs outside the mutex.

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <cuda.h>

#include "cuda_driver.hpp"
#include "device_choice.hpp"
#include "device_properties.hpp"
#include "launch_history.hpp"
#include "session_resources.hpp"

namespace xcuda
{
    class device_contexts
    {
    public:
        // Creates the current device's context if needed; throws cuda_unavailable_error, cuda_error,
        // or session_lost_error after a kernel fault.
        void ensure();
        // ensure() and make the current device's context current on this thread.
        void make_current() { make_current(m_current.load(std::memory_order_relaxed)); }
        // The same for a given device (allocations and copies use their own buffer's device). Inline: the
        // launch path's case (the context exists and is current already) is two loads and a driver call.
        void make_current(int ordinal)
        {
            device_state* known = live(ordinal);
            CUcontext current = nullptr;
            if (known && cuda_driver::get().cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == known->context)
            {
                return;
            }
            make_current_slow(ordinal, known);
        }
        // Whether the current device's context exists now (never creates one).
        bool active() const noexcept;
        // Whether something made in generation `generation` on device `ordinal` is still alive.
        bool alive(int ordinal, std::uint64_t generation) const noexcept;
        // Before another driver table replaces this one (cuda_driver::use_simulator): true, with the devices
        // found so far forgotten, when no context was made yet (so nothing of the old driver is held);
        // false, changing nothing, once any device has a context.
        bool forget_devices_if_unused();
        // For destructors: makes device `ordinal`'s context current if what was made in `generation`
        // there is still alive, and says whether it is. Never throws, never creates a context.
        bool make_current_if_alive(int ordinal, std::uint64_t generation) noexcept;
        // Whether ensure() would succeed, creating the session if it can; never throws.
        bool try_ensure() noexcept;
        // Raises session_lost_error or session_closed_error (naming `what` of device `ordinal`) unless
        // what was made in `generation` there is still alive.
        void check_alive(int ordinal, std::uint64_t generation, const char* what) const;
        // Free and total bytes of device memory (creates the device's context if needed).
        std::pair<std::size_t, std::size_t> memory_info(int ordinal);

        // Chooses the device for later allocations, streams, launches and synchronize(). Any time;
        // each device keeps its own primary context, modules and buffers.
        void set_device(int ordinal);
        // Throws std::invalid_argument unless the ordinal names a device (without a driver: >= 0).
        void validate_ordinal(int ordinal);
        int device_ordinal() const noexcept { return m_current; }
        int device_count();

        // Which device the session is on and why (device_choice). Before the driver has told the device
        // count, a local rank or slot is taken as it is; afterwards modulo the count.
        const device_choice& choice() const noexcept { return m_choice; }
        // Why the environment's choice was refused ("" when it was not): a malformed XCUDA_DEVICE or
        // local rank. The first GPU operation raises it, as usage_error, until set_device chooses.
        std::string choice_problem() const;
        // Makes a local rank's or slot's choice final (modulo the device count) when a driver is there to
        // tell the count; otherwise it becomes final at the first GPU operation. Never throws.
        void settle_device_choice() noexcept;
        // An ipyparallel engine's slot among its host's engines: chooses the device when nothing more
        // explicit did (choice().open_to_host_slot()); otherwise only remembered.
        void set_host_slot(host_slot slot);
        // Called after the context of a device was made (its ordinal), with the session in order: the
        // Python layer records the GPU in the host registry and warns when another engine uses it. It
        // may throw (a warning turned into an error); the context stays made.
        void set_context_hook(std::function<void(int)> hook) { m_context_hook = std::move(hook); }
        // The GPU's UUID as nvidia-smi writes it ("GPU-8f3c...-..."): the same in every process of
        // the host whatever CUDA_VISIBLE_DEVICES says. "" when the driver cannot tell.
        std::string gpu_uuid(int ordinal);

        const device_properties& properties();
        // Properties of any device (reads attributes only: creates no context).
        const device_properties& properties(int ordinal);
        CUcontext context() const noexcept;
        CUcontext context(int ordinal) const noexcept;
        CUdevice device() const noexcept;
        // The session's default stream: the legacy default stream, which orders work with every
        // blocking stream, as CuPy's and PyTorch's default streams do.
        CUstream stream() const noexcept { return nullptr; }
        // The current device's generation: unique across devices and sessions, so anything cached
        // against it is redone after a switch of device or a new session. 0 without a context.
        std::uint64_t generation() const noexcept;
        std::uint64_t generation(int ordinal) const noexcept;
        int driver_version();

        // "sm_XX" of the current GPU when a driver and a GPU exist, else "compute_75" (NVRTC's oldest); never
        // falls back to the simulator (the first launch does).
        std::string default_arch() noexcept;

        // Whether code compiled for arch (sm_XY CUBIN: same major, minor <= the device's; compute_XY PTX:
        // XY <= the device's) can be loaded on the current (or given) device. False without a session.
        bool can_run(const std::string& arch) const noexcept;
        bool can_run(const std::string& arch, int ordinal) const noexcept;

        // Peer access: whether kernels on `accessor` may use memory of `owner`. enable both ways.
        bool can_access_peer(int a, int b);
        void enable_peer_access(int a, int b);
        // Turns on the driver's peer access between a and b (both ways) for copies, without letting
        // launches use the other's memory: cuMemcpyPeer without it goes through the host (about 37
        // against 380 GB/s between two H200s). enable_peer_access does this and allows launches.
        void open_peer_path(int a, int b);
        bool peer_enabled(int accessor, int owner) const noexcept
        {
            return accessor == owner ||
                   (accessor >= 0 && accessor < 64 && owner >= 0 && owner < 64 && (m_peers[accessor] >> owner) & 1u);
        }

        // Launches made since the last completed wait (fault reports name them); printf flush point.
        bool unsynchronized_launches() const noexcept { return m_history.unfinished(); }

        // Remembers a launch for fault reports (hot path: a fixed-size copy, no allocation).
        void record_launch(const std::string& kernel, const unsigned grid[3], const unsigned block[3],
                           unsigned shared_mem, CUstream stream) noexcept;
        // The same with the name made once (cuda_kernel's): the launch path's, inline.
        void record_launch(const launch_name& kernel, const unsigned grid[3], const unsigned block[3],
                           unsigned shared_mem, CUstream stream) noexcept
        {
            m_history.record(kernel, grid, block, shared_mem, stream, m_current.load(std::memory_order_relaxed));
        }

        // Non-empty once a fault has made the GPU unusable in this process: says which and what to do.
        const std::string& lost_reason() const noexcept { return m_lost; }

        // What lives in the device contexts (device buffers, modules, graphs, staging, page-locked memory):
        // freed by cuda_session::close() before the contexts go, abandoned after a fault.
        session_resources& resources() noexcept { return m_resources; }
        const session_resources& resources() const noexcept { return m_resources; }

        device_contexts(const device_contexts&) = delete;
        device_contexts& operator=(const device_contexts&) = delete;

    protected:
        // Made only as part of a cuda_session, which releases the contexts (close()) before this goes.
        // Reads the environment's device choice (a bad value is reported at the first GPU operation);
        // touches no driver.
        device_contexts();
        ~device_contexts() = default;

        // For cuda_session::close(): for each device whose context exists (when a driver is loaded), with
        // that context current and its work finished, calls before_release(ordinal) (the session frees
        // that device's resources and idle event there), then releases the context. Peer access is
        // forgotten. Not during a fault: the driver refuses every call then (abandon_contexts).
        void release_contexts(const std::function<void(int)>& before_release) noexcept;
        // For cuda_session::fault(): forgets every context without a driver call (the driver refuses every
        // call now; the process' exit frees the GPU), forgets peer access, and remembers `reason` as
        // lost_reason().
        void abandon_contexts(std::string reason) noexcept;
        // The launch path's way to a context is forgotten first when the contexts go (close, a fault).
        void forget_live() noexcept;
        // The launches since the last completed wait: the waits mark them finished, a fault names them.
        launch_history& history() noexcept { return m_history; }

    private:
        struct device_state
        {
            CUdevice device = 0;
            CUcontext context = nullptr;
            std::uint64_t generation = 0;
            bool have_properties = false;
            device_properties properties;
        };

        // make_current() when the context is not current yet (or not made yet: known is null).
        void make_current_slow(int ordinal, device_state* known);
        void discover();
        device_state& state(int ordinal);
        device_state& ensure_device(int ordinal);
        void read_properties(int ordinal, device_state& state);

        // The choice made at construction, or at discover() (count known), or by set_device. A refused
        // environment value leaves m_current at -1 and its error in m_choice_error.
        void choose_device(int device_count);

        std::atomic<int> m_current{0};
        device_environment m_environment;
        host_slot m_slot;
        device_choice m_choice;
        std::exception_ptr m_choice_error;
        std::function<void(int)> m_context_hook;
        std::vector<device_state> m_devices;  // one per device once the driver was asked
        std::atomic<bool> m_discovered{false};
        // Held while devices are discovered and contexts made (recursive: discovery happens inside).
        mutable std::recursive_mutex m_context_mutex;
        // The launch path's way to a device whose context exists, without the mutex: set (release) once
        // the context and the properties are made, cleared when the context goes (close, a fault).
        static constexpr int live_devices = 64;
        std::atomic<device_state*> m_live[live_devices] = {};
        device_state* live(int ordinal) const noexcept
        {
            return ordinal >= 0 && ordinal < live_devices ? m_live[ordinal].load(std::memory_order_acquire) : nullptr;
        }
        std::uint64_t m_next_generation = 1;
        std::uint64_t m_peers[64] = {};       // launches may use the other's memory (enable_peer_access)
        std::uint64_t m_peer_paths[64] = {};  // the driver's peer access is on (copies)
        session_resources m_resources;
        std::string m_lost;
        launch_history m_history;
    };

    // Inline: every launch asks it of each device array it passes.
    // Inline, with alive(): the launch path asks each of them once per launch.
    inline CUcontext device_contexts::context(int ordinal) const noexcept
    {
        return ordinal >= 0 && static_cast<std::size_t>(ordinal) < m_devices.size()
                   ? m_devices[static_cast<std::size_t>(ordinal)].context
                   : nullptr;
    }

    inline std::uint64_t device_contexts::generation(int ordinal) const noexcept
    {
        return context(ordinal) ? m_devices[static_cast<std::size_t>(ordinal)].generation : 0;
    }

    inline std::uint64_t device_contexts::generation() const noexcept
    {
        return generation(m_current);
    }

    inline bool device_contexts::alive(int ordinal, std::uint64_t generation) const noexcept
    {
        return ordinal >= 0 && static_cast<std::size_t>(ordinal) < m_devices.size() &&
               m_devices[static_cast<std::size_t>(ordinal)].context != nullptr &&
               m_devices[static_cast<std::size_t>(ordinal)].generation == generation;
    }
}
