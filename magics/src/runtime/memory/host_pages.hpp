#pragma once
// What the operating system says of a range of this process' memory, found out without touching it, and
// the one change staging makes to such a range: its pages faulted in for writing ahead of a copy.
//
// Why: the tutorial's `out = np.zeros_like(x)` is calloc'd memory the kernel has not mapped yet (calloc
// of 64 MiB is a fresh anonymous mmap). A launch copies it in, as the kernel may read it, and back. Read,
// each of its 4 KiB pages takes a fault that maps the zero page (16,384 faults for 64 MiB: about 1 ms of
// the copy threads on the lent H200), and written back, a second fault each. A page never touched in
// private anonymous memory reads as zero bytes, so
//   - untouched_pieces() tells which pieces of a range are such pages, from /proc/self/pagemap (neither
//     present nor swapped) and /proc/self/maps (private, no file behind it): the staging sets those
//     pieces to zero on the device instead of reading them (host_staging, copy_pool::copy_unless_zero);
//   - populate_for_write() faults a range's pages in for writing (MADV_POPULATE_WRITE, Linux 5.14+),
//     which never changes the bytes: page_preparer runs it on the destinations of a launch's copies back
//     while the copies in and the kernel run, so the copy back writes pages that are already there.
// Anything that cannot be told (no /proc, a file mapping, a shared mapping, swapped pages, an error) is
// "touched": it is read as before, and so is every piece with a byte in a page that holds anything (the
// allocator's header in the first page of a calloc'd block).
//
// Pure (no driver): tests/cpp/runtime/test_copy_pool.cpp tests it on mappings of its own. Threading: no state;
// callable from any thread.

#include <cstddef>
#include <vector>

namespace xcuda
{
    class host_pages
    {
    public:
        // The page the answers are in (sysconf(_SC_PAGESIZE), 4096 where it cannot be read).
        static std::size_t page_size() noexcept;

        // For each piece of `piece` bytes of [data, data + bytes), counted from data (the last one shorter),
        // whether every byte of it lies in pages never touched of private anonymous memory, so that it reads
        // as zero without being read. Empty when nothing of the range can be told (not Linux, /proc not
        // readable, some of the range not private anonymous memory); reads /proc/self/maps and one pagemap
        // entry per page. piece must be a positive multiple of page_size().
        static std::vector<bool> untouched_pieces(const void* data, std::size_t bytes, std::size_t piece);

        // Whether all of [data, data + bytes) lies in private anonymous mappings (/proc/self/maps: a 'p'
        // mapping with no file, as malloc, calloc, numpy and Python's allocators give): there a page never
        // touched reads as zero. False when it cannot be told.
        static bool private_anonymous(const void* data, std::size_t bytes);

        // Faults the whole pages inside [data, data + bytes) in for writing, their bytes unchanged
        // (MADV_POPULATE_WRITE); with huge, transparent huge pages are allowed on the whole 2 MiB pages
        // first (MADV_HUGEPAGE). False when the kernel cannot (before Linux 5.14: EINVAL; memory gone:
        // ENOMEM), which changes nothing.
        static bool populate_for_write(void* data, std::size_t bytes, bool huge) noexcept;
    };
}
