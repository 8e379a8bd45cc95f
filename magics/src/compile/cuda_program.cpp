#include "cuda_program.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "errors.hpp"

extern char** environ;

namespace xcuda
{
    namespace
    {
        bool executable_file(const std::string& path)
        {
            struct stat st;
            return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
        }

        std::string on_path(const std::string& name)
        {
            const char* path = std::getenv("PATH");
            std::string rest = path ? path : "";
            std::size_t start = 0;
            while (start <= rest.size())
            {
                std::size_t end = rest.find(':', start);
                std::string dir = rest.substr(start, end == std::string::npos ? std::string::npos : end - start);
                if (!dir.empty() && executable_file(dir + "/" + name))
                {
                    return dir + "/" + name;
                }
                if (end == std::string::npos)
                {
                    break;
                }
                start = end + 1;
            }
            return {};
        }

        std::vector<std::string> toolkit_bins()
        {
            std::vector<std::string> bins;
            for (const char* variable : {"CUDA_HOME", "CUDA_PATH"})
            {
                const char* value = std::getenv(variable);
                if (value && *value)
                {
                    bins.push_back(std::string(value) + "/bin");
                }
            }
            bins.push_back("/usr/local/cuda/bin");
            return bins;
        }

        // The folder is ours (mkdtemp) and flat: the source, the executable, a profiler's report.
        void remove_tree(const std::string& folder)
        {
            if (DIR* dir = ::opendir(folder.c_str()))
            {
                while (dirent* entry = ::readdir(dir))
                {
                    std::string name = entry->d_name;
                    if (name != "." && name != "..")
                    {
                        ::unlink((folder + "/" + name).c_str());
                    }
                }
                ::closedir(dir);
            }
            ::rmdir(folder.c_str());
        }
    }

    std::string cuda_program::find_nvcc()
    {
        if (const char* chosen = std::getenv("XCUDA_NVCC"))
        {
            return executable_file(chosen) ? std::string(chosen) : std::string();  // that one, or none
        }
        for (const std::string& bin : toolkit_bins())
        {
            if (executable_file(bin + "/nvcc"))
            {
                return bin + "/nvcc";
            }
        }
        return on_path("nvcc");
    }

    std::string cuda_program::find_tool(const std::string& name)
    {
        std::vector<std::string> bins = toolkit_bins();
        std::string nvcc = find_nvcc();
        if (!nvcc.empty())
        {
            bins.insert(bins.begin(), nvcc.substr(0, nvcc.rfind('/')));
        }
        for (const std::string& bin : bins)
        {
            // ncu and nsys live in bin/ or in their own folders beside it (nsight-compute-*/ncu).
            if (executable_file(bin + "/" + name))
            {
                return bin + "/" + name;
            }
        }
        return on_path(name);
    }

    cuda_program::cuda_program(const std::string& source)
    {
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/xcuda-program-XXXXXX";
        std::vector<char> name(pattern.begin(), pattern.end());
        name.push_back('\0');
        if (::mkdtemp(name.data()) == nullptr)  // mode 0700
        {
            throw tool_error("%%cuda_program: cannot make a temporary folder from " + pattern + ": " + std::strerror(errno));
        }
        m_folder = name.data();
        m_source = m_folder + "/program.cu";
        m_executable = m_folder + "/program";
        std::ofstream out(m_source, std::ios::binary);
        out << source;
        if (!out)
        {
            remove_tree(m_folder);
            throw tool_error("%%cuda_program: cannot write " + m_source);
        }
    }

    cuda_program::~cuda_program()
    {
        remove_tree(m_folder);
    }

