#include "compile_process.hpp"

#include <sys/prctl.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "byte_io.hpp"
#include "diagnostics.hpp"
#include "disk_cache.hpp"
#include "errors.hpp"

namespace xcuda
{
    namespace
    {
        // What the child sends back: one kind byte, then length-prefixed fields.
        //   'R' a result: disk_cache::serialize("", result)
        //   'C' compile_error: message, log, option count, options
        //   'N' nvrtc_error: call, code (decimal text), message
        //   'E' any other failure: message
        // (base/byte_io.hpp)
        using byte_io::get_text;
        using byte_io::put_text;

        // A decimal number written by the child, or false (a garbled reply is an nvrtc_error below, never
        // a std::invalid_argument from std::stoul crossing the layer).
        bool whole_number(const std::string& text, long long& value)
        {
            if (text.empty() || text.size() > 18)
            {
                return false;
            }
            char* end = nullptr;
            value = std::strtoll(text.c_str(), &end, 10);
            return end && *end == '\0';
        }

        [[noreturn]] void run_child(int fd, const std::string& source, const compile_options& options,
                                    const std::map<std::string, std::string>& headers)
        {
            // As in the compile worker: ptxas' report must not be skipped by the driver's JIT cache.
            ::setenv("CUDA_CACHE_DISABLE", "1", 1);
            std::string out = compile_process::outcome(source, options, headers);
            ::_exit(byte_io::write_all(fd, out.data(), out.size()) ? 0 : 3);  // no atexit handlers, no stdio flush: those belong to the parent
        }

        // The compile in this process, SIGINT held back on this thread until NVRTC has restored its handler.
        compile_result compile_here(const std::string& source, const compile_options& options,
                                    const std::map<std::string, std::string>& headers)
        {
            sigset_t interrupt;
            sigset_t previous;
            sigemptyset(&interrupt);
            sigaddset(&interrupt, SIGINT);
            pthread_sigmask(SIG_BLOCK, &interrupt, &previous);
            struct restore
            {
                sigset_t mask;
                ~restore() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
            } restore_mask{previous};
            return nvrtc_compiler::compile(source, options, headers);
        }
    }

    std::string compile_process::outcome(const std::string& source, const compile_options& options,
                                         const std::map<std::string, std::string>& headers)
    {
        try
        {
            return "R" + disk_cache::serialize("", nvrtc_compiler::compile(source, options, headers));
        }
        catch (const compile_error& e)
        {
            std::string out = "C";
            put_text(out, e.what());
            put_text(out, e.log());
            put_text(out, std::to_string(e.options().size()));
            for (const std::string& option : e.options())
            {
                put_text(out, option);
            }
            return out;
        }
        catch (const nvrtc_error& e)
        {
            std::string out = "N";
            put_text(out, e.call());
            put_text(out, std::to_string(e.code()));
            put_text(out, e.description());
            return out;
        }
        catch (const std::exception& e)
        {
            std::string out = "E";
            put_text(out, e.what());
            return out;
        }
    }

    compile_result compile_process::result_of(const std::string& bytes, const std::string& source,
                                              const std::map<std::string, std::string>& headers)
    {
        std::size_t at = 1;
        if (!bytes.empty() && bytes[0] == 'R')
        {
            auto result = disk_cache::deserialize(bytes.substr(1), "");
            if (result)
            {
                return *result;
            }
        }
        else if (!bytes.empty() && bytes[0] == 'C')
        {
            std::string message;
            std::string log;
            std::string count;
            long long options_count = 0;
            if (get_text(bytes, at, message) && get_text(bytes, at, log) && get_text(bytes, at, count) &&
                whole_number(count, options_count) && options_count >= 0 &&
                static_cast<unsigned long long>(options_count) <= bytes.size())
            {
                std::vector<std::string> options(static_cast<std::size_t>(options_count));
                bool whole = true;
                for (std::string& option : options)
                {
                    whole = whole && get_text(bytes, at, option);
                }
                if (whole)
                {
                    throw compile_error(message, log, std::move(options),
                                        diagnostics::parse(source, log, nvrtc_compiler::supported_archs(), headers));
                }
            }
        }
        else if (!bytes.empty() && bytes[0] == 'N')
        {
            std::string call;
            std::string code;
            std::string message;
            long long number = 0;
            if (get_text(bytes, at, call) && get_text(bytes, at, code) && get_text(bytes, at, message) &&
                whole_number(code, number))
            {
                throw nvrtc_error(call, static_cast<int>(number), message);
            }
        }
        else if (!bytes.empty() && bytes[0] == 'E')
        {
            std::string message;
            if (get_text(bytes, at, message))
            {
                throw nvrtc_error("nvrtcCompileProgram", -1, message);
            }
        }
        throw nvrtc_error("nvrtcCompileProgram", -1, "the compile process sent back a result that could not be read");
    }

