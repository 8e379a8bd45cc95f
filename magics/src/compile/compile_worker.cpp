#include "compile_worker.hpp"

#include <cerrno>
#include <chrono>
#include <thread>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compile_process.hpp"
#include "errors.hpp"
#include "byte_io.hpp"
#include "nvrtc_library.hpp"

extern char** environ;

namespace xcuda
{
    namespace
    {
        using byte_io::get_list;
        using byte_io::get_text;
        using byte_io::get_u64;
        using byte_io::put_list;
        using byte_io::put_text;
        using byte_io::put_u64;
        using byte_io::read_all;
        using byte_io::write_all;

        std::string current_directory()
        {
            std::vector<char> buffer(4096);
            return ::getcwd(buffer.data(), buffer.size()) != nullptr ? std::string(buffer.data()) : std::string();
        }
    }

    std::string compile_worker::encode(const std::string& source, const compile_options& options,
                                       const std::map<std::string, std::string>& headers,
                                       const std::string& working_directory)
    {
        std::string out;
        put_text(out, source);
        put_text(out, options.arch);
        put_text(out, options.std);
        put_list(out, options.defines);
        put_list(out, options.include_dirs);
        put_u64(out, (options.lineinfo ? 1u : 0u) | (options.fast_math ? 2u : 0u) | (options.relocatable ? 4u : 0u));
        put_list(out, options.extra);
        put_list(out, options.name_expressions);
        put_u64(out, headers.size());
        for (const auto& [name, text] : headers)
        {
            put_text(out, name);
            put_text(out, text);
        }
        put_text(out, working_directory);
        return out;
    }

    bool compile_worker::decode(const std::string& bytes, std::string& source, compile_options& options,
                                std::map<std::string, std::string>& headers, std::string* working_directory)
    {
        std::size_t at = 0;
        std::uint64_t flags = 0;
        std::uint64_t count = 0;
        if (!get_text(bytes, at, source) || !get_text(bytes, at, options.arch) || !get_text(bytes, at, options.std) ||
            !get_list(bytes, at, options.defines) || !get_list(bytes, at, options.include_dirs) ||
            !get_u64(bytes, at, flags) || !get_list(bytes, at, options.extra) ||
            !get_list(bytes, at, options.name_expressions) || !get_u64(bytes, at, count) || count > bytes.size())
        {
            return false;
        }
        options.lineinfo = flags & 1u;
        options.fast_math = flags & 2u;
        options.relocatable = flags & 4u;
        for (std::uint64_t i = 0; i < count; ++i)
        {
            std::string name;
            std::string text;
            if (!get_text(bytes, at, name) || !get_text(bytes, at, text))
            {
                return false;
            }
            headers.emplace(std::move(name), std::move(text));
        }
        std::string folder;
        if (!get_text(bytes, at, folder))
        {
            return false;
        }
        if (working_directory != nullptr)
        {
            *working_directory = std::move(folder);
        }
        return at == bytes.size();
    }

    bool compile_worker::write_frame(int fd, const std::string& bytes)
    {
        std::string length;
        put_u64(length, bytes.size());
        return write_all(fd, length.data(), length.size()) && write_all(fd, bytes.data(), bytes.size());
    }

    bool compile_worker::read_frame(int fd, std::string& bytes)
    {
        char length[8];
        if (!read_all(fd, length, sizeof length))
        {
            return false;
        }
        std::size_t at = 0;
        std::uint64_t size = 0;
        get_u64(std::string(length, sizeof length), at, size);
        bytes.resize(size);
        return read_all(fd, bytes.data(), size);
    }

    compile_worker::compile_worker(std::string program)
        : m_program(std::move(program))
    {
    }

