#pragma once
// The modules of the session by cell: re-running a cell replaces its module.
//
// A cell is identified by its --name, or else by the names of its kernels. When a new module comes
// in, the entry under the same key and every entry that defined one of the same kernel names are
// dropped from the registry (their kernel objects keep them alive while referenced). An unchanged
// cell run again gets its current module back, already loaded: no recompile, no reload.
// One registry per process, made by the Python module with the session and the compiler that its
// modules use. GIL held for all calls except build(), which is thread-safe.

#include <deque>
#include <map>
#include <set>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cell_builder.hpp"
#include "compiler.hpp"
#include "cuda_module.hpp"

namespace xcuda
{
    struct build_result
    {
        std::shared_ptr<cuda_module> module;
        bool reused = false;     // the cell was unchanged: its current module came back as it was
        bool cache_hit = false;  // the binary came from the compile cache (no NVRTC run)
    };

    class module_registry
    {
    public:
        module_registry(cuda_session& session, class compiler& compiler);
        module_registry(const module_registry&) = delete;
        module_registry& operator=(const module_registry&) = delete;

        cuda_session& session() const noexcept { return m_session; }
        class compiler& compiler() const noexcept { return m_compiler; }

        // Builds a cell: prepares and compiles it (compile/cell_builder: its kernel signatures, the name
        // expressions, the compile through the caches), unless the cell's current module came from the
        // same recipe, and installs the module as the cell's current one. recipe.options.arch must be
        // set (the caller picks the default, which needs the session).
        // Thread-safe; holds no Python state, so callers release the GIL around it.
        build_result build(const std::string& name, compile_recipe recipe);

        static std::string key_for(const std::string& name, const std::vector<kernel_signature>& signatures);

        // Header cells (%%cuda_header name.cuh): kept in memory and given to NVRTC for the cells that
        // include them (directly or through another header cell). Setting a header whose text changed
        // marks every module compiled with the old text stale; returns those modules.
        // in_a_cell: the text is a %%cuda_header cell's body (its lines start on the cell's line 2), not
        // xcuda.set_header's string.
        std::vector<std::shared_ptr<cuda_module>> set_header(const std::string& name, const std::string& text,
                                                             bool in_a_cell = false);
        // Forgets a header (xcuda.remove_header): a later #include of the name finds the include folders or the
        // standard headers' stand-in again. Marks every module compiled with it stale and returns them; false in
        // `found` when there was no such header (nothing changes).
        std::vector<std::shared_ptr<cuda_module>> remove_header(const std::string& name, bool& found);
        std::map<std::string, std::string> headers() const;
        // The names of the headers that are %%cuda_header cells now (for cell_lines).
        std::set<std::string> header_cells() const;
        // The header cells source includes, with the ones they include in turn.
        std::map<std::string, std::string> headers_for(const std::string& source) const;

        // The current module under key if it was built from the same compile (cache key), else null.
        std::shared_ptr<cuda_module> find_same(const std::string& key, const std::string& cache_key) const;

        // Makes module the current one for key; returns the modules it replaced.
        std::vector<std::shared_ptr<cuda_module>> install(const std::string& key, std::shared_ptr<cuda_module> module);

        std::vector<std::shared_ptr<cuda_module>> modules() const;
        void clear();

    private:
        cuda_session& m_session;
        class compiler& m_compiler;
        cell_builder m_builder;
        mutable std::mutex m_mutex;
        std::map<std::string, std::string> m_headers;
        std::set<std::string> m_header_cells;
        std::vector<std::pair<std::string, std::shared_ptr<cuda_module>>> m_entries;
    };
}
