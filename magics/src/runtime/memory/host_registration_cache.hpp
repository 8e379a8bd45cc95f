#pragma once
// Which ranges of pageable host memory (numpy arrays) are page-locked in place for the DMA
// (cuMemHostRegister), kept for the next copy of the same memory: the bookkeeping of the "registered"
// way of runtime/transfer_settings. Pure: the driver calls come in as hooks, so the rules below are
// tested without a GPU (tests/cpp/runtime/test_transfers.cpp).
//
// What is registered: the whole pages inside the copied range, never a page shared with a neighbour
// (two arrays on one page would make the second registration fail, and another allocation's page
// would be pinned for it); the caller copies the partial pages at either end itself.
//
// Safety: a registration must never outlive its memory. If memory were freed while registered, a new
// allocation at the same address would look page-locked to the driver, whose DMA would then go to the
// old pages. So every entry holds its memory's owner (host_memory_owner: the Python layer's reference
// to the array that owns the buffer), which keeps the memory allocated, and an entry is unregistered
// before that reference goes:
//   - when the owner is abandoned (nothing but the cache refers to it: the user dropped every array
//     viewing the memory), found by sweep() at each acquire;
//   - when the cache is over its byte or entry limit (least recently used first);
//   - at clear() (the session closes) and release_all() (xcuda.release_host_registrations()).
// An entry in use by a copy that has not completed (a lease is alive) is never unregistered.
//
// Policies (chosen per acquire): cached registers at the first copy and keeps it; second_use stages the
// first copy of a range and registers from the second (same range, same owner object, another use: the
// copies of one launch, an array's copy in and its copy back, are one use, told by the token begin_use()
// gives the call; a copy without a token is a use of its own); a range whose
// registration went unused (its owner was abandoned with no second copy) is not registered again by
// second_use for a while, so a loop allocating a new array each time never pays for registrations;
// per_copy registers for one copy and unregisters when its lease ends.
//
// Threading: every member takes the cache's mutex; leases may end on any thread. The hooks run under
// the mutex; owners are released after it is unlocked (their release may take the GIL).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace xcuda
{
    // Keeps a host buffer allocated; implemented by the Python layer around the owning array.
    class host_memory_owner
    {
    public:
        virtual ~host_memory_owner() = default;
        // True once nothing but this owner refers to the memory any more. Called with the cache's mutex
        // held, possibly without the GIL: it may only read.
        virtual bool abandoned() const noexcept = 0;
        // The owning object's identity, to tell the same array from a new one at a reused address.
        virtual const void* identity() const noexcept = 0;
    };

    class host_registration_cache
    {
    public:
        struct hooks
        {
            // Page-locks [begin, begin + bytes); false when the driver refused (the copy is staged).
            std::function<bool(void* begin, std::size_t bytes)> register_range;
            std::function<void(void* begin, std::size_t bytes)> unregister_range;
        };

        struct limits
        {
            std::size_t max_bytes = std::size_t(4) << 30;
            std::size_t max_entries = 64;
            std::size_t page = 4096;
            std::size_t min_bytes = 1u << 20;  // smaller inner ranges are not worth a registration
        };

        enum class policy
        {
            cached,
            second_use,
            per_copy
        };

        struct statistics
        {
            std::size_t hits = 0;           // copies that found their range registered
            std::size_t registrations = 0;  // cuMemHostRegister calls that succeeded
            std::size_t unregistrations = 0;
            std::size_t failures = 0;       // registrations the driver refused
            std::size_t staged_first_use = 0;  // second_use: first copies of a range, left to staging
            std::size_t staged_same_use = 0;   // second_use: further copies of a range in its first use
            std::size_t evictions = 0;      // unregistered for the limits
            std::size_t abandoned = 0;      // unregistered because their array went away
            std::size_t entries = 0;
            std::size_t bytes = 0;
        };

        // A registered range held for one copy: the range stays registered until the lease ends
        // (after the copy has completed). An empty lease means: stage this copy.
        class lease
        {
        public:
            lease() = default;
            lease(lease&& other) noexcept;
            lease& operator=(lease&& other) noexcept;
            ~lease();
            lease(const lease&) = delete;
            lease& operator=(const lease&) = delete;

            explicit operator bool() const noexcept { return m_cache != nullptr; }
            // The registered whole pages inside the copied range (on a hit in a larger entry: the copy's own
            // first whole page, not the entry's start).
            char* begin() const noexcept { return m_inner; }
            std::size_t bytes() const noexcept { return m_bytes; }
            // Ends it now (the copy has completed).
            void reset() noexcept;

        private:
            friend class host_registration_cache;
            host_registration_cache* m_cache = nullptr;
            char* m_begin = nullptr;   // the entry's key
            char* m_inner = nullptr;
            std::size_t m_bytes = 0;
        };

        host_registration_cache(hooks calls, limits bounds);
        ~host_registration_cache();
        host_registration_cache(const host_registration_cache&) = delete;
        host_registration_cache& operator=(const host_registration_cache&) = delete;

        // The whole pages of [address, address + bytes) registered for a copy, or an empty lease when the
        // copy should be staged (policy, a range too small, a refusal, the limits). owner may be null: then
        // nothing can be kept (cached and second_use stage, per_copy registers for this copy only).
        // use: a token from begin_use() shared by the copies of one call (0: this copy is a use of its own).
        lease acquire(const void* address, std::size_t bytes, std::shared_ptr<host_memory_owner> owner, policy how,
                      std::uint64_t use = 0);
        // A new token for the copies of one call (never 0).
        std::uint64_t begin_use() noexcept;
        // Whether the whole pages of [address, address + bytes) lie in one registered range of this cache.
        bool contains(const void* address, std::size_t bytes) const;
        // Whether any byte of [address, address + bytes) lies in a registered range of this cache.
        bool overlaps(const void* address, std::size_t bytes) const;
        // The whole pages inside a range: [first, last) rounded inwards to the page size.
        static void inner_pages(const void* address, std::size_t bytes, std::size_t page, char*& first, char*& last) noexcept;

        // Unregisters the entries whose owner was abandoned (and not in use).
        void sweep();
        // Unregisters every entry not in use (xcuda.release_host_registrations(); the session's close).
        void release_all();
        // Forgets every entry without a driver call (the context is gone, after a kernel fault).
        void forget() noexcept;
        void set_limits(limits bounds);

        statistics stats() const;

    private:
        struct entry
        {
            char* end = nullptr;
            std::shared_ptr<host_memory_owner> owner;
            std::size_t in_use = 0;
            std::size_t uses = 0;
            std::uint64_t last_use = 0;
            bool transient = false;  // per_copy: unregistered when its last lease ends
        };
        struct range
        {
            char* begin = nullptr;
            char* end = nullptr;
            const void* identity = nullptr;
            std::uint64_t use = 0;  // m_seen: the token of the first use (0: none)
        };

        // Each of these runs with the mutex held; owners dropped go to `dropped` (released unlocked).
        std::map<char*, entry>::iterator find_containing(char* first, char* last);
        void unregister(std::map<char*, entry>::iterator it, std::vector<std::shared_ptr<host_memory_owner>>& dropped);
        void sweep_locked(std::vector<std::shared_ptr<host_memory_owner>>& dropped);
        // Frees room for `bytes` and `entries` more, evicting the least recently used entries not in use;
        // false if it cannot.
        bool make_room(std::size_t bytes, std::size_t entries, std::vector<std::shared_ptr<host_memory_owner>>& dropped);
        void end_lease(char* key) noexcept;
        // What remembered() compares besides the range: nothing, the owner's identity, or that and the use token.
        enum class match
        {
            range,
            array,
            same_use
        };
        static bool remembered(const std::vector<range>& ring, const range& r, match how) noexcept;
        static void remember(std::vector<range>& ring, const range& r) noexcept;

        hooks m_hooks;
        limits m_limits;
        mutable std::mutex m_mutex;
        std::map<char*, entry> m_entries;  // by first byte; ranges never overlap
        std::size_t m_bytes = 0;
        std::uint64_t m_clock = 0;
        std::uint64_t m_uses = 0;  // begin_use()'s last token
        std::vector<range> m_seen;     // second_use: first copies, not registered
        std::vector<range> m_unused;   // registrations abandoned without a second copy
        std::vector<range> m_refused;  // ranges the driver refused: not tried again
        statistics m_stats;
    };
}
