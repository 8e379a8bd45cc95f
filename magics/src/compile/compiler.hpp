#pragma once
// The one way a source becomes a binary: the in-memory compile cache, then the disk cache, then NVRTC
// (whose result is stored in both). Every caller goes through compile(): a cell's first build, the
// inspection compile with line information, a compile for a device of another arch, the PTX fallback.
//
// NVRTC itself runs in a child process (compile_process), so an interrupt or a compiler crash costs the
// compile, not the session.
//
// Ownership: owns both caches; the Python module makes one compiler per process and hands it to the
// module registry and the modules it builds. Thread-safe (the caches are), and holds no Python state,
// so callers release the GIL around compile().

#include <map>
#include <memory>
#include <string>

#include "compile_cache.hpp"
#include "compile_recipe.hpp"
#include "compile_process.hpp"
#include "compile_worker.hpp"
#include "disk_cache.hpp"
#include "nvrtc_compiler.hpp"
#include "nvrtc_version_memo.hpp"

namespace xcuda
{
    class compiler
    {
    public:
        // The disk cache from the environment (XCUDA_CACHE_DIR, XCUDA_CACHE, XCUDA_CACHE_SIZE).
        compiler();
        explicit compiler(disk_cache disk);
        compiler(const compiler&) = delete;
        compiler& operator=(const compiler&) = delete;

        struct output
        {
            std::shared_ptr<const compile_result> binary;
            std::string origin;  // "memory", "disk" or "nvrtc": where the binary came from
            std::string key;     // compile_cache::make_key of the inputs
        };

        // Throws compile_error (the source) or nvrtc_error (NVRTC itself).
        output compile(const compile_recipe& recipe);

        // The compile cache's key of these inputs, with NVRTC's version from nvrtc_version_memo: a hit on
        // disk needs no NVRTC loaded.
        std::string key_for(const compile_recipe& recipe);
        nvrtc_version_memo& nvrtc_version() noexcept { return m_nvrtc; }

        compile_cache& memory() noexcept { return m_memory; }
        disk_cache& disk() noexcept { return m_disk; }

        // NVRTC runs in another process unless XCUDA_COMPILE_PROCESS=0: the long-lived worker program
        // (xcuda-compile, compile_worker) once it is set, else a fork per compile (compile_process). The
        // check is asked every 20 ms while it runs, and true stops the compile with interrupted_error.
        void set_interrupt_check(compile_process::interrupt_check check) { m_interrupt_check = std::move(check); }
        // The path of xcuda-compile; "" keeps the fork per compile.
        void set_worker_program(const std::string& program);
        // Starts the worker now, so that it is warm by the first compile (errors wait for that compile).
        void start_worker() noexcept;

        // Where the next NVRTC compile runs: mode "worker" (xcuda-compile, its path in program; pid while it
        // runs, else -1), "fork" (a fork of this process per compile: no xcuda-compile was found beside the
        // module) or "in-process" (XCUDA_COMPILE_PROCESS=0). A benchmark or a slow compile can say which.
        struct process_info
        {
            std::string mode;
            std::string program;
            long pid = -1;
            int starts = 0;  // workers started in this process (more than 1: one died or was stopped)
        };
        process_info where_compiles() const;

    private:
        compile_cache m_memory;
        disk_cache m_disk;
        nvrtc_version_memo m_nvrtc;
        compile_process::interrupt_check m_interrupt_check;
        bool m_isolated = true;
        std::unique_ptr<compile_worker> m_worker;
    };
}
