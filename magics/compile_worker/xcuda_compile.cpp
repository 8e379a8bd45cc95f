// xcuda-compile: NVRTC in a process of its own, for the xcuda module (see compile/compile_worker.hpp).
//
// Reads requests (compile_worker::encode) as frames on stdin and answers each with a frame on stdout (what
// compile_process::outcome makes: the result, or the error to raise). Exits when stdin closes. SIGINT is
// ignored between requests; during a compile NVRTC installs its own handler, which ends this process, and
// the module reports the compile as interrupted. It ends when the kernel does, even mid-compile.

#include <csignal>
#include <poll.h>
#include <unistd.h>
#include <map>
#include <string>

#include "compile_process.hpp"
#include "compile_worker.hpp"

int main()
{
    xcuda::compile_worker::exit_with_parent();  // a killed kernel leaves no compile running
    std::signal(SIGINT, SIG_IGN);
    std::signal(SIGPIPE, SIG_IGN);
    // NVRTC initialised before the first request, unless that request is already waiting (started by a
    // compile rather than ahead of one): the request itself initialises it then.
    pollfd waiting{0, POLLIN, 0};
    if (::poll(&waiting, 1, 0) == 0)
    {
        xcuda::compile_process::warm_up();
    }
    std::string request;
    while (xcuda::compile_worker::read_frame(0, request))
    {
        std::string source;
        xcuda::compile_options options;
        std::map<std::string, std::string> headers;
        std::string folder;
        bool readable = xcuda::compile_worker::decode(request, source, options, headers, &folder);
        // The notebook's working directory, where NVRTC finds a cell's includes by relative path. A folder gone
        // since is not an error here: the compile runs from where it is and NVRTC says what it cannot open.
        bool moved = readable && !folder.empty() && ::chdir(folder.c_str()) == 0;
        (void)moved;
        std::string answer = readable
                                 ? xcuda::compile_process::outcome(source, options, headers)
                                 : std::string("E") + std::string(8, '\0');  // an unreadable request: an empty error
        if (!xcuda::compile_worker::write_frame(1, answer))
        {
            return 0;
        }
    }
    return 0;
}
