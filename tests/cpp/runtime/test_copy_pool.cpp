// Unit tests of the host side of a staged copy: copy_pool (the memcpy shared by the caller and its copy
// threads: pieces, claim orders, the zero scan, never-written destinations and huge pages), host_pages
// (pages never touched, found without touching them; faulting pages in for writing) and page_preparer
// (the threads that fault a launch's outputs in, or read them for zeros, ahead of its copies). Pure: no
// driver, no GPU. The registration cache and the transfer settings are in test_transfers.cpp.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "copy_pool.hpp"
#include "host_pages.hpp"
#include "page_preparer.hpp"

namespace xcuda
{
    // ---- copy_pool: the staging's memcpy, shared by the caller and its copy threads ---------------------

    namespace
    {
        // No watching (the threads sleep after each copy), the session's default, and longer than any
        // gap between these tests' copies (the threads never sleep between them).
        const std::chrono::microseconds spins[] = {std::chrono::microseconds(0), std::chrono::microseconds(200),
                                                   std::chrono::microseconds(20000)};

        std::vector<unsigned char> pattern(std::size_t bytes, unsigned seed)
        {
            std::vector<unsigned char> data(bytes);
            for (std::size_t i = 0; i < bytes; ++i)
            {
                data[i] = static_cast<unsigned char>((i * 131 + seed * 7 + (i >> 12)) & 0xff);
            }
            return data;
        }
    }

    TEST(CopyPool, CopiesEverySizeExactlyWithAnyNumberOfParticipants)
    {
        const std::size_t piece = copy_pool::piece_bytes;
        const std::size_t sizes[] = {0, 1, 4095, piece - 1, piece, piece + 1, copy_pool::min_parallel - 1,
                                     copy_pool::min_parallel, copy_pool::min_parallel + 1, 7 * piece + 13,
                                     (8u << 20) + 3};
        for (std::size_t participants : {1u, 2u, 3u, 8u})
        for (std::chrono::microseconds spin : spins)
        {
            copy_pool pool(participants, spin);
            EXPECT_EQ(pool.participants(), participants);
            for (std::size_t bytes : sizes)
            {
                std::vector<unsigned char> source = pattern(bytes + 1, static_cast<unsigned>(bytes));
                std::vector<unsigned char> destination(bytes + 2, 0xee);
                // Unaligned on both sides, and the byte after the copy must stay as it was.
                pool.copy(destination.data() + 1, source.data() + 1, bytes);
                EXPECT_EQ(destination[0], 0xee) << bytes << " bytes, " << participants << " participants";
                EXPECT_EQ(destination[bytes + 1], 0xee) << bytes << " bytes, " << participants << " participants";
                EXPECT_EQ(std::memcmp(destination.data() + 1, source.data() + 1, bytes), 0)
                    << bytes << " bytes, " << participants << " participants";
            }
        }
    }

    TEST(CopyPool, StreamingStoresCopyEverySizeAndAlignmentExactly)
    {
        // Every head (the destination's offset in its line), source offset and tail around the streamed
        // whole lines, with ordinary and streaming stores; the bytes either side stay as they were.
        const std::size_t sizes[] = {0, 1, 63, 64, 255, 256, 257, 1000, 4096 + 17, copy_pool::piece_bytes + 5};
        for (copy_pool::stores how : {copy_pool::stores::cached, copy_pool::stores::streaming})
        for (std::size_t bytes : sizes)
        for (std::size_t to : {0u, 1u, 15u, 16u, 33u, 63u})
        for (std::size_t from : {0u, 7u, 48u})
        {
            std::vector<unsigned char> source = pattern(bytes + 64, static_cast<unsigned>(bytes + to));
            alignas(64) static unsigned char destination[copy_pool::piece_bytes + 256];
            std::memset(destination, 0xee, sizeof destination);
            copy_pool::copy_bytes(destination + 64 + to, source.data() + from, bytes, how);
            const char* name = how == copy_pool::stores::streaming ? "streaming" : "cached";
            EXPECT_EQ(std::memcmp(destination + 64 + to, source.data() + from, bytes), 0)
                << name << ", " << bytes << " bytes to +" << to << " from +" << from;
            EXPECT_EQ(destination[64 + to - 1], 0xee) << name << ", the byte before";
            EXPECT_EQ(destination[64 + to + bytes], 0xee) << name << ", the byte after";
        }
        // And through the pool's pieces, shared by the caller and its threads, both ways of claiming.
        copy_pool pool(4, std::chrono::microseconds(200));
        const std::size_t bytes = 3 * copy_pool::page_bytes + 4099;
        std::vector<unsigned char> source = pattern(bytes, 5);
        for (copy_pool::order claims : {copy_pool::order::by_address, copy_pool::order::across_pages})
        {
            std::vector<unsigned char> destination(bytes + 1, 0xee);
            pool.copy(destination.data() + 1, source.data(), bytes, claims, copy_pool::stores::streaming);
            EXPECT_EQ(std::memcmp(destination.data() + 1, source.data(), bytes), 0);
            EXPECT_EQ(destination[0], 0xee);
            std::vector<unsigned char> staged(bytes, 0xee);
            EXPECT_FALSE(pool.copy_unless_zero(staged.data(), source.data(), bytes, nullptr,
                                               copy_pool::stores::streaming));
            EXPECT_EQ(std::memcmp(staged.data(), source.data(), bytes), 0);
        }
    }

