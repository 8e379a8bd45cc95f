#pragma once
// A toolkit program run to its end as a child process (ncu, compute-sanitizer), interruptibly.
//
// Why not popen: ncu runs for seconds to minutes and starts processes of its own (the replay); an
// interrupt in the notebook must stop all of them and leave nothing behind. The child runs in a
// process group of its own (so the group can be killed, and a terminal's Ctrl-C reaches only the
// session), with the default signal mask and dispositions (the xcuda kernel blocks SIGINT in its
// threads), its output in files (no pipe to drain, however much it prints). The caller's wait asks the
// interrupt check every 20 ms; true kills the group (SIGTERM, SIGKILL after 2 s) and raises
// interrupted_error.
//
// Thread-safe (each call spawns its own child); holds no Python state: callers release the GIL.

#include <functional>
#include <string>
#include <vector>

namespace xcuda
{
    class tool_process
    {
    public:
        using interrupt_check = std::function<bool()>;

        struct outcome
        {
            int status = 0;       // the exit status; 128 + N when signal N ended it
            std::string output;   // what it wrote to stdout and stderr, interleaved as written
        };

        // Runs argv[0] (a path) with argv in folder `cwd` ("" : the caller's), its stdout and stderr into
        // output_file (created 0600; "" : a file in cwd named after the program). Throws tool_error when
        // it cannot be started, interrupted_error when interrupted.
        static outcome run(const std::vector<std::string>& argv, const std::string& cwd, const std::string& output_file,
                           const interrupt_check& interrupted);
    };
}
