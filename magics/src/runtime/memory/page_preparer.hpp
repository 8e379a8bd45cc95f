#pragma once
// Threads that get a launch's copy-back destinations ready while the copies in of its other arrays and the
// kernel run, on cores the staging's copy threads leave free, so that the work is off the call's critical
// path. Two jobs (host_staging::prepare_destination chooses):
//
//   fault in (start)   a destination never written (the notebook's np.zeros(n), an np.empty) takes a page
//                      fault per page on its first write: in the copy back, after the kernel. Its pages are
//                      faulted in for writing here instead (host_pages::populate_for_write, MADV_POPULATE_WRITE),
//                      which never changes the bytes, so a destination read, written or freed meanwhile is not
//                      harmed: the work is only done early or for nothing.
//   scan (start_scan)  a destination the launch also copies in (a `float*` the kernel may read) is read by the
//                      staging to find its zero pieces (copy_pool::copy_unless_zero: np.zeros_like's output is
//                      set on the device instead of crossing the bus), which costs the copy threads a read of
//                      the whole array after the other arrays' copies. Here the pieces are read ahead, and the
//                      copy in takes those found zero without reading them again. Only reads. When the copy
//                      in comes before the scan is done, it takes what is known (ticket::take): the scan
//                      stops, and the copy threads read the pieces it had not, rather than wait for it.
//
// A range is cut into a part a thread (fewer where it has less than min_part a thread), the parts ending on
// 2 MiB boundaries (scans: on piece boundaries), which the threads take in turn; start() and start_scan()
// return a ticket whose wait() returns once every part is done. Threading: start(), start_scan() and the
// tickets' calls from any thread; the threads start with the object and are joined by its destructor,
// after the parts queued are done.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace xcuda
{
    class page_preparer
    {
    public:
        class ticket
        {
        public:
            // Returns once every part of the range is done (at once for a range with none).
            void wait() const noexcept;
            bool done() const noexcept;
            // A scan's answer, once done: for each piece, whether it holds only zero bytes (empty for a fault-in).
            std::vector<bool> zero_pieces() const;
            // A scan's answer so far, without waiting: the pieces read and found zero; the scan stops (its
            // threads read no further piece; wait() still returns only once they have left the range).
            // `unread`: the pieces it had not read (false in the answer, as pieces with data are).
            std::vector<bool> take(std::size_t& unread) const;

        private:
            friend class page_preparer;
            void finish_part() noexcept;
            enum : unsigned char
            {
                unread_piece = 0,
                zero_piece = 1,
                data_piece = 2
            };

            mutable std::mutex m_mutex;
            mutable std::condition_variable m_done;
            std::size_t m_remaining = 0;            // under m_mutex
            // A scan's, one a piece, each written once by the thread that read it (release; take() acquires).
            std::unique_ptr<std::atomic<unsigned char>[]> m_state;
            std::size_t m_pieces = 0;
            mutable std::atomic<bool> m_stop{false};  // take() was called: read no further piece
        };

        static constexpr std::size_t min_part = 4u << 20;

        // `threads` threads (at least one), huge: transparent huge pages allowed on faulted-in ranges first.
        page_preparer(std::size_t threads, bool huge);
        ~page_preparer();
        page_preparer(const page_preparer&) = delete;
        page_preparer& operator=(const page_preparer&) = delete;

        std::size_t threads() const noexcept { return m_threads.size(); }
        bool huge() const noexcept { return m_huge; }
        // Queues [data, data + bytes) for faulting in; the memory need not stay valid (see above).
        std::shared_ptr<const ticket> start(void* data, std::size_t bytes);
        // Queues a scan of [data, data + bytes) in pieces of `piece` bytes from data (the last one shorter);
        // the memory must stay valid until the ticket is done.
        std::shared_ptr<const ticket> start_scan(const void* data, std::size_t bytes, std::size_t piece);
        // Parts done so far, over all ranges (for tests and counters).
        std::size_t parts_done() const noexcept;

    private:
        struct part
        {
            char* data = nullptr;
            std::size_t bytes = 0;
            std::shared_ptr<ticket> owner;
            std::size_t piece = 0;        // a scan's piece size; 0: fault in
            std::size_t first_piece = 0;  // a scan's: the number of the part's first piece in the range
        };
        // Cuts [data, data + bytes) into a part a thread, each ending on a multiple of `boundary` from `base`.
        std::vector<part> cut(char* data, std::size_t bytes, std::uintptr_t base, std::size_t boundary) const;
        std::shared_ptr<const ticket> queue(std::shared_ptr<ticket> owner, std::vector<part> parts);
        void worker();

        bool m_huge = false;
        mutable std::mutex m_mutex;
        std::condition_variable m_queued;
        std::deque<part> m_parts;  // under m_mutex
        bool m_stop = false;       // under m_mutex
        std::size_t m_done = 0;    // under m_mutex
        std::vector<std::thread> m_threads;
    };
}
