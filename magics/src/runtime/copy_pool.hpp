#pragma once
// A memcpy shared by the caller and a few copy threads: what the staging of pageable copies uses to
// fill and empty its page-locked buffers at host memory speed (runtime/host_staging).
//
// The copy is cut into pieces that each participant claims in turn (an atomic counter), so a thread
// that is not running (a busy machine, another library's spinning threads, a process pinned to one
// core) never holds the copy up: the caller and whichever threads run take its pieces, and the caller
// returns once every piece is copied. A thread that wakes after its job is over finds no piece of it
// left to claim (the counter carries the job's number) and waits for the next job.
//
// A staged transfer is a run of copies a few microseconds apart (one per staging buffer), so after a
// copy the threads, and the caller waiting for the last pieces, watch for the next one for `spin`
// before they sleep on a condition variable: a copy that comes within it starts without a wake-up
// (a futex call each, and tens of microseconds on a virtual machine), and the caller posts a copy
// without waking anyone when no thread sleeps. spin = 0 sleeps at once.
//
// Pure (no driver), so its rules are tested without a GPU (tests/cpp/test_transfers.cpp).
// Threading: one copy at a time (the caller's own lock: host_staging holds its transfer mutex).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace xcuda
{
    class copy_pool
    {
    public:
        // Pieces of this size (the last one shorter); copies below min_parallel bytes the caller makes alone.
        static constexpr std::size_t piece_bytes = 256u << 10;
        static constexpr std::size_t min_parallel = 1u << 20;
        // participants: the caller and participants - 1 threads (at least the caller); spin: how long the
        // threads and the caller watch for the next copy or the last piece before sleeping (the session's
        // is transfer_settings::staging_spin_us).
        copy_pool(std::size_t participants, std::chrono::microseconds spin);
        ~copy_pool();
        copy_pool(const copy_pool&) = delete;
        copy_pool& operator=(const copy_pool&) = delete;

        std::size_t participants() const noexcept { return m_threads.size() + 1; }
        std::chrono::microseconds spin() const noexcept { return m_spin; }
        // memcpy(destination, source, bytes); returns when all of it is copied.
        void copy(void* destination, const void* source, std::size_t bytes);
        // How many pieces the caller itself copied, over all copies (for tests and counters).
        std::uint64_t pieces_by_caller() const noexcept { return m_by_caller.load(std::memory_order_relaxed); }
        std::uint64_t pieces_by_threads() const noexcept { return m_by_threads.load(std::memory_order_relaxed); }

    private:
        struct job
        {
            char* destination = nullptr;
            const char* source = nullptr;
            std::size_t bytes = 0;
            std::uint32_t pieces = 0;
        };
        // Claims the next piece of job number `number`; false when none of it is left.
        bool claim(std::uint32_t number, const job& work, std::uint32_t& piece) noexcept;
        void copy_piece(const job& work, std::uint32_t piece) noexcept;
        void finish_piece(const job& work);
        void worker();
        // Watches `ready` for up to m_spin; true as soon as it holds.
        template <class Ready>
        bool spin_until(Ready ready) const noexcept;

        std::vector<std::thread> m_threads;
        std::chrono::microseconds m_spin;
        std::mutex m_mutex;
        std::condition_variable m_start;
        std::condition_variable m_finished;
        job m_job;                                // under m_mutex
        std::atomic<std::uint32_t> m_number{0};  // the current job's number (written under m_mutex)
        std::size_t m_sleepers = 0;               // threads waiting on m_start (under m_mutex)
        std::atomic<std::uint64_t> m_next{0};     // job number << 32 | next piece to claim
        std::atomic<std::uint32_t> m_done{0};     // pieces of the current job copied
        std::atomic<std::uint64_t> m_by_caller{0};
        std::atomic<std::uint64_t> m_by_threads{0};
        std::atomic<bool> m_stop{false};          // written under m_mutex
    };
}
