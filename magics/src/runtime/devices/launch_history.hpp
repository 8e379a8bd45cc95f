#pragma once
// The last few launches of a session, for the reports of a kernel fault ("kernel 'saxpy' faulted ...
// launched as saxpy[grid=..., block=...]") and of an interrupted wait (what was still running there).
//
// A launch is recorded as it is queued (a fixed-size copy: no allocation on the launch path); a
// completed wait for the whole device marks everything recorded so far as finished.
//
// Threading: every member takes the history's lock (a spin lock: it is held for a copy of a few dozen
// bytes, on the launch path); launches on several threads record at once.

#include <algorithm>
#include <atomic>
#include <cstring>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <cuda.h>

namespace xcuda
{
    // One launch as remembered for fault reports: which kernel, how, where.
    struct launch_record
    {
        char kernel[96] = {0};
        unsigned grid[3] = {1, 1, 1};
        unsigned block[3] = {1, 1, 1};
        unsigned shared_mem = 0;
        int device = 0;
        CUstream stream = nullptr;
        std::uint64_t serial = 0;

        std::string describe() const;
    };

    // A kernel's name as a record keeps it: at most 95 characters, then zeros. Made once per kernel
    // (cuda_kernel), so that a launch copies a fixed size and measures nothing.
    struct launch_name
    {
        char text[sizeof launch_record::kernel] = {0};

        launch_name() = default;
        explicit launch_name(const std::string& name) noexcept
        {
            std::memcpy(text, name.data(), std::min(name.size(), sizeof text - 1));
        }
    };

    class launch_history
    {
    public:
        static constexpr std::size_t capacity = 8;

        // Inline: the launch path's (one fixed-size copy under the spin lock).
        void record(const launch_name& kernel, const unsigned grid[3], const unsigned block[3], unsigned shared_mem,
                    CUstream stream, int device) noexcept
        {
            std::lock_guard<spin_lock> lock(m_lock);
            std::uint64_t serial = m_serial.load(std::memory_order_relaxed) + 1;
            launch_record& r = m_records[(serial - 1) % capacity];
            std::memcpy(r.kernel, kernel.text, sizeof r.kernel);
            std::memcpy(r.grid, grid, sizeof r.grid);
            std::memcpy(r.block, block, sizeof r.block);
            r.shared_mem = shared_mem;
            r.device = device;
            r.stream = stream;
            r.serial = serial;
            m_serial.store(serial, std::memory_order_release);
        }
        void record(const std::string& kernel, const unsigned grid[3], const unsigned block[3], unsigned shared_mem,
                    CUstream stream, int device) noexcept
        {
            record(launch_name(kernel), grid, block, shared_mem, stream, device);
        }
        // Everything recorded until now has finished (a wait for the whole device, or the default stream).
        void mark_finished() noexcept;
        // Launches recorded since the last mark_finished (printf output is flushed at the next wait then).
        bool unfinished() const noexcept { return m_serial != m_finished; }
        // The unfinished launches, oldest first (at most `capacity`); those of one device.
        std::vector<launch_record> unfinished_launches() const;
        std::vector<launch_record> unfinished_on(int device) const;

    private:
        // Held for a fixed-size copy: a spin lock costs less than a mutex on the launch path.
        class spin_lock
        {
        public:
            void lock() noexcept
            {
                while (m_flag.test_and_set(std::memory_order_acquire))
                {
                }
            }
            void unlock() noexcept { m_flag.clear(std::memory_order_release); }

        private:
            std::atomic_flag m_flag = ATOMIC_FLAG_INIT;
        };
        mutable spin_lock m_lock;
        launch_record m_records[capacity];
        std::atomic<std::uint64_t> m_serial{0};
        std::atomic<std::uint64_t> m_finished{0};
    };
}
