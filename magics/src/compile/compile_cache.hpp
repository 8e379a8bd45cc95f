#pragma once
// The in-memory compile cache: identical compiles in one process are done once.
//
// The key covers everything that changes the binary: the source, the NVRTC options (arch, std,
// defines, include dirs, line info, fast math, raw options), the name expressions, the contents of
// in-memory headers, the NVRTC version and the digest of the standard header stand-ins
// (standard_headers.hpp). It is kept as the full text, so two different inputs
// can never share an entry. Least-recently-used entries are dropped past a fixed count.
// Thread-safe (a mutex), because compiles run with the GIL released.

#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "nvrtc_compiler.hpp"

namespace xcuda
{
    class compile_cache
    {
    public:
        compile_cache() = default;

        static std::string make_key(const std::string& source, const compile_options& options,
                                     const std::map<std::string, std::string>& headers);
        // The same with NVRTC's version given (compiler::key_for knows it without loading NVRTC).
        static std::string make_key(std::pair<int, int> nvrtc, const std::string& source, const compile_options& options,
                                     const std::map<std::string, std::string>& headers);

        std::shared_ptr<const compile_result> find(const std::string& key);
        void insert(const std::string& key, std::shared_ptr<const compile_result> result);
        void clear();

        std::size_t size() const;
        std::size_t hits() const noexcept { return m_hits; }
        std::size_t misses() const noexcept { return m_misses; }
        void set_capacity(std::size_t entries);

    private:
        void evict_locked();

        using lru_list = std::list<std::string>;
        struct entry
        {
            std::shared_ptr<const compile_result> result;
            lru_list::iterator position;
        };

        mutable std::mutex m_mutex;
        std::unordered_map<std::string, entry> m_entries;
        lru_list m_order;  // front: most recently used
        std::size_t m_capacity = 128;
        std::size_t m_hits = 0;
        std::size_t m_misses = 0;
    };
}