    int cuda_program::run_process(const std::vector<std::string>& argv, const output_sink& sink,
                                  const interrupt_check& interrupted, const std::string& what)
    {
        int out[2];
        int err[2];
        if (::pipe2(out, O_CLOEXEC) != 0)
        {
            throw tool_error(what + ": pipe failed: " + std::strerror(errno));
        }
        if (::pipe2(err, O_CLOEXEC) != 0)
        {
            ::close(out[0]);
            ::close(out[1]);
            throw tool_error(what + ": pipe failed: " + std::strerror(errno));
        }
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, out[1], 1);
        posix_spawn_file_actions_adddup2(&actions, err[1], 2);
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        posix_spawnattr_t attributes;
        posix_spawnattr_init(&attributes);
        posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        posix_spawnattr_setpgroup(&attributes, 0);  // a group of its own: an interrupt kills all of it
        sigset_t none;
        sigemptyset(&none);
        posix_spawnattr_setsigmask(&attributes, &none);
        sigset_t defaults;
        sigemptyset(&defaults);
        sigaddset(&defaults, SIGINT);
        sigaddset(&defaults, SIGPIPE);
        sigaddset(&defaults, SIGTERM);
        posix_spawnattr_setsigdefault(&attributes, &defaults);
        std::vector<char*> args;
        for (const std::string& a : argv)
        {
            args.push_back(const_cast<char*>(a.c_str()));
        }
        args.push_back(nullptr);
        pid_t pid = 0;
        int spawned = ::posix_spawn(&pid, argv[0].c_str(), &actions, &attributes, args.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attributes);
        ::close(out[1]);
        ::close(err[1]);
        if (spawned != 0)
        {
            ::close(out[0]);
            ::close(err[0]);
            throw tool_error(what + ": cannot run " + argv[0] + ": " + std::strerror(spawned));
        }
        pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
        int open = 2;
        bool killed = false;
        char buffer[8192];
        while (open > 0)
        {
            int ready = ::poll(fds, 2, 20);
            if (ready < 0 && errno != EINTR)
            {
                break;
            }
            for (int i = 0; i < 2 && ready > 0; ++i)
            {
                if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0)
                {
                    continue;
                }
                ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
                if (n > 0)
                {
                    if (sink)
                    {
                        sink(i == 1, std::string(buffer, static_cast<std::size_t>(n)));
                    }
                }
                else if (n == 0 || (errno != EINTR && errno != EAGAIN))
                {
                    ::close(fds[i].fd);
                    fds[i].fd = -1;
                    --open;
                }
            }
            if (!killed && interrupted && interrupted())
            {
                ::kill(-pid, SIGKILL);
                killed = true;
            }
        }
        for (auto& f : fds)
        {
            if (f.fd >= 0)
            {
                ::close(f.fd);
            }
        }
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR)
        {
        }
        if (killed)
        {
            throw interrupted_error(what + " was interrupted: the process (and its children) were killed");
        }
        if (WIFEXITED(status))
        {
            return WEXITSTATUS(status);
        }
        if (WIFSIGNALED(status))
        {
            return 128 + WTERMSIG(status);
        }
        return -1;
    }

    void cuda_program::build(const std::vector<std::string>& nvcc_options, const interrupt_check& interrupted)
    {
        std::string nvcc = find_nvcc();
        if (nvcc.empty())
        {
            throw tool_not_found_error(
                "%%cuda_program needs nvcc, the CUDA toolkit's compiler, and none was found (" +
                std::string(std::getenv("XCUDA_NVCC") ? "XCUDA_NVCC=" + std::string(std::getenv("XCUDA_NVCC")) + " is not an executable"
                                                      : "$CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin, PATH") + "). Install the CUDA toolkit (apt install cuda-toolkit, or "
                "conda install -c nvidia cuda-nvcc) or set CUDA_HOME; kernels alone compile without it in %%cuda cells");
        }
        std::vector<std::string> argv{nvcc, "-o", m_executable, m_source};
        argv.insert(argv.end(), nvcc_options.begin(), nvcc_options.end());
        std::string log;
        int status = run_process(argv, [&log](bool, const std::string& text) {
            if (log.size() < (1u << 20))
            {
                log += text;
            }
        }, interrupted, "nvcc");
        if (status != 0)
        {
            // nvcc names the file by its temporary path; the user knows it as the cell.
            std::string shown;
            for (std::size_t at = 0;;)
            {
                std::size_t hit = log.find(m_source, at);
                shown += log.substr(at, hit == std::string::npos ? std::string::npos : hit - at);
                if (hit == std::string::npos)
                {
                    break;
                }
                shown += "cell";
                at = hit + m_source.size();
            }
            std::vector<std::string> options(argv.begin() + 4, argv.end());
            throw compile_error("nvcc failed (exit status " + std::to_string(status) + "):\n" + shown, shown, options);
        }
    }

    int cuda_program::run(const std::vector<std::string>& prefix, const std::vector<std::string>& arguments,
                          const output_sink& sink, const interrupt_check& interrupted)
    {
        std::vector<std::string> argv = prefix;
        argv.push_back(m_executable);
        argv.insert(argv.end(), arguments.begin(), arguments.end());
        return run_process(argv, sink, interrupted, prefix.empty() ? "the program" : prefix[0]);
    }
}
