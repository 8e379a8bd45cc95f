#pragma once
// Copies between pageable host memory (numpy arrays) and the device through page-locked buffers.
//
// Why: the driver copies pageable memory through its own small staging area at a fraction of the bus
// speed (about 7.6 GB/s on the H200 host, against about 54 GB/s page-locked). Copying into a reused
// page-locked buffer with several threads, while the DMA engine drains the previous buffer, moves large
// arrays several times faster. Small transfers (below threshold()) go straight to the driver.
//
// Ownership: one instance per device, owned by the session (cuda_session::staging). The page-locked buffers (4 x 8 MiB) are allocated in its context at the first
// large transfer and freed when the session closes (a session_resource). The copy threads live for the
// process. Threading: one transfer at a time (a mutex); callers release the GIL around a transfer.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <cuda.h>

#include "cuda_session.hpp"

namespace xcuda
{
    class host_staging : public session_resource
    {
    public:
        // Made by the session for one device (buffers and events belong to its context).
        host_staging(cuda_session& session, int ordinal);

        // Whether a transfer of this size from or to this host memory goes through the staging buffers:
        // large, pageable (page-locked memory is copied directly), and not turned off (XCUDA_STAGING=0).
        bool worth_it(const void* host, std::size_t bytes) const noexcept;
        std::size_t threshold() const noexcept { return m_threshold; }

        // Host to device on stream. When it returns, source may be reused; the data is ordered before
        // later work on stream.
        void to_device(CUdeviceptr destination, const void* source, std::size_t bytes, CUstream stream);
        // Device to host after the work queued on stream; returns when destination holds the data.
        void to_host(void* destination, CUdeviceptr source, std::size_t bytes, CUstream stream);

        void release() noexcept override;
        std::string describe() const override { return "page-locked staging buffers"; }
        const char* kind() const noexcept override { return "staging"; }
        int device() const noexcept override { return m_device; }

        ~host_staging() override;
        host_staging(const host_staging&) = delete;
        host_staging& operator=(const host_staging&) = delete;

    private:
        void ensure_buffers();
        // memcpy split across the copy threads and the caller.
        void parallel_copy(void* destination, const void* source, std::size_t bytes);
        void worker_loop(std::size_t index);

        static constexpr std::size_t chunk_bytes = 8u << 20;
        static constexpr std::size_t chunk_count = 4;

        cuda_session& m_session;
        int m_device = 0;
        bool m_enabled = true;
        std::size_t m_threshold = 4u << 20;
        std::mutex m_transfer;

        std::vector<void*> m_buffers;
        std::vector<CUevent> m_events;
        std::uint64_t m_generation = 0;

        // The copy threads: each takes its slice of the current job.
        struct slice
        {
            char* destination = nullptr;
            const char* source = nullptr;
            std::size_t bytes = 0;
        };
        std::vector<std::thread> m_workers;
        std::vector<slice> m_slices;
        std::mutex m_pool;
        std::condition_variable m_start;
        std::condition_variable m_done;
        std::uint64_t m_job = 0;
        std::size_t m_pending = 0;
        bool m_stop = false;
    };
}
