#include "replaceable_server.hpp"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "xeus/xmessage.hpp"
#include "zmq.hpp"

namespace xcuda
{
    namespace
    {
        // Only the standard streams survive exec: sockets and driver handles go with the old image.
        void close_on_exec_beyond_stdio()
        {
            DIR* fds = opendir("/proc/self/fd");
            if (!fds)
            {
                return;
            }
            int own = dirfd(fds);
            while (dirent* entry = readdir(fds))
            {
                int fd = std::atoi(entry->d_name);
                if (fd > 2 && fd != own)
                {
                    fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
                }
            }
            closedir(fds);
        }

        [[noreturn]] void replace_process(const std::string& restore_file)
        {
            std::vector<std::string> fields;
            const char* joined = std::getenv("XCUDA_KERNEL_ARGV");
            std::string text = joined ? joined : "";
            for (std::size_t start = 0;;)
            {
                std::size_t end = text.find('\x1f', start);
                fields.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
                if (end == std::string::npos)
                {
                    break;
                }
                start = end + 1;
            }
            std::vector<char*> argv;
            for (std::string& field : fields)
            {
                argv.push_back(field.data());
            }
            argv.push_back(nullptr);
            unsetenv("XCUDA_REPLACE_AFTER_REPLY");
            setenv("XCUDA_RESTORE", restore_file.c_str(), 1);
            close_on_exec_beyond_stdio();
            std::cout.flush();
            std::cerr.flush();
            execv("/proc/self/exe", argv.data());
            std::cerr << "xcuda: could not replace the kernel process (exec failed); restart the kernel" << std::endl;
            std::_Exit(1);
        }
    }

    std::unique_ptr<xeus::xserver> replaceable_server::make(xeus::xcontext& context, const xeus::xconfiguration& config,
                                                            nl::json::error_handler_t handler)
    {
        return std::make_unique<replaceable_server>(context.get_wrapped_context<zmq::context_t>(), config, handler);
    }

    void replaceable_server::publish_impl(xeus::xpub_message message, xeus::channel c)
    {
        bool idle = message.header().value("msg_type", "") == "status" &&
                    message.content().value("execution_state", "") == "idle";
        xeus::xserver_shell_main::publish_impl(std::move(message), c);
        if (!idle)
        {
            return;
        }
        const char* restore_file = std::getenv("XCUDA_REPLACE_AFTER_REPLY");
        if (!restore_file || !*restore_file || !std::getenv("XCUDA_KERNEL_ARGV"))
        {
            return;
        }
        // Requests already queued behind this one would die with the old image: answer each with
        // status "aborted" (what a kernel does after an error with stop_on_error), so a notebook shows
        // them as not run instead of waiting forever. Polling until 200 ms pass without a request also
        // gives the reply and the idle status time to leave (zmq sends asynchronously).
        abort_queue(
            [this](xeus::xmessage request) {
                std::string type = request.header().value("msg_type", "");
                const std::string suffix = "_request";
                std::string reply_type = type.size() > suffix.size() &&
                                                 type.compare(type.size() - suffix.size(), suffix.size(), suffix) == 0
                                             ? type.substr(0, type.size() - suffix.size()) + "_reply"
                                             : type + "_reply";
                nl::json header = xeus::make_header(reply_type, "xcuda", request.header().value("session", ""));
                nl::json content = {{"status", "aborted"}};
                send_shell(xeus::xmessage(request.identities(), std::move(header), request.header(),
                                          nl::json::object(), std::move(content), {}));
            },
            200);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        replace_process(restore_file);
    }
}