    void compile_process::warm_up()
    {
        static std::once_flag once;
        std::call_once(once, [] {
            // An sm_XX target, so that ptxas (which NVRTC runs for CUBINs) is initialised too.
            compile_options options;
            options.arch = "sm_75";
            try
            {
                compile_here("__global__ void xcuda_warm_up() {}\n", options, {});
            }
            catch (const std::exception&)
            {
                // A broken NVRTC says so in the real compile that follows.
            }
        });
    }

    compile_result compile_process::compile(const std::string& source, const compile_options& options,
                                            const std::map<std::string, std::string>& headers,
                                            const interrupt_check& interrupted)
    {
        // NVRTC found and loaded here (or ToolNotFoundError), not in each child. Not warmed up by a compile
        // here: while NVRTC compiles, its SIGINT handler ends the whole process, and in ipykernel any of its
        // threads may take the signal. Each child pays NVRTC's first-compile cost instead (this is the
        // fallback for a module installed without xcuda-compile).
        nvrtc_compiler::version();
        int pipe_fds[2];
        if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
        {
            return compile_here(source, options, headers);
        }
        pid_t parent = ::getpid();
        pid_t child = ::fork();
        if (child < 0)
        {
            ::close(pipe_fds[0]);
            ::close(pipe_fds[1]);
            return compile_here(source, options, headers);
        }
        if (child == 0)
        {
            // Ends with its parent: a killed kernel leaves no compile running (the forking thread waits for
            // this child, so the thread-bound death signal fires only when the process goes). The parent may
            // have died before prctl: then getppid() is no longer it.
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent)
            {
                ::_exit(4);
            }
            ::close(pipe_fds[0]);
            run_child(pipe_fds[1], source, options, headers);
        }
        ::close(pipe_fds[1]);
        int fd = pipe_fds[0];
        std::string bytes;
        bool stopped = false;
        char chunk[65536];
        for (;;)
        {
            pollfd wait{fd, POLLIN, 0};
            int ready = ::poll(&wait, 1, 20);
            if (ready > 0)
            {
                ssize_t n = ::read(fd, chunk, sizeof chunk);
                if (n > 0)
                {
                    bytes.append(chunk, static_cast<std::size_t>(n));
                    continue;
                }
                if (n == 0 || errno != EINTR)
                {
                    break;  // the child closed its end: done (or gone)
                }
            }
            if (interrupted && interrupted())
            {
                ::kill(child, SIGKILL);
                stopped = true;
                break;
            }
        }
        ::close(fd);
        int status = 0;
        while (::waitpid(child, &status, 0) < 0 && errno == EINTR)
        {
        }
        bool clean = !stopped && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (stopped || (!clean && interrupted && interrupted()))
        {
            throw interrupted_error("interrupted while NVRTC compiled the cell: the compile was stopped and nothing "
                                    "was bound; run the cell again to compile it");
        }
        if (!clean)
        {
            std::string how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status)) +
                                                        " (" + strsignal(WTERMSIG(status)) + ")"
                                                  : "exited with status " + std::to_string(WEXITSTATUS(status));
            throw nvrtc_error("nvrtcCompileProgram", -1,
                              "the NVRTC compile process " + how + " while compiling the cell; this session is "
                              "unharmed. If it happens again with this source, NVRTC cannot compile it: simplify "
                              "the cell, or report the source to NVIDIA");
        }
        return result_of(bytes, source, headers);
    }
}