    TEST(CopyPool, AllZeroFindsAnyNonZeroByte)
    {
        std::vector<unsigned char> data(1001, 0);  // one byte past the longest range
        for (std::size_t start : {0u, 1u, 7u, 63u})
        for (std::size_t bytes : {0u, 1u, 63u, 64u, 65u, 127u, 128u, 500u, 1000u - 63u})
        {
            ASSERT_LT(start + bytes, data.size());
            EXPECT_TRUE(copy_pool::all_zero(data.data() + start, bytes)) << start << " + " << bytes;
            for (std::size_t at = 0; at < bytes; ++at)
            {
                data[start + at] = 0x80;
                EXPECT_FALSE(copy_pool::all_zero(data.data() + start, bytes)) << "byte " << at << " of " << start
                                                                                << " + " << bytes;
                data[start + at] = 0;
            }
            // A byte just outside the range is not read as part of it.
            if (start > 0)
            {
                data[start - 1] = 1;
            }
            data[start + bytes] = 1;
            EXPECT_TRUE(copy_pool::all_zero(data.data() + start, bytes)) << start << " + " << bytes;
            std::fill(data.begin(), data.end(), 0);
        }
    }

    TEST(CopyPool, CopyUnlessZeroWritesNothingForZerosAndEverythingOtherwise)
    {
        const std::size_t piece = copy_pool::piece_bytes;
        const std::size_t sizes[] = {1, piece - 1, copy_pool::min_parallel - 1, copy_pool::min_parallel + 1,
                                     7 * piece + 13, (8u << 20) + 3};
        for (std::size_t participants : {1u, 3u, 8u})
        for (std::chrono::microseconds spin : spins)
        {
            copy_pool pool(participants, spin);
            for (std::size_t bytes : sizes)
            {
                SCOPED_TRACE(std::to_string(participants) + " participants, " + std::to_string(bytes) + " bytes");
                std::vector<unsigned char> source(bytes, 0);
                std::vector<unsigned char> destination(bytes, 0xab);
                EXPECT_TRUE(pool.copy_unless_zero(destination.data(), source.data(), bytes));
                EXPECT_TRUE(std::all_of(destination.begin(), destination.end(), [](unsigned char c) { return c == 0xab; }))
                    << "a zero source wrote its destination";
                // One byte of data in the middle (and, next, in the last byte): every byte is copied, the
                // zero pieces as zeros over what the destination held.
                for (std::size_t at : {bytes / 2, bytes - 1})
                {
                    std::fill(destination.begin(), destination.end(), 0xab);
                    source[at] = 7;
                    EXPECT_FALSE(pool.copy_unless_zero(destination.data(), source.data(), bytes));
                    EXPECT_TRUE(destination == source) << "data at byte " << at;
                    source[at] = 0;
                }
            }
        }
    }

    TEST(CopyPool, PiecesLieOnTheDestinationsBoundariesAndCoverTheCopyOnce)
    {
        const std::uintptr_t page = copy_pool::page_bytes;
        const std::size_t piece = copy_pool::piece_bytes;
        // Destinations at a 2 MiB page's start, just after it, mid-piece, and just before the next page.
        for (copy_pool::order claims : {copy_pool::order::by_address, copy_pool::order::across_pages})
        for (std::uintptr_t start : {64 * page, 64 * page + 1, 64 * page + 4096 + 16, 65 * page - 1, 65 * page - piece})
        for (std::size_t bytes : {std::size_t(1), piece - 1, piece + 1, std::size_t(page), page + 3,
                                  std::size_t(8u << 20), (8u << 20) + piece / 2, std::size_t(5 * page - 7)})
        {
            SCOPED_TRACE(std::string(claims == copy_pool::order::by_address ? "by address" : "across pages") +
                         ", destination page offset " + std::to_string(start % page) + ", " + std::to_string(bytes) +
                         " bytes");
            copy_pool::layout cut = copy_pool::cut(reinterpret_cast<void*>(start), bytes, claims);
            ASSERT_EQ(cut.slots, claims == copy_pool::order::by_address ? cut.pieces
                                                                         : cut.pages * copy_pool::pieces_per_page);
            EXPECT_EQ(cut.pages, (start + bytes - 1) / page - start / page + 1);
            std::vector<std::pair<std::size_t, std::size_t>> ranges;
            for (std::uint32_t slot = 0; slot < cut.slots + 3; ++slot)
            {
                std::size_t offset = 0;
                std::size_t length = 0;
                if (!copy_pool::slot_range(cut, slot, offset, length))
                {
                    continue;
                }
                ASSERT_LT(slot, cut.slots);
                ASSERT_GT(length, 0u);
                if (claims == copy_pool::order::across_pages)
                {
                    // Within one 256 KiB block of the destination's addresses.
                    EXPECT_EQ((start + offset) / piece, (start + offset + length - 1) / piece) << "slot " << slot;
                }
                else
                {
                    // 256 KiB from the copy's start, in order (as before the order across pages existed).
                    EXPECT_EQ(offset, slot * piece) << "slot " << slot;
                }
                ranges.emplace_back(offset, length);
            }
            EXPECT_EQ(ranges.size(), cut.pieces);
            std::sort(ranges.begin(), ranges.end());
            std::size_t covered = 0;
            for (const auto& range : ranges)
            {
                ASSERT_EQ(range.first, covered) << "a gap or an overlap";
                covered += range.second;
            }
            EXPECT_EQ(covered, bytes);
        }
    }

