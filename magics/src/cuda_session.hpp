#pragma once
// The per-process CUDA session: the device, its primary context and the default stream, created
// lazily at the first GPU operation and kept until close() (kernel shutdown).
//
// Why the primary context: it is the one CuPy, PyTorch and Numba use, so device pointers pass
// between them and xcuda without copies or context switches.
//
// Ownership: the session owns its context reference. Device buffers and modules register themselves
// as session_resources so that close() frees them before the context is released; each records the
// session generation it was made in, and a resource from an earlier generation is never used again.
//
// Threading: calls are made with the GIL held (one caller at a time); make_current() makes the
// context current on the calling thread, as the driver requires per thread.

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>

#include <cuda.h>

namespace xcuda
{
    struct device_properties
    {
        int ordinal = 0;
        std::string name;
        int cc_major = 0;
        int cc_minor = 0;
        int multiprocessors = 0;
        int warp_size = 32;
        int max_threads_per_block = 0;
        std::array<int, 3> max_block{};
        std::array<int, 3> max_grid{};
        int max_shared_per_block = 0;
        int max_shared_per_block_optin = 0;
        int max_registers_per_block = 0;
        int max_threads_per_sm = 0;
        int max_blocks_per_sm = 0;
        int max_registers_per_sm = 0;
        int max_shared_per_sm = 0;
        int reserved_shared_per_block = 0;
        int memory_clock_khz = 0;
        int memory_bus_width = 0;
        std::size_t total_memory = 0;

        std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
    };

    // Something that lives in the session's context and must be freed before the context goes.
    class session_resource
    {
    public:
        virtual ~session_resource() = default;
        // Frees the driver object now; later use raises. Called by close(); must not throw.
        virtual void release() noexcept = 0;
        // One line for %cuda_status and for the list of losses after a reset.
        virtual std::string describe() const = 0;
        // "module" or "buffer", and the device bytes held (for session statistics).
        virtual const char* kind() const noexcept = 0;
        virtual std::size_t bytes() const noexcept { return 0; }
    };

    class cuda_session
    {
    public:
        static cuda_session& instance();

        // Creates the session if needed; throws cuda_unavailable_error or cuda_error.
        void ensure();
        // ensure() and make the context current on this thread.
        void make_current();
        // Whether a session exists now (never creates one).
        bool active() const noexcept { return m_context != nullptr; }
        // Whether ensure() would succeed, creating the session if it can; never throws.
        bool try_ensure() noexcept;

        // Chooses the device for the session. Before the session exists: remembered. Afterwards,
        // switching is allowed only while no buffer or module lives in the current one.
        void set_device(int ordinal);
        int device_ordinal() const noexcept { return m_ordinal; }
        int device_count();

        const device_properties& properties();
        CUcontext context() const noexcept { return m_context; }
        CUdevice device() const noexcept { return m_device; }
        // The session's default stream: the legacy default stream, which orders work with every
        // blocking stream, as CuPy's and PyTorch's default streams do.
        CUstream stream() const noexcept { return nullptr; }
        std::uint64_t generation() const noexcept { return m_generation; }
        int driver_version();

        // "sm_XX" of the current GPU when a driver and a GPU exist, else "compute_75" (NVRTC's oldest).
        std::string default_arch() noexcept;

        // Whether code compiled for arch (sm_XY CUBIN: same major, minor <= the device's; compute_XY PTX:
        // XY <= the device's) can be loaded on the session's device. False without a session.
        bool can_run(const std::string& arch) const noexcept;

        // Free every resource, release the primary context. Safe to call twice; ensure() afterwards
        // starts a new session.
        void close() noexcept;

        void register_resource(session_resource* resource);
        void unregister_resource(session_resource* resource) noexcept;
        std::size_t resource_count() const;
        // Count and device bytes of the live resources of one kind ("module", "buffer").
        std::pair<std::size_t, std::size_t> resource_totals(const std::string& kind) const;

        cuda_session(const cuda_session&) = delete;
        cuda_session& operator=(const cuda_session&) = delete;

    private:
        cuda_session();
        void read_properties();

        int m_ordinal = 0;
        CUdevice m_device = 0;
        CUcontext m_context = nullptr;
        std::uint64_t m_generation = 1;
        device_properties m_properties;
        mutable std::mutex m_mutex;
        std::unordered_set<session_resource*> m_resources;
    };
}
