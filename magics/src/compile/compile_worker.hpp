#pragma once
// NVRTC in a long-lived helper process, `xcuda-compile` (built and installed next to the module), that
// compiles one request after another. Why a process at all: see compile_process (NVRTC's SIGINT handler ends
// the process it runs in; a crashing compiler must not take the session down). Why a long-lived one rather
// than a fork per compile: a fork of a notebook's process copies its page tables and then pays a
// copy-on-write fault for every page NVRTC writes that the parent had touched. Measured on the H200 host,
// in a process with CuPy and PyTorch loaded: the CCCL cell compiled in 3.52 s against 2.73 s for bare NVRTC,
// and a small cell in 87 ms against 19 ms. The worker starts from its own small image, initialises NVRTC once
// and stays warm; a request costs two pipe writes.
//
// An interrupt kills the worker (the compile is stopped, interrupted_error); so does NVRTC's own handler
// when Jupyter sends SIGINT to the process group. A crash or a kill only ends the worker: the next compile
// starts another. The worker exits when its request pipe closes (this process ended, or exec'd itself).
//
// Thread-safe: one request at a time (a mutex); no Python state, callers release the GIL.

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include <sys/types.h>

#include "nvrtc_compiler.hpp"

namespace xcuda
{
    class compile_worker
    {
    public:
        using interrupt_check = std::function<bool()>;

        // program: the path of xcuda-compile. Nothing starts until start() or the first compile.
        explicit compile_worker(std::string program);
        ~compile_worker();
        compile_worker(const compile_worker&) = delete;
        compile_worker& operator=(const compile_worker&) = delete;

        const std::string& program() const noexcept { return m_program; }
        // The worker's process id while one runs, else -1 (none started yet, or it died or was stopped).
        // Does not wait for a compile in progress.
        pid_t pid() const noexcept { return m_pid.load(std::memory_order_relaxed); }
        // How many workers this object started (1 after the first compile; more after a crash or a kill).
        int starts() const noexcept { return m_starts.load(std::memory_order_relaxed); }

        // Starts the worker if it is not running (it warms NVRTC up while the caller goes on).
        void start();
        // What nvrtc_compiler::compile returns or throws, or interrupted_error, or nvrtc_error when the
        // worker died (a crash of the compiler).
        compile_result compile(const std::string& source, const compile_options& options,
                               const std::map<std::string, std::string>& headers, const interrupt_check& interrupted);

        // The request's bytes, and back (the worker's side). working_directory: the requester's, where a cell's
        // quoted includes by relative path ("llmc/utils.h") are found; the worker compiles from there ("" in a
        // request: where it is).
        static std::string encode(const std::string& source, const compile_options& options,
                                  const std::map<std::string, std::string>& headers,
                                  const std::string& working_directory = "");
        static bool decode(const std::string& bytes, std::string& source, compile_options& options,
                           std::map<std::string, std::string>& headers, std::string* working_directory = nullptr);
        // For a helper program the kernel starts (xcuda-compile, xcuda-replay): ends this process within
        // about 100 ms of its parent's death, even in the middle of a compile (a killed kernel must not
        // leave an orphan compiling for minutes). A thread of its own watches getppid(); a parent already
        // gone before the call ends it at once. (PR_SET_PDEATHSIG is not used here: it fires when the
        // parent's spawning thread ends, which for a program spawned from a short-lived thread is too soon.)
        static void exit_with_parent();

        // Frames on a pipe: an 8-byte little-endian length, then the bytes.
        static bool write_frame(int fd, const std::string& bytes);
        static bool read_frame(int fd, std::string& bytes);

    private:
        void start_locked();
        void stop_locked() noexcept;  // kills and reaps the worker, if any

        std::string m_program;
        std::mutex m_mutex;
        std::atomic<pid_t> m_pid{-1};  // written under m_mutex; pid() reads it without
        std::atomic<int> m_starts{0};
        int m_requests = -1;  // we write
        int m_results = -1;   // we read
    };
}
