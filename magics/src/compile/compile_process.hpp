#pragma once
// NVRTC run in a child process, so that an interrupt or a crashing compiler never takes the session down.
//
// Why: while nvrtcCompileProgram runs, NVRTC installs its own SIGINT handler for the whole process, and
// that handler ends the process (exit status 4); it restores the previous handler afterwards. Measured with
// CUDA 13.0's NVRTC: Kernel > Interrupt during a 3 s CUB compile killed the kernel, every variable lost. A
// signal handler is process-wide, so blocking SIGINT on the compiling thread is not enough while any other
// thread (ipykernel has several) accepts it. Here the compile runs in a fork() of this process: the child
// inherits NVRTC already initialised (the parent warms it once), compiles, writes the result to a pipe and
// exits; the parent waits on the pipe, asking the interrupt check every 20 ms, and on an interrupt kills
// the child and raises interrupted_error. A compiler crash kills only the child and is reported.
//
// The child calls nothing but NVRTC and write(): it never touches Python, the CUDA driver or a lock another
// thread might hold (glibc's malloc is fork-safe). Where fork() fails, the compile runs in this process
// with SIGINT blocked on the calling thread (an interrupt then waits for the compile to end).
//
// Thread-safe: each call forks its own child. Holds no Python state: callers release the GIL.

#include <functional>
#include <map>
#include <string>

#include "nvrtc_compiler.hpp"

namespace xcuda
{
    class compile_process
    {
    public:
        // Returns true to abandon the compile (an interrupt); asked about every 20 ms.
        using interrupt_check = std::function<bool()>;

        // What nvrtc_compiler::compile returns or throws (compile_error, nvrtc_error), or interrupted_error,
        // or nvrtc_error when the child died (a crash of the compiler).
        static compile_result compile(const std::string& source, const compile_options& options,
                                      const std::map<std::string, std::string>& headers,
                                      const interrupt_check& interrupted);

        // What a compile process sends back: the result, or the failure to raise (see compile_process.cpp);
        // shared with the long-lived worker (compile_worker, xcuda-compile).
        static std::string outcome(const std::string& source, const compile_options& options,
                                   const std::map<std::string, std::string>& headers);
        static compile_result result_of(const std::string& outcome, const std::string& source,
                                        const std::map<std::string, std::string>& headers);

        // Initialises NVRTC in this process once (a tiny compile): NVRTC's first compile in a process costs
        // 30 to 60 ms more than later ones. For xcuda-compile, which ignores SIGINT; never in the notebook's
        // process (NVRTC's SIGINT handler ends the process while it compiles).
        static void warm_up();
    };
}