    TEST(CopyPool, ClaimsTakeOnePieceOfEachPageInTurn)
    {
        // 8 MiB into a page-aligned destination: four pages; the first four claims start the four pages,
        // the next four take each page's second piece.
        const std::uintptr_t page = copy_pool::page_bytes;
        copy_pool::layout cut = copy_pool::cut(reinterpret_cast<void*>(100 * page), 4 * page,
                                               copy_pool::order::across_pages);
        ASSERT_EQ(cut.pages, 4u);
        const std::size_t expected[] = {0, page, 2 * page, 3 * page, copy_pool::piece_bytes,
                                        page + copy_pool::piece_bytes, 2 * page + copy_pool::piece_bytes};
        for (std::uint32_t slot = 0; slot < 7; ++slot)
        {
            std::size_t offset = 0;
            std::size_t length = 0;
            ASSERT_TRUE(copy_pool::slot_range(cut, slot, offset, length));
            EXPECT_EQ(offset, expected[slot]) << "slot " << slot;
            EXPECT_EQ(length, copy_pool::piece_bytes);
        }
        // Unaligned: the first claims still fall on different pages (the first page's piece is its first).
        copy_pool::layout shifted = copy_pool::cut(reinterpret_cast<void*>(100 * page + 12345), 4 * page,
                                                   copy_pool::order::across_pages);
        ASSERT_EQ(shifted.pages, 5u);
        std::vector<std::uintptr_t> pages;
        for (std::uint32_t slot = 0; slot < shifted.pages; ++slot)
        {
            std::size_t offset = 0;
            std::size_t length = 0;
            if (copy_pool::slot_range(shifted, slot, offset, length))
            {
                pages.push_back((100 * page + 12345 + offset) / page);
            }
        }
        std::sort(pages.begin(), pages.end());
        EXPECT_EQ(std::unique(pages.begin(), pages.end()), pages.end()) << "two early claims on one page";
        EXPECT_GE(pages.size(), 4u);
        // By address, the claims go piece after piece from the copy's start.
        copy_pool::layout in_order = copy_pool::cut(reinterpret_cast<void*>(100 * page + 12345), 4 * page,
                                                    copy_pool::order::by_address);
        std::size_t next = 0;
        for (std::uint32_t slot = 0; slot < in_order.slots; ++slot)
        {
            std::size_t offset = 0;
            std::size_t length = 0;
            ASSERT_TRUE(copy_pool::slot_range(in_order, slot, offset, length)) << "slot " << slot;
            EXPECT_EQ(offset, next) << "slot " << slot;
            next = offset + length;
        }
        EXPECT_EQ(next, 4 * page);
        EXPECT_EQ(in_order.slots, 32u);
    }

    TEST(CopyPool, CopiesIntoEveryPositionOfAPage)
    {
        // Real copies whose first and last pages are partial, into a 2 MiB-aligned buffer.
        const std::size_t page = copy_pool::page_bytes;
        const std::size_t bytes = 5 * page + 3;
        void* raw = std::aligned_alloc(page, 8 * page);
        ASSERT_NE(raw, nullptr);
        std::unique_ptr<void, void (*)(void*)> owned(raw, std::free);
        unsigned char* aligned = static_cast<unsigned char*>(raw);
        std::vector<unsigned char> source = pattern(bytes, 11);
        copy_pool pool(8, std::chrono::microseconds(200));
        for (copy_pool::order claims : {copy_pool::order::by_address, copy_pool::order::across_pages})
        for (std::size_t shift : {std::size_t(0), std::size_t(1), copy_pool::piece_bytes - 1, page - 4096, page - 1})
        {
            SCOPED_TRACE(claims == copy_pool::order::by_address ? "by address" : "across pages");
            std::memset(aligned, 0xee, 8 * page);
            pool.copy(aligned + shift, source.data(), bytes, claims);
            EXPECT_EQ(std::memcmp(aligned + shift, source.data(), bytes), 0) << "shift " << shift;
            EXPECT_EQ(aligned[shift + bytes], 0xee) << "shift " << shift;
            if (shift)
            {
                EXPECT_EQ(aligned[shift - 1], 0xee) << "shift " << shift;
            }
        }
    }