    compile_worker::~compile_worker()
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        stop_locked();
    }

    void compile_worker::start()
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        start_locked();
    }

    void compile_worker::start_locked()
    {
        if (m_pid > 0)
        {
            return;
        }
        // The worker uses the NVRTC this process uses (one loaded by CuPy, say): the compile cache's key
        // holds this NVRTC's version.
        //
        // CUDA_CACHE_DISABLE=1: where a driver is installed, NVRTC runs ptxas through the driver's JIT
        // cache (~/.nv/ComputeCache), and for PTX it has seen before ptxas does not run, so its verbose
        // report (registers, spills, shared memory: kernel.resources without a GPU-side load) is missing
        // from the log. Seen on the H200 host: the second of two cells with the same PTX had no report.
        // The worker only compiles, and xcuda's own compile cache keeps what it made.
        std::vector<std::string> environment;
        for (char** entry = environ; entry && *entry; ++entry)
        {
            if (std::strncmp(*entry, "XCUDA_NVRTC=", 12) != 0 && std::strncmp(*entry, "CUDA_CACHE_DISABLE=", 19) != 0 &&
                std::strncmp(*entry, "XCUDA_HELPER_PARENT=", 20) != 0)
            {
                environment.emplace_back(*entry);
            }
        }
        environment.push_back("XCUDA_NVRTC=" + nvrtc_library::path());
        environment.push_back("XCUDA_HELPER_PARENT=" + std::to_string(::getpid()));
        environment.push_back("CUDA_CACHE_DISABLE=1");
        std::vector<char*> envp;
        for (std::string& entry : environment)
        {
            envp.push_back(entry.data());
        }
        envp.push_back(nullptr);

        int requests[2];
        int results[2];
        if (::pipe2(requests, O_CLOEXEC) != 0)
        {
            throw nvrtc_error("pipe", errno, std::strerror(errno));
        }
        if (::pipe2(results, O_CLOEXEC) != 0)
        {
            int saved = errno;
            ::close(requests[0]);
            ::close(requests[1]);
            throw nvrtc_error("pipe", saved, std::strerror(saved));
        }
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, requests[0], 0);
        posix_spawn_file_actions_adddup2(&actions, results[1], 1);
        char* argv[] = {m_program.data(), nullptr};
        pid_t pid = -1;
        int spawned = posix_spawn(&pid, m_program.c_str(), &actions, nullptr, argv, envp.data());
        posix_spawn_file_actions_destroy(&actions);
        ::close(requests[0]);
        ::close(results[1]);
        if (spawned != 0)
        {
            ::close(requests[1]);
            ::close(results[0]);
            throw nvrtc_error("posix_spawn", spawned, "could not start " + m_program + ": " + std::strerror(spawned));
        }
        m_pid = pid;
        m_starts.fetch_add(1, std::memory_order_relaxed);
        m_requests = requests[1];
        m_results = results[0];
    }

    void compile_worker::stop_locked() noexcept
    {
        if (m_requests >= 0)
        {
            ::close(m_requests);
        }
        if (m_results >= 0)
        {
            ::close(m_results);
        }
        m_requests = m_results = -1;
        if (m_pid > 0)
        {
            ::kill(m_pid, SIGKILL);
            while (::waitpid(m_pid, nullptr, 0) < 0 && errno == EINTR)
            {
            }
        }
        m_pid = -1;
    }

    compile_result compile_worker::compile(const std::string& source, const compile_options& options,
                                           const std::map<std::string, std::string>& headers,
                                           const interrupt_check& interrupted)
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        std::string request = encode(source, options, headers, current_directory());
        start_locked();
        if (!write_frame(m_requests, request))
        {
            stop_locked();  // it had ended (killed, crashed): one more, once
            start_locked();
            if (!write_frame(m_requests, request))
            {
                stop_locked();
                throw nvrtc_error("nvrtcCompileProgram", -1, "the compile worker " + m_program + " does not take requests");
            }
        }
        // The reply: its length, then its bytes; read as it comes, asking about interrupts every 20 ms.
        std::string got;
        std::uint64_t expected = 0;
        bool have_length = false;
        char chunk[65536];
        for (;;)
        {
            if (have_length && got.size() >= expected)
            {
                return compile_process::result_of(got, source, headers);
            }
            pollfd wait{m_results, POLLIN, 0};
            int ready = ::poll(&wait, 1, 20);
            if (ready > 0)
            {
                std::size_t want = have_length ? std::min<std::size_t>(sizeof chunk, expected - got.size())
                                               : 8 - got.size();
                ssize_t n = ::read(m_results, chunk, want);
                if (n > 0)
                {
                    got.append(chunk, static_cast<std::size_t>(n));
                    if (!have_length && got.size() == 8)
                    {
                        std::size_t at = 0;
                        get_u64(got, at, expected);
                        got.clear();
                        have_length = true;
                    }
                    continue;
                }
                if (n == 0 || errno != EINTR)
                {
                    // The worker ended mid-request: a crash, or NVRTC's handler on an interrupt.
                    int status = 0;
                    while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR)
                    {
                    }
                    m_pid = -1;
                    stop_locked();
                    if (interrupted && interrupted())
                    {
                        throw interrupted_error("interrupted while NVRTC compiled the cell: the compile was stopped "
                                                "and nothing was bound; run the cell again to compile it");
                    }
                    std::string how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status)) +
                                                                " (" + strsignal(WTERMSIG(status)) + ")"
                                                          : "exited with status " + std::to_string(WEXITSTATUS(status));
                    throw nvrtc_error("nvrtcCompileProgram", -1,
                                      "the NVRTC compile process " + how + " while compiling the cell; this session "
                                      "is unharmed. If it happens again with this source, NVRTC cannot compile it: "
                                      "simplify the cell, or report the source to NVIDIA");
                }
            }
            if (interrupted && interrupted())
            {
                stop_locked();
                throw interrupted_error("interrupted while NVRTC compiled the cell: the compile was stopped and nothing "
                                        "was bound; run the cell again to compile it");
            }
        }
    }

    void compile_worker::exit_with_parent()
    {
        // The spawner names itself (XCUDA_HELPER_PARENT): a parent that died before this line has made us
        // a child of init or of a subreaper, whose pid tells nothing.
        const char* named = std::getenv("XCUDA_HELPER_PARENT");
        pid_t parent = named && *named ? static_cast<pid_t>(std::atol(named)) : ::getppid();
        ::unsetenv("XCUDA_HELPER_PARENT");  // not for the programs this one starts
        if (::getppid() != parent)
        {
            ::_exit(1);
        }
        std::thread([parent] {
            while (::getppid() == parent)
            {
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
            ::_exit(1);
        }).detach();
    }
}
