#include "host_pages.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

#if defined(__linux__) && !defined(MADV_POPULATE_WRITE)
#define MADV_POPULATE_WRITE 23  // Linux 5.14's value; older headers lack the name
#endif

namespace xcuda
{
    namespace
    {
        constexpr std::uint64_t pagemap_present = std::uint64_t(1) << 63;
        constexpr std::uint64_t pagemap_swapped = std::uint64_t(1) << 62;
        // /proc/self/maps has a line per mapping, some thousands in a process with large libraries loaded;
        // more than this many lines is not a maps file.
        constexpr std::size_t max_map_lines = 1u << 20;
        // Pagemap entries read at a time (512 KiB of them).
        constexpr std::size_t pagemap_block = 1u << 16;

#if defined(__linux__)
        // One line of /proc/self/maps: "start-end perms offset dev inode   path".
        struct map_line
        {
            std::uintptr_t start = 0;
            std::uintptr_t end = 0;
            bool private_anonymous = false;
        };

        bool parse_map_line(const char* line, map_line& parsed)
        {
            unsigned long start = 0;
            unsigned long end = 0;
            char perms[8] = {};
            unsigned long long offset = 0;
            unsigned major = 0;
            unsigned minor = 0;
            unsigned long long inode = 0;
            int consumed = 0;
            if (std::sscanf(line, "%lx-%lx %7s %llx %x:%x %llu%n", &start, &end, perms, &offset, &major, &minor, &inode,
                            &consumed) != 7 || end <= start)
            {
                return false;
            }
            const char* path = line + consumed;
            while (*path == ' ' || *path == '\t')
            {
                ++path;
            }
            std::size_t length = std::strcspn(path, "\n");
            // No file: an unnamed mapping, or one the kernel names in brackets ([heap], [stack],
            // [anon:name]) but for the kernel's own pages ([vdso], [vvar], [vsyscall]).
            bool anonymous = inode == 0 && major == 0 && minor == 0 &&
                             (length == 0 || (path[0] == '[' && std::strncmp(path, "[vdso]", 6) != 0 &&
                                              std::strncmp(path, "[vvar", 5) != 0 &&
                                              std::strncmp(path, "[vsyscall]", 10) != 0));
            parsed.start = start;
            parsed.end = end;
            parsed.private_anonymous = anonymous && perms[0] == 'r' && perms[3] == 'p';
            return true;
        }
#endif
    }

    std::size_t host_pages::page_size() noexcept
    {
#if defined(__linux__)
        long size = ::sysconf(_SC_PAGESIZE);
        return size > 0 ? static_cast<std::size_t>(size) : 4096;
#else
        return 4096;
#endif
    }

    bool host_pages::private_anonymous(const void* data, std::size_t bytes)
    {
#if defined(__linux__)
        if (bytes == 0)
        {
            return false;
        }
        std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(data);
        std::uintptr_t end = begin + bytes;
        if (end < begin)
        {
            return false;
        }
        std::FILE* maps = std::fopen("/proc/self/maps", "re");
        if (!maps)
        {
            return false;
        }
        // The lines come in address order: walk them until the range is covered by mappings that qualify,
        // or a gap or one that does not is found.
        char* line = nullptr;
        std::size_t capacity = 0;
        std::uintptr_t covered = begin;
        bool answer = false;
        for (std::size_t count = 0; count < max_map_lines && ::getline(&line, &capacity, maps) > 0; ++count)
        {
            map_line parsed;
            if (!parse_map_line(line, parsed))
            {
                break;  // not what a maps file holds: cannot be told
            }
            if (parsed.end <= covered)
            {
                continue;
            }
            if (parsed.start > covered || !parsed.private_anonymous)
            {
                break;  // a gap, or memory whose untouched pages are not known to be zero
            }
            covered = parsed.end;
            if (covered >= end)
            {
                answer = true;
                break;
            }
        }
        std::free(line);
        std::fclose(maps);
        return answer;
#else
        (void)data;
        (void)bytes;
        return false;
#endif
    }

    std::vector<bool> host_pages::untouched_pieces(const void* data, std::size_t bytes, std::size_t piece)
    {
        std::vector<bool> pieces;
#if defined(__linux__)
        const std::size_t page = page_size();
        if (bytes == 0 || piece == 0 || piece % page != 0 || !private_anonymous(data, bytes))
        {
            return pieces;
        }
        int pagemap = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
        if (pagemap < 0)
        {
            return pieces;
        }
        const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(data);
        const std::uintptr_t end = begin + bytes;
        const std::uintptr_t first_page = begin / page;
        const std::uintptr_t last_page = (end - 1) / page;  // inclusive
        pieces.assign((bytes + piece - 1) / piece, true);
        std::vector<std::uint64_t> entries(std::min<std::size_t>(pagemap_block, last_page - first_page + 1));
        for (std::uintptr_t at = first_page; at <= last_page;)
        {
            std::size_t count = std::min<std::size_t>(entries.size(), last_page - at + 1);
            ssize_t read = ::pread(pagemap, entries.data(), count * sizeof(std::uint64_t),
                                   static_cast<off_t>(at * sizeof(std::uint64_t)));
            if (read != static_cast<ssize_t>(count * sizeof(std::uint64_t)))
            {
                pieces.clear();  // cannot be told
                break;
            }
            for (std::size_t i = 0; i < count; ++i)
            {
                if ((entries[i] & (pagemap_present | pagemap_swapped)) == 0)
                {
                    continue;  // never touched (or its contents dropped, which reads as zero too)
                }
                // A page with something in it: every piece that has bytes in it is read.
                std::uintptr_t low = std::max<std::uintptr_t>((at + i) * page, begin) - begin;
                std::uintptr_t high = std::min<std::uintptr_t>((at + i + 1) * page, end) - begin;
                for (std::size_t k = low / piece; k <= (high - 1) / piece; ++k)
                {
                    pieces[k] = false;
                }
            }
            at += count;
        }
        ::close(pagemap);
#else
        (void)data;
        (void)bytes;
        (void)piece;
#endif
        return pieces;
    }

    bool host_pages::populate_for_write(void* data, std::size_t bytes, bool huge) noexcept
    {
#if defined(__linux__)
        const std::uintptr_t page = page_size();
        std::uintptr_t begin = (reinterpret_cast<std::uintptr_t>(data) + page - 1) & ~(page - 1);
        std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~(page - 1);
        if (end <= begin)
        {
            return true;  // no whole page: nothing to do
        }
#if defined(MADV_HUGEPAGE)
        if (huge)
        {
            const std::uintptr_t huge_page = std::uintptr_t(2) << 20;
            std::uintptr_t low = (begin + huge_page - 1) & ~(huge_page - 1);
            std::uintptr_t high = end & ~(huge_page - 1);
            if (high > low)
            {
                ::madvise(reinterpret_cast<void*>(low), high - low, MADV_HUGEPAGE);  // an error changes nothing
            }
        }
#else
        (void)huge;
#endif
        return ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) == 0;
#else
        (void)data;
        (void)bytes;
        (void)huge;
        return false;
#endif
    }
}
