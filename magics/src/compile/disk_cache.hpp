#pragma once
// The compile cache on disk: binaries survive the kernel process, so a notebook re-opened tomorrow
// (or a second kernel running the same cell) loads its modules without running NVRTC.
//
// Where: $XCUDA_CACHE_DIR, else $XDG_CACHE_HOME/xcuda, else ~/.cache/xcuda; the folder is created 0700.
// XCUDA_CACHE=0 turns the disk cache off; XCUDA_CACHE_SIZE caps its size in bytes (default 1 GiB; K, M, G
// suffixes; anything else is warned about and the default kept), evicting the least recently used entries
// (a hit refreshes the entry's modification time) and temporary files left by a store that died.
//
// On-disk format: one file per entry, named <16 hex digits of FNV-1a-64 of the key>.xcc:
//
//     "XCUDACC1"                     8 bytes, magic and format version
//     content hash                   8 bytes, content_hash() of everything after this header
//     payload length                 8 bytes, little endian
//     payload                        fields, each an 8-byte little-endian length and its bytes:
//                                    key, arch, ptx, cubin, log, milliseconds (decimal text),
//                                    option count then each option, name count then name/lowered pairs
//
// The full key (source, options, headers, NVRTC version) is stored and compared, so a hash collision
// can never return another cell's binary. A file whose magic, length, content hash or fields do not
// check out is a miss (and is replaced by the next store). So is an entry that fails the private-files
// rule (a link, another owner, a second hard link, writable by others), and a folder that fails it turns
// the cache off (trust_problem() says why): see base/private_files. Writes go to a temporary file in the same
// folder, then rename() over the entry: readers see a whole old entry or a whole new one, and two
// processes storing the same entry at once are safe.
//
// Eviction lists the folder and stats every entry, which for a full cache of small entries (a 1 GiB cache
// holds tens of thousands) costs more than the compile it follows. So a store lists the folder only when
// this process has not yet, when the bytes it has stored since its last listing would take the last
// listed total past the cap, or when it has stored a 32nd of the cap since its last listing (what other
// processes store is seen then: each process sharing the folder may take it past the cap by at most a
// 32nd of it before it evicts). An eviction goes down to a 32nd below the cap, so a full cache lists its
// folder once per 32nd of the cap stored, not at every store. Thread-safe: the listing's bookkeeping is
// under a mutex, shared by copies of this object; otherwise no shared state besides the files.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "nvrtc_compiler.hpp"

namespace xcuda
{
    class disk_cache
    {
    public:
        // From the environment (see above). A cache whose folder cannot be created is disabled.
        static disk_cache from_environment();
        disk_cache(std::string directory, std::uint64_t capacity_bytes, bool enabled);

        bool enabled() const noexcept { return m_enabled; }
        // What the user is warned about once (lines, "" for none): the cache is off although it was asked
        // for (its folder fails the private-files rule, see base/private_files, or its path is a file, not
        // a folder), or XCUDA_CACHE_SIZE is not a size (the default cap is used instead).
        const std::string& trust_problem() const noexcept { return m_trust_problem; }
        const std::string& directory() const noexcept { return m_directory; }

        std::shared_ptr<const compile_result> load(const std::string& key) const;
        // Best effort: a full disk or a read-only folder only costs the next process a compile.
        void store(const std::string& key, const compile_result& result) const;

        std::string path_for(const std::string& key) const;
        static std::uint64_t fnv1a(const std::string& bytes);
        // A 64-bit hash over 8-byte words (multiply and rotate, splitmix64's finaliser): catches damaged
        // entries at memory speed, several times faster than a byte-wise hash on megabyte entries.
        static std::uint64_t content_hash(const std::string& bytes);
        static std::uint64_t content_hash(const char* data, std::size_t size);
        // XCUDA_CACHE_SIZE's syntax: digits, optionally K, M or G (powers of 1024). false for anything else.
        static bool parse_size(const std::string& text, std::uint64_t& bytes);
        static constexpr std::uint64_t default_capacity = 1ull << 30;
        // A store's temporary file older than this was left by a process that died mid-write: evict removes it.
        static constexpr long stale_temporary_seconds = 600;
        static std::string serialize(const std::string& key, const compile_result& result);
        // Null when the bytes are not a valid entry for key.
        static std::shared_ptr<const compile_result> deserialize(const std::string& bytes, const std::string& key);

        // How often this object (and its copies) has listed the folder to evict: for tests.
        std::uint64_t listings() const;

    private:
        // The bytes of a store just made: lists the folder and evicts when the rule above says so.
        void account(std::uint64_t stored) const;
        // Lists the folder, evicts the least recently used entries past the cap; returns the bytes left.
        std::uint64_t evict() const;

        struct listing_state
        {
            std::mutex mutex;
            bool listed = false;
            std::uint64_t listed_total = 0;    // the entries' bytes after the last listing's evictions
            std::uint64_t stored_since = 0;    // bytes this process stored after it
            std::uint64_t listings = 0;
        };

        std::string m_directory;
        std::uint64_t m_capacity;
        bool m_enabled;
        std::string m_trust_problem;
        std::shared_ptr<listing_state> m_listing = std::make_shared<listing_state>();
    };
}