    namespace
    {
        // The VmFlags line of /proc/self/smaps for the mapping that holds `address` ("" if none).
        std::string mapping_flags(const void* address)
        {
            std::FILE* smaps = std::fopen("/proc/self/smaps", "r");
            if (!smaps)
            {
                return "";
            }
            char line[512];
            bool inside = false;
            std::string flags;
            auto at = reinterpret_cast<std::uintptr_t>(address);
            while (std::fgets(line, sizeof line, smaps))
            {
                unsigned long begin = 0;
                unsigned long end = 0;
                if (std::sscanf(line, "%lx-%lx ", &begin, &end) == 2 && std::strchr(line, ':') != line)
                {
                    inside = begin <= at && at < end;
                }
                else if (inside && std::strncmp(line, "VmFlags:", 8) == 0)
                {
                    flags = line;
                    break;
                }
            }
            std::fclose(smaps);
            return flags;
        }

        struct mapping
        {
            explicit mapping(std::size_t bytes) : bytes(bytes)
            {
                void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                data = p == MAP_FAILED ? nullptr : static_cast<unsigned char*>(p);
            }
            ~mapping()
            {
                if (data)
                {
                    ::munmap(data, bytes);
                }
            }
            std::size_t bytes;
            unsigned char* data = nullptr;
        };
    }

    TEST(CopyPool, NeverWrittenMemoryIsToldFromWrittenMemory)
    {
        const std::size_t bytes = 16u << 20;
        mapping fresh(bytes);
        ASSERT_NE(fresh.data, nullptr);
        EXPECT_TRUE(copy_pool::never_written(fresh.data + 100, bytes - 200));
        // Written at the start, around the middle (a megabyte: some page near it is sampled) or at the end.
        mapping started(bytes);
        started.data[0] = 1;
        EXPECT_FALSE(copy_pool::never_written(started.data, bytes));
        mapping middle(bytes);
        std::memset(middle.data + bytes / 2 - (512u << 10), 1, 1u << 20);
        EXPECT_FALSE(copy_pool::never_written(middle.data, bytes));
        mapping ended(bytes);
        ended.data[bytes - 1] = 1;
        EXPECT_FALSE(copy_pool::never_written(ended.data, bytes));
        // Written all over (what np.zeros_like gives), a range inside one page, and memory no mapping holds.
        std::vector<unsigned char> written(bytes, 1);
        EXPECT_FALSE(copy_pool::never_written(written.data(), bytes));
        EXPECT_FALSE(copy_pool::never_written(fresh.data + 10, 100));
        EXPECT_FALSE(copy_pool::never_written(reinterpret_cast<void*>(std::uintptr_t(4096)), bytes));
        // The test itself looked without writing: still never written.
        EXPECT_TRUE(copy_pool::never_written(fresh.data, bytes));
    }

    TEST(CopyPool, HugePagesAreAllowedOnTheWholePagesOfANeverWrittenDestination)
    {
        std::FILE* thp = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
        if (!thp)
        {
            GTEST_SKIP() << "this kernel has no transparent huge pages (no /sys/kernel/mm/transparent_hugepage)";
        }
        std::fclose(thp);
        const std::size_t page = copy_pool::page_bytes;
        mapping fresh(8 * page);
        ASSERT_NE(fresh.data, nullptr);
        unsigned char* aligned = reinterpret_cast<unsigned char*>(
            (reinterpret_cast<std::uintptr_t>(fresh.data) + page - 1) & ~(page - 1));
        EXPECT_EQ(mapping_flags(aligned + page).find(" hg"), std::string::npos) << mapping_flags(aligned + page);
        // From 100 bytes into one 2 MiB page to 100 bytes into the fourth after it: the three whole pages
        // between get the flag, the partial ones at either end do not.
        copy_pool::allow_huge_pages(aligned + 100, 4 * page);
        EXPECT_NE(mapping_flags(aligned + page).find(" hg"), std::string::npos) << mapping_flags(aligned + page);
        EXPECT_NE(mapping_flags(aligned + 3 * page + 1).find(" hg"), std::string::npos);
        EXPECT_EQ(mapping_flags(aligned).find(" hg"), std::string::npos) << mapping_flags(aligned);
        EXPECT_EQ(mapping_flags(aligned + 4 * page).find(" hg"), std::string::npos);
        // The data is untouched and reads as zeros.
        EXPECT_TRUE(copy_pool::never_written(aligned + page, page));
        EXPECT_EQ(aligned[page + 5], 0u);
    }

