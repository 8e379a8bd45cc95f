#include "tool_process.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errors.hpp"
#include "private_files.hpp"

extern char** environ;

namespace xcuda
{
    namespace
    {
        std::string base_name(const std::string& path)
        {
            std::size_t slash = path.rfind('/');
            return slash == std::string::npos ? path : path.substr(slash + 1);
        }

        int status_of(int raw)
        {
            if (WIFEXITED(raw))
            {
                return WEXITSTATUS(raw);
            }
            return WIFSIGNALED(raw) ? 128 + WTERMSIG(raw) : -1;
        }

        // Ends the child's process group: politely, then for good.
        void stop(pid_t child)
        {
            ::kill(-child, SIGTERM);
            for (int i = 0; i < 100; ++i)
            {
                int raw = 0;
                if (::waitpid(child, &raw, WNOHANG) == child)
                {
                    ::kill(-child, SIGKILL);  // whatever it started that is still there
                    return;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
            ::kill(-child, SIGKILL);
            int raw = 0;
            while (::waitpid(child, &raw, 0) < 0 && errno == EINTR)
            {
            }
        }
    }

    tool_process::outcome tool_process::run(const std::vector<std::string>& argv, const std::string& cwd,
                                            const std::string& output_file, const interrupt_check& interrupted)
    {
        if (argv.empty())
        {
            throw tool_error("no program to run");
        }
        std::string output_path = output_file.empty() ? (cwd.empty() ? "." : cwd) + "/" + base_name(argv[0]) + ".out"
                                                      : output_file;
        int out = ::open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (out < 0)
        {
            throw tool_error("could not create " + output_path + " for the output of " + argv[0] + ": " +
                             std::strerror(errno));
        }
        posix_spawn_file_actions_t actions;
        posix_spawnattr_t attributes;
        posix_spawn_file_actions_init(&actions);
        posix_spawnattr_init(&attributes);
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&actions, out, 1);
        posix_spawn_file_actions_adddup2(&actions, out, 2);
        sigset_t none;
        sigemptyset(&none);
        sigset_t defaults;
        sigemptyset(&defaults);
        for (int signal : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD, SIGQUIT})
        {
            sigaddset(&defaults, signal);
        }
        posix_spawnattr_setsigmask(&attributes, &none);
        posix_spawnattr_setsigdefault(&attributes, &defaults);
        posix_spawnattr_setpgroup(&attributes, 0);
        posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

        std::vector<char*> words;
        for (const std::string& word : argv)
        {
            words.push_back(const_cast<char*>(word.c_str()));
        }
        words.push_back(nullptr);
        if (!cwd.empty())
        {
            // A chdir of this process would move every thread's relative paths while the child starts.
            posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
        }
        pid_t child = 0;
        int spawned = ::posix_spawn(&child, argv[0].c_str(), &actions, &attributes, words.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attributes);
        ::close(out);
        if (spawned != 0)
        {
            throw tool_error("could not start " + argv[0] + ": " + std::strerror(spawned));
        }

        int raw = 0;
        for (;;)
        {
            pid_t done = ::waitpid(child, &raw, WNOHANG);
            if (done == child)
            {
                break;
            }
            if (done < 0 && errno != EINTR)
            {
                throw tool_error("lost track of " + argv[0] + ": " + std::strerror(errno));
            }
            if (interrupted && interrupted())
            {
                stop(child);
                throw interrupted_error("interrupted: " + base_name(argv[0]) +
                                        " was stopped; the session was not touched by it");
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        outcome result;
        result.status = status_of(raw);
        if (!private_files::read(output_path, result.output))
        {
            throw tool_error("could not read the output of " + argv[0] + " back from " + output_path);
        }
        return result;
    }
}
