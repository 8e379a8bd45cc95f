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
// Pieces of 256 KiB are claimed in address order from the copy's start (the last one shorter), or, for
// a destination never written before (`order::across_pages`), lie on the destination's 256 KiB
// boundaries and are claimed across its 2 MiB pages in turn: claim k takes the (k / pages)-th piece of
// page k % pages. Such a destination (np.empty, np.zeros) takes a page fault on first touch, and with
// transparent huge pages one fault zeroes a whole 2 MiB page while every other thread that touches it
// waits: claims in address order put all the threads on one page at a time (64 MiB copied out in 7.7 ms
// on the lent H200), claims across the pages fault different pages side by side (2.5 ms with
// allow_huge_pages below). Into memory already written, address order is kept: across the pages
// measured slower there in the product (staged copies 1.10x in alternating processes).
//
// copy_unless_zero: the same copy for a source that may be all zero bytes (the tutorial's
// `out = np.zeros_like(x)`, copied in before the launch because the kernel may read it): each piece is
// read before it is written, and one found all zero is not written; when every piece is zero nothing is
// written and the caller sets the device memory instead of moving the bytes over the bus. The scan stops
// at a piece's first non-zero 64 bytes, so other data costs a few loads a piece; pieces the caller knows
// to be zero (pages never touched: host_pages) are not read at all.
//
// Stores: a copy is made with the CPU's ordinary stores (`stores::cached`, memcpy), or with non-temporal
// stores (`stores::streaming`: SSE2's movntdq on x86-64, which write whole lines to memory without first
// reading them into the cache and without evicting what the cache holds; memcpy elsewhere). A staging
// buffer is read next by the DMA engine and a copy-back destination by whoever asked for it much later, so
// neither needs its lines in the cache: streaming saves the read-for-ownership of every destination line
// (a third of a cached copy's memory traffic) and leaves the source's lines, often just written by the
// caller (`x.copy()`), in the cache. Which is faster depends on the host (its memory bandwidth, whether
// the DMA reads from the cache): transfer_settings::stream_to_device and stream_to_host choose, measured by staging_ab.py.
//
// Pure (no driver), so its rules are tested without a GPU (tests/cpp/runtime/test_copy_pool.cpp).
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
        // Pieces of this size (the last one shorter; across pages, the first too); copies below min_parallel
        // bytes the caller makes alone.
        static constexpr std::size_t piece_bytes = 256u << 10;
        static constexpr std::size_t page_bytes = 2u << 20;  // the claims' turn: one piece of each such page
        static constexpr std::size_t pieces_per_page = page_bytes / piece_bytes;
        static constexpr std::size_t min_parallel = 1u << 20;

        enum class stores
        {
            cached,     // memcpy
            streaming,  // non-temporal stores where the CPU has them (see above), fenced before the piece counts
        };
        // memcpy(destination, source, bytes) with the stores chosen; every byte is written once, with
        // streaming stores ordered before anything this thread writes afterwards (an sfence).
        static void copy_bytes(void* destination, const void* source, std::size_t bytes, stores how) noexcept;

        enum class order
        {
            by_address,    // memory already written: claims in address order
            across_pages,  // a destination never written: one piece of each 2 MiB page in turn
        };
        // How a copy of `bytes` into `destination` is cut: slots numbered in claim order, some empty
        // (across the pages, the pages at either end hold fewer pieces).
        struct layout
        {
            order claims = order::by_address;
            std::uintptr_t destination = 0;
            std::size_t bytes = 0;
            std::size_t first = 0;      // across pages: the first piece's number, from the first page's start
            std::size_t last = 0;       // across pages: the last piece's
            std::uint32_t pages = 0;    // 2 MiB pages of the destination the copy touches
            std::uint32_t slots = 0;    // across pages: pages x pieces_per_page; by address: pieces
            std::uint32_t pieces = 0;   // the non-empty slots
        };
        static layout cut(const void* destination, std::size_t bytes, order claims) noexcept;
        // The bytes [offset, offset + length) of the copy that slot `slot` holds; false for an empty slot.
        static bool slot_range(const layout& cut, std::uint32_t slot, std::size_t& offset, std::size_t& length) noexcept;

        // Whether [destination, destination + bytes) looks never written (np.empty, np.zeros: pages not
        // yet there, each faulting on the copy's first write): none of five pages spread over it is
        // resident (mincore). Memory mincore cannot tell about counts as written.
        static bool never_written(const void* destination, std::size_t bytes) noexcept;
        // For a destination never written: transparent huge pages allowed on its whole 2 MiB pages
        // (MADV_HUGEPAGE; the kernel's default "madvise" mode grants them only on request), so that its
        // first-touch faults are one per 2 MiB page, which the claims across the pages take side by side:
        // 64 MiB copied out of the staging buffers into a new np.empty in 7.6-7.7 ms before, 4.9-5.2 ms
        // after (staging_ab.py, the lent H200). Only the flag changes, never the data; the kernel ignores it
        // where huge pages are off, and an error (memory that is not anonymous, an old kernel) is
        // ignored. Memory already written is not given it (khugepaged would collapse it behind the copy).
        static void allow_huge_pages(void* destination, std::size_t bytes) noexcept;
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
        void copy(void* destination, const void* source, std::size_t bytes, order claims = order::by_address,
                  stores how = stores::cached);
        // True when every byte of source is zero: then nothing of destination was written. Otherwise
        // destination holds the whole source (as copy()) and it returns false. known_zero, when given,
        // says for each piece of piece_bytes from source (the last one shorter) whether it is known to
        // read as zero (host_pages::untouched_pieces): such a piece is taken as zero without being read.
        bool copy_unless_zero(void* destination, const void* source, std::size_t bytes,
                              const std::vector<bool>* known_zero = nullptr, stores how = stores::cached);
        // Whether [data, data + bytes) holds only zero bytes (reads up to the first 64 bytes that are not).
        static bool all_zero(const void* data, std::size_t bytes) noexcept;
        // How many pieces the caller itself copied, over all copies (for tests and counters).
        std::uint64_t pieces_by_caller() const noexcept { return m_by_caller.load(std::memory_order_relaxed); }
        std::uint64_t pieces_by_threads() const noexcept { return m_by_threads.load(std::memory_order_relaxed); }

    private:
        struct job
        {
            char* destination = nullptr;
            const char* source = nullptr;
            layout parts;
            stores how = stores::cached;
            bool skip_zero = false;  // copy_unless_zero: a piece found all zero is marked, not written
            const std::vector<bool>* known_zero = nullptr;  // copy_unless_zero: pieces zero without a read
        };
        // Posts the job to the threads, copies with them, returns when every piece is done.
        void run(const job& work);
        // Claims the next slot of job number `number`; false when none of it is left.
        bool claim(std::uint32_t number, const job& work, std::uint32_t& slot) noexcept;
        // Copies the slot's piece; false for an empty slot.
        bool copy_slot(const job& work, std::uint32_t slot) noexcept;
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
        std::atomic<std::uint64_t> m_next{0};     // job number << 32 | next slot to claim
        std::atomic<std::uint32_t> m_done{0};     // pieces of the current job copied
        std::atomic<std::uint64_t> m_by_caller{0};
        std::atomic<std::uint64_t> m_by_threads{0};
        std::atomic<bool> m_stop{false};          // written under m_mutex
        std::vector<std::atomic<bool>> m_zero_slot;  // copy_unless_zero: slots found all zero (set by the caller)
        std::atomic<std::uint32_t> m_zero_pieces{0};
    };
}