    // ---- host_pages and page_preparer: memory never touched, and faulting destinations in ahead -------

    namespace
    {
        // Whether the page holding `address` is in memory (mincore), without touching it.
        bool resident(const void* address)
        {
            const std::uintptr_t page = host_pages::page_size();
            unsigned char in = 0;
            void* start = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(address) & ~(page - 1));
            return ::mincore(start, page, &in) == 0 && (in & 1);
        }
    }

    TEST(HostPages, PiecesInPagesNeverTouchedAreKnownZeroAndEveryOtherPieceIsRead)
    {
        const std::size_t piece = copy_pool::piece_bytes;
        const std::size_t bytes = 16 * piece;
        mapping fresh(bytes + 2 * piece);
        ASSERT_NE(fresh.data, nullptr);
        unsigned char* data = fresh.data + 100;  // not on a page boundary, like calloc's data after its header
        std::vector<bool> pieces = host_pages::untouched_pieces(data, bytes, piece);
        ASSERT_EQ(pieces.size(), 16u) << "a private anonymous mapping can be told";
        EXPECT_TRUE(std::all_of(pieces.begin(), pieces.end(), [](bool b) { return b; }));
        // A byte written in a page of piece 5, one read in a page of piece 9 (the zero page mapped: present),
        // one written in the page the first piece shares with the bytes before the range: those pieces are
        // read, no other.
        data[5 * piece + 2 * host_pages::page_size()] = 1;
        volatile unsigned char sink = data[9 * piece + 3 * host_pages::page_size()];
        (void)sink;
        fresh.data[0] = 1;
        pieces = host_pages::untouched_pieces(data, bytes, piece);
        ASSERT_EQ(pieces.size(), 16u);
        for (std::size_t k = 0; k < pieces.size(); ++k)
        {
            EXPECT_EQ(pieces[k], k != 0 && k != 5 && k != 9) << "piece " << k;
        }
        // The last piece shorter; a byte written in the page the range ends in, past its end, counts too.
        mapping tail(4 * piece);
        ASSERT_NE(tail.data, nullptr);
        pieces = host_pages::untouched_pieces(tail.data, 2 * piece + 10, piece);
        ASSERT_EQ(pieces.size(), 3u);
        EXPECT_TRUE(pieces[2]);
        tail.data[2 * piece + 100] = 1;
        pieces = host_pages::untouched_pieces(tail.data, 2 * piece + 10, piece);
        EXPECT_TRUE(pieces[0] && pieces[1] && !pieces[2]);
        // Looking touched nothing.
        EXPECT_FALSE(resident(fresh.data + 12 * piece));
        // A piece size that is not a whole number of pages, and an empty range: nothing can be told.
        EXPECT_TRUE(host_pages::untouched_pieces(data, bytes, piece + 1).empty());
        EXPECT_TRUE(host_pages::untouched_pieces(data, 0, piece).empty());
    }

    TEST(HostPages, MemoryWithAFileOrSharedBehindItIsNeverTakenForZero)
    {
        const std::size_t bytes = 4u << 20;
        // A file of non-zero bytes mapped privately (np.memmap's mode 'c'), its pages not yet faulted in
        // this mapping: they hold the file's bytes, not zeros.
        char path[] = "/tmp/xcuda-host-pages-XXXXXX";
        int fd = ::mkstemp(path);
        ASSERT_GE(fd, 0);
        ::unlink(path);
        std::vector<unsigned char> ones(bytes, 1);
        ASSERT_EQ(::write(fd, ones.data(), bytes), static_cast<ssize_t>(bytes));
        void* file = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        ::close(fd);
        ASSERT_NE(file, MAP_FAILED);
        EXPECT_FALSE(host_pages::private_anonymous(file, bytes));
        EXPECT_TRUE(host_pages::untouched_pieces(file, bytes, copy_pool::piece_bytes).empty());
        ::munmap(file, bytes);
        // Shared anonymous memory (another process may have written it).
        void* shared = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(shared, MAP_FAILED);
        EXPECT_FALSE(host_pages::private_anonymous(shared, bytes));
        EXPECT_TRUE(host_pages::untouched_pieces(shared, bytes, copy_pool::piece_bytes).empty());
        ::munmap(shared, bytes);
        // A range running past its mapping into memory no mapping holds.
        mapping fresh(bytes);
        ASSERT_NE(fresh.data, nullptr);
        EXPECT_TRUE(host_pages::private_anonymous(fresh.data, bytes));
        ::munmap(fresh.data + bytes / 2, bytes / 2);
        EXPECT_FALSE(host_pages::private_anonymous(fresh.data, bytes));
        fresh.bytes = bytes / 2;
    }

    TEST(HostPages, PopulatingForWriteBringsThePagesInAndKeepsTheirBytes)
    {
        const std::size_t page = host_pages::page_size();
        const std::size_t bytes = 64 * page;
        mapping fresh(bytes);
        ASSERT_NE(fresh.data, nullptr);
        fresh.data[10 * page + 7] = 42;
        if (!host_pages::populate_for_write(fresh.data + 1, bytes - 2, false))
        {
            GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE (Linux 5.14+)";
        }
        // The whole pages inside the range are in; the partial first and last are not brought in.
        EXPECT_FALSE(resident(fresh.data));
        EXPECT_TRUE(resident(fresh.data + page));
        EXPECT_TRUE(resident(fresh.data + 40 * page));
        EXPECT_FALSE(resident(fresh.data + bytes - 1));
        EXPECT_EQ(fresh.data[10 * page + 7], 42);
        EXPECT_TRUE(copy_pool::all_zero(fresh.data + page, 9 * page));
        EXPECT_TRUE(copy_pool::all_zero(fresh.data + 10 * page + 8, 20 * page));
        // Faulted in for writing: no longer untouched.
        std::vector<bool> pieces = host_pages::untouched_pieces(fresh.data, bytes, copy_pool::piece_bytes);
        ASSERT_FALSE(pieces.empty());
        EXPECT_FALSE(pieces[0]);
    }

    TEST(PagePreparer, EveryRangeStartedFromSeveralThreadsIsFaultedInOnceItsTicketIsDone)
    {
        mapping probe(host_pages::page_size() * 4);
        ASSERT_NE(probe.data, nullptr);
        if (!host_pages::populate_for_write(probe.data, host_pages::page_size() * 4, false))
        {
            GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE (Linux 5.14+)";
        }
        for (bool huge : {false, true})
        {
            page_preparer preparer(3, huge);
            EXPECT_EQ(preparer.threads(), 3u);
            const std::size_t bytes = (13u << 20) + 12345;  // a part of about 4 MiB a thread, the last one longer
            std::vector<std::unique_ptr<mapping>> ranges;
            for (int i = 0; i < 8; ++i)
            {
                ranges.push_back(std::make_unique<mapping>(bytes + 4096));
                ASSERT_NE(ranges.back()->data, nullptr);
            }
            std::vector<std::thread> threads;
            for (int t = 0; t < 4; ++t)
            {
                threads.emplace_back([&, t] {
                    for (int i = t; i < 8; i += 4)
                    {
                        unsigned char* data = ranges[i]->data + 100;
                        auto ticket = preparer.start(data, bytes);
                        ticket->wait();
                        EXPECT_TRUE(ticket->done());
                        const std::size_t page = host_pages::page_size();
                        for (std::size_t at = page; at + page < bytes; at += 64 * page)
                        {
                            EXPECT_TRUE(resident(data + at)) << "range " << i << " byte " << at << (huge ? " huge" : "");
                        }
                        EXPECT_TRUE(resident(data + bytes - page - 200)) << "the last part of range " << i;
                        EXPECT_TRUE(copy_pool::all_zero(data, bytes));
                    }
                });
            }
            for (std::thread& thread : threads)
            {
                thread.join();
            }
            EXPECT_EQ(preparer.parts_done(), 8u * 3u) << "13 MiB: a part for each of the 3 threads";
        }
        // A range too short for a part of its own is one part; an empty one has none and is done at once.
        page_preparer preparer(4, false);
        mapping small(1u << 20);
        ASSERT_NE(small.data, nullptr);
        preparer.start(small.data, 1u << 20)->wait();
        EXPECT_TRUE(resident(small.data + 4096));
        EXPECT_EQ(preparer.parts_done(), 1u);
        EXPECT_TRUE(preparer.start(small.data, 0)->done());
    }

    TEST(PagePreparer, ScansFromSeveralThreadsFindEveryZeroPiece)
    {
        const std::size_t piece = copy_pool::piece_bytes;
        page_preparer preparer(3, false);
        const std::size_t bytes = 57 * piece + 1000;  // the last piece shorter
        std::vector<std::vector<unsigned char>> ranges;
        for (int i = 0; i < 8; ++i)
        {
            ranges.emplace_back(bytes + 64, 0);
        }
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
        {
            threads.emplace_back([&, t] {
                for (int i = t; i < 8; i += 4)
                {
                    unsigned char* data = ranges[i].data() + 3;  // not aligned
                    // A byte of data in every (i + 2)-th piece, at its start, middle or last byte in turn,
                    // and in the last (short) piece's last byte for odd i.
                    std::vector<bool> expected((bytes + piece - 1) / piece, true);
                    for (std::size_t k = 0; k < expected.size(); k += i + 2)
                    {
                        std::size_t length = std::min(piece, bytes - k * piece);
                        std::size_t at = (k % 3 == 0) ? 0 : (k % 3 == 1) ? length / 2 : length - 1;
                        data[k * piece + at] = 1;
                        expected[k] = false;
                    }
                    if (i % 2)
                    {
                        data[bytes - 1] = 1;
                        expected.back() = false;
                    }
                    auto ticket = preparer.start_scan(data, bytes, piece);
                    EXPECT_EQ(ticket->zero_pieces(), expected) << "range " << i;
                    EXPECT_TRUE(ticket->done());
                }
            });
        }
        for (std::thread& thread : threads)
        {
            thread.join();
        }
        EXPECT_EQ(preparer.parts_done(), 8u * 3u) << "about 14 MiB: a part for each of the 3 threads";
        // A range shorter than a part a thread: one part; an empty range: no piece, done at once.
        std::vector<unsigned char> small(piece + 5, 0);
        EXPECT_EQ(preparer.start_scan(small.data(), small.size(), piece)->zero_pieces(), std::vector<bool>(2, true));
        auto none = preparer.start_scan(small.data(), 0, piece);
        EXPECT_TRUE(none->done());
        EXPECT_TRUE(none->zero_pieces().empty());
    }

    TEST(PagePreparer, TakingAScanEarlyGivesOnlyPiecesReadAndFoundZeroAndStopsIt)
    {
        // Ranges with data in every third piece, scanned while other threads take each scan at once, half-way
        // or after it is done: every piece taken as zero is zero, the pieces unread are counted, and the
        // ticket still completes (its threads leave the range). Taken after the scan is done: the whole answer.
        const std::size_t piece = copy_pool::piece_bytes;
        const std::size_t bytes = 96 * piece + 77;
        const std::size_t pieces = (bytes + piece - 1) / piece;
        page_preparer preparer(4, false);
        std::vector<std::vector<unsigned char>> ranges(8, std::vector<unsigned char>(bytes, 0));
        std::vector<std::vector<bool>> zero(8, std::vector<bool>(pieces, true));
        for (std::size_t i = 0; i < ranges.size(); ++i)
        {
            for (std::size_t k = i % 3; k < pieces; k += 3)
            {
                ranges[i][std::min(bytes - 1, k * piece + (i * 4099) % piece)] = 9;
                zero[i][k] = false;
            }
        }
        std::atomic<std::size_t> unread_total{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
        {
            threads.emplace_back([&, t] {
                for (std::size_t i = static_cast<std::size_t>(t); i < ranges.size(); i += 4)
                {
                    auto ticket = preparer.start_scan(ranges[i].data(), bytes, piece);
                    if (i >= 4)
                    {
                        std::this_thread::yield();  // the second round: taken a little later
                    }
                    std::size_t unread = pieces + 1;
                    std::vector<bool> taken = ticket->take(unread);
                    ASSERT_EQ(taken.size(), pieces);
                    ASSERT_LE(unread, pieces);
                    std::size_t known = 0;
                    for (std::size_t k = 0; k < pieces; ++k)
                    {
                        if (taken[k])
                        {
                            EXPECT_TRUE(zero[i][k]) << "range " << i << ": piece " << k << " has data, taken as zero";
                            ++known;
                        }
                    }
                    EXPECT_LE(known + unread, pieces);
                    unread_total += unread;
                    ticket->wait();  // returns: the threads stopped or finished
                    EXPECT_TRUE(ticket->done());
                    // Taken again once done: nothing read since the stop is lost, nothing unread is made up.
                    std::size_t again = 0;
                    std::vector<bool> later = ticket->take(again);
                    EXPECT_LE(again, unread);
                    for (std::size_t k = 0; k < pieces; ++k)
                    {
                        EXPECT_TRUE(!later[k] || zero[i][k]) << "range " << i << ", piece " << k;
                        EXPECT_TRUE(!taken[k] || later[k]) << "range " << i << ", piece " << k << " forgotten";
                    }
                }
            });
        }
        for (std::thread& thread : threads)
        {
            thread.join();
        }
        // After the scan is done, take() is the whole answer, like zero_pieces().
        auto finished = preparer.start_scan(ranges[1].data(), bytes, piece);
        finished->wait();
        std::size_t unread = 99;
        EXPECT_EQ(finished->take(unread), zero[1]);
        EXPECT_EQ(unread, 0u);
        EXPECT_EQ(finished->zero_pieces(), zero[1]);
        std::printf("pieces unread when taken at once, over 8 scans: %zu of %zu\n", unread_total.load(), 8 * pieces);
    }

    TEST(CopyPool, PiecesKnownZeroAreNeverRead)
    {
        // The pieces said to be zero are made unreadable: a read of one would end the test with a fault.
        const std::size_t piece = copy_pool::piece_bytes;
        for (std::size_t participants : {1u, 3u, 8u})
        for (std::size_t bytes : {3 * piece + 100, 16 * piece, 2 * piece})
        {
            SCOPED_TRACE(std::to_string(participants) + " participants, " + std::to_string(bytes) + " bytes");
            copy_pool pool(participants, std::chrono::microseconds(200));
            mapping source(bytes + piece);
            ASSERT_NE(source.data, nullptr);
            const std::size_t pieces = (bytes + piece - 1) / piece;
            std::vector<bool> known(pieces, false);
            for (std::size_t k = 1; k < pieces; k += 2)
            {
                known[k] = true;
                ASSERT_EQ(::mprotect(source.data + k * piece, piece, PROT_NONE), 0);
            }
            std::vector<unsigned char> destination(bytes, 0xab);
            // All zero elsewhere too: nothing written.
            EXPECT_TRUE(pool.copy_unless_zero(destination.data(), source.data, bytes, &known));
            EXPECT_TRUE(std::all_of(destination.begin(), destination.end(), [](unsigned char c) { return c == 0xab; }));
            // Data in the first piece: it arrives, and the known pieces arrive as zeros, unread.
            source.data[7] = 9;
            EXPECT_FALSE(pool.copy_unless_zero(destination.data(), source.data, bytes, &known));
            EXPECT_EQ(destination[7], 9);
            destination[7] = 0;
            EXPECT_TRUE(std::all_of(destination.begin(), destination.end(), [](unsigned char c) { return c == 0; }));
            ::mprotect(source.data, bytes + piece, PROT_READ | PROT_WRITE);
        }
    }

    TEST(CopyPool, EveryPieceOfEveryJobIsCopiedOnceIntoThatJobsDestination)
    {
        // Many short jobs in a row: a thread that wakes late must not take a piece of a newer job with an
        // older job's pointers (that piece of the newer copy would be missing). Five sources and three
        // destinations in turn: a destination never already holds the source it is given next.
        for (std::chrono::microseconds spin : spins)
        {
            SCOPED_TRACE("spin " + std::to_string(spin.count()) + " us");
            copy_pool pool(8, spin);
            const std::size_t bytes = copy_pool::min_parallel + copy_pool::piece_bytes / 2;
            std::vector<std::vector<unsigned char>> sources;
            for (unsigned k = 0; k < 5; ++k)
            {
                sources.push_back(pattern(bytes, k));
            }
            std::vector<std::vector<unsigned char>> destinations(3, std::vector<unsigned char>(bytes));
            // Seven threads that never sleep share two cores with the caller on a small machine: fewer jobs.
            const int jobs = spin.count() > 1000 ? 300 : 2000;
            std::uint64_t pieces = 0;
            for (int job = 0; job < jobs; ++job)
            {
                const std::vector<unsigned char>& source = sources[static_cast<std::size_t>(job) % 5];
                std::vector<unsigned char>& destination = destinations[static_cast<std::size_t>(job) % 3];
                pool.copy(destination.data(), source.data(), bytes);
                ASSERT_EQ(std::memcmp(destination.data(), source.data(), bytes), 0) << "job " << job;
                pieces += copy_pool::cut(destination.data(), bytes, copy_pool::order::by_address).pieces;
            }
            EXPECT_EQ(pool.pieces_by_caller() + pool.pieces_by_threads(), pieces);
        }
    }

    TEST(CopyPool, SleepingThreadsAreWokenForTheNextCopy)
    {
        // Between these copies the threads have gone to sleep (a pause far longer than the spin), so they
        // take part only if posting a copy wakes the sleepers. A copy of 16 MiB is 64 pieces: a thread
        // woken at all takes some of them unless the caller copies all 64 before it runs; on a busy
        // machine that may happen for a few copies, not for 200.
        for (std::chrono::microseconds spin : {std::chrono::microseconds(0), std::chrono::microseconds(200)})
        {
            SCOPED_TRACE("spin " + std::to_string(spin.count()) + " us");
            copy_pool pool(4, spin);
            std::vector<unsigned char> source = pattern(16u << 20, 5), destination(16u << 20);
            for (int copy = 0; copy < 200 && pool.pieces_by_threads() == 0; ++copy)
            {
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
                pool.copy(destination.data(), source.data(), source.size());
                ASSERT_EQ(destination, source);
            }
            EXPECT_GT(pool.pieces_by_threads(), 0u) << "no copy thread took part in 200 copies: they were never woken";
        }
    }

    TEST(CopyPool, TheCallerAloneCopiesWhenThereAreNoThreads)
    {
        copy_pool pool(1, std::chrono::microseconds(200));
        std::vector<unsigned char> source = pattern(4u << 20, 3), destination(4u << 20);
        pool.copy(destination.data(), source.data(), source.size());
        EXPECT_EQ(destination, source);
        EXPECT_EQ(pool.pieces_by_threads(), 0u);
    }
}
