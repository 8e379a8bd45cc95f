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

#include "xeus/xeus.hpp"
#include "xeus/xmessage.hpp"

#include "private_files.hpp"
#include "wire_gate.hpp"
#include "zmq.hpp"

// xeus 2.4.1 keeps its shell socket class private (src/xshell.hpp, not installed) but exports its members;
// start_server() below calls the two that xserver_shell_main::start_server calls. Checked against 2.4.1.
#if XEUS_VERSION_MAJOR != 2 || XEUS_VERSION_MINOR != 4
#error "replaceable_server::start_server follows xeus 2.4's xserver_shell_main::start_server: check it against this xeus"
#endif
namespace xeus
{
    class xshell
    {
    public:
        void run();
        void publish(zmq::multipart_t& message);
    };
}

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

        std::string hex(const std::string& bytes)
        {
            static const char digits[] = "0123456789abcdef";
            std::string out;
            for (unsigned char c : bytes)
            {
                out += digits[c >> 4];
                out += digits[c & 15];
            }
            return out;
        }

        std::string unhex(const std::string& text)
        {
            std::string out;
            for (std::size_t i = 0; i + 1 < text.size(); i += 2)
            {
                out += static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16));
            }
            return out;
        }

        // Beside the carried variables, in their private folder: <folder>/requests.json, mode 0600.
        std::string requests_file(const std::string& restore_file)
        {
            return restore_file.substr(0, restore_file.rfind('/') + 1) + "requests.json";
        }

        void save_requests(const std::vector<xeus::xmessage>& requests, const std::string& restore_file)
        {
            if (requests.empty())
            {
                return;
            }
            nl::json saved = nl::json::array();
            for (const xeus::xmessage& request : requests)
            {
                nl::json identities = nl::json::array();
                for (const std::string& identity : request.identities())
                {
                    identities.push_back(hex(identity));
                }
                nl::json buffers = nl::json::array();
                for (const auto& buffer : request.buffers())
                {
                    buffers.push_back(hex(std::string(buffer.begin(), buffer.end())));
                }
                saved.push_back({{"identities", identities}, {"header", request.header()},
                                 {"parent_header", request.parent_header()}, {"metadata", request.metadata()},
                                 {"content", request.content()}, {"buffers", buffers}});
            }
            std::string text = saved.dump();
            int fd = ::open(requests_file(restore_file).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
            {
                std::cerr << "xcuda: could not keep " << requests.size()
                          << " queued request(s) for the new kernel process; send them again" << std::endl;
            }
            if (fd >= 0)
            {
                ::close(fd);
            }
        }

        std::vector<xeus::xmessage> load_requests(const std::string& path)
        {
            std::vector<xeus::xmessage> requests;
            std::string text;
            bool trusted = xcuda::private_files::read(path, text);
            ::unlink(path.c_str());
            // The folder (xcuda_recovery's mkdtemp) goes with its last file: whichever of the carried
            // variables and these requests is read last removes it (rmdir fails while the other is there).
            ::rmdir(path.substr(0, path.rfind('/')).c_str());
            if (!trusted)
            {
                return requests;
            }
            for (const nl::json& saved : nl::json::parse(text, nullptr, false))
            {
                std::vector<std::string> identities;
                for (const auto& identity : saved.at("identities"))
                {
                    identities.push_back(unhex(identity.get<std::string>()));
                }
                xeus::buffer_sequence buffers;
                for (const auto& buffer : saved.at("buffers"))
                {
                    std::string bytes = unhex(buffer.get<std::string>());
                    buffers.emplace_back(bytes.begin(), bytes.end());
                }
                requests.emplace_back(identities, saved.at("header"), saved.at("parent_header"), saved.at("metadata"),
                                      saved.at("content"), std::move(buffers));
            }
            return requests;
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
            setenv("XCUDA_REPLAY", requests_file(restore_file).c_str(), 1);
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
        // xeus listens on inproc endpoints only; the connection file's ports belong to the gate, which lets
        // in what checks out (see wire_gate). Same context: inproc endpoints are per context.
        zmq::context_t& zmq_context = context.get_wrapped_context<zmq::context_t>();
        auto server = std::make_unique<replaceable_server>(zmq_context, wire_gate::inner_configuration(config), handler);
        server->m_gate = wire_gate::start(zmq_context, config);
        return server;
    }

    void replaceable_server::set_debugger_present(bool present)
    {
        m_gate->set_debugger_present(present);
    }

    void replaceable_server::set_before_publish(std::function<void()> hook)
    {
        m_before_publish = std::move(hook);
    }

    void replaceable_server::set_exit_check(std::function<bool()> requested, std::function<void()> on_exit)
    {
        m_exit_requested = std::move(requested);
        m_on_exit = std::move(on_exit);
    }

    void replaceable_server::publish_stream(const std::string& name, const std::string& text, const nl::json& parent)
    {
        nl::json content = {{"name", name}, {"text", text}};
        publish(xeus::xpub_message("stream", xeus::make_header("stream", "xcuda", m_session), parent,
                                   nl::json::object(), std::move(content), {}),
                xeus::channel::SHELL);
    }

    void replaceable_server::publish_impl(xeus::xpub_message message, xeus::channel c)
    {
        const std::string type = message.header().value("msg_type", "");
        bool idle = type == "status" && message.content().value("execution_state", "") == "idle";
        if (type != "stream" && m_before_publish)
        {
            m_before_publish();  // buffered output first: it was written before this message was made
        }
        {
            std::lock_guard<std::mutex> lock(m_publish_mutex);
            xeus::xserver_shell_main::publish_impl(std::move(message), c);
        }
        if (!idle || m_answering_aborted)
        {
            return;
        }
        std::vector<xeus::xmessage> aborted;
        aborted.swap(m_to_abort);
        for (const xeus::xmessage& request : aborted)
        {
            answer_aborted(request);
        }
        if (m_exit_requested && m_exit_requested())
        {
            m_on_exit();
            std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the reply and idle status leave
            std::exit(0);
        }
        const char* restore_file = std::getenv("XCUDA_REPLACE_AFTER_REPLY");
        if (!restore_file || !*restore_file || !std::getenv("XCUDA_KERNEL_ARGV"))
        {
            return;
        }
        // Requests already queued behind this one would die with the old image: take them and save them for
        // the new process, which runs them. xeus' abort_queue takes only what has arrived (it returns at the
        // first empty poll), so ask again until none has come for 500 ms: a notebook runner sends its next
        // cell as soon as it has this cell's reply and idle status, and on a loaded machine that can take a
        // few hundred milliseconds. (What arrives after the window dies with the old image: the exec cannot
        // keep it.) The window also gives the reply and the idle status time to leave.
        std::vector<xeus::xmessage> queued;
        auto quiet_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
        while (std::chrono::steady_clock::now() < quiet_until)
        {
            std::size_t before = queued.size();
            xeus::xserver_shell_main::abort_queue_impl(
                [&queued](xeus::xmessage request) { queued.push_back(std::move(request)); }, 0);
            if (queued.size() > before)
            {
                quiet_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        save_requests(queued, std::string(restore_file));
        replace_process(restore_file);
    }

    void replaceable_server::start_server(zmq::multipart_t& wire_message)
    {
        start_publisher_thread();
        start_heartbeat_thread();
        start_control_thread();
        get_shell().publish(wire_message);
        replay_saved_requests();
        get_shell().run();
        while (!is_control_stopped())
        {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        std::exit(0);
    }

    void replaceable_server::replay_saved_requests()
    {
        const char* path = std::getenv("XCUDA_REPLAY");
        if (!path || !*path)
        {
            return;
        }
        std::string file = path;
        unsetenv("XCUDA_REPLAY");
        std::vector<xeus::xmessage> requests = load_requests(file);
        if (requests.empty())
        {
            return;
        }
        const char* delay = std::getenv("XCUDA_REPLAY_DELAY_MS");
        std::this_thread::sleep_for(std::chrono::milliseconds(delay && *delay ? std::atoi(delay) : 1000));
        for (xeus::xmessage& request : requests)
        {
            notify_shell_listener(std::move(request));
        }
    }

    void replaceable_server::abort_queue_impl(const listener&, long polling_interval)
    {
        xeus::xserver_shell_main::abort_queue_impl(
            [this](xeus::xmessage request) { m_to_abort.push_back(std::move(request)); }, polling_interval);
    }

    void replaceable_server::answer_aborted(const xeus::xmessage& request)
    {
        std::string type = request.header().value("msg_type", "");
        const std::string suffix = "_request";
        std::string reply_type = type.size() > suffix.size() &&
                                         type.compare(type.size() - suffix.size(), suffix.size(), suffix) == 0
                                     ? type.substr(0, type.size() - suffix.size()) + "_reply"
                                     : type + "_reply";
        auto status = [&](const char* state) {
            publish(xeus::xpub_message("status", xeus::make_header("status", "xcuda", m_session), request.header(),
                                       nl::json::object(), nl::json{{"execution_state", state}}, {}),
                    xeus::channel::SHELL);
        };
        m_answering_aborted = true;
        status("busy");
        send_shell(xeus::xmessage(request.identities(), xeus::make_header(reply_type, "xcuda", m_session),
                                  request.header(), nl::json::object(), nl::json{{"status", "aborted"}}, {}));
        status("idle");
        m_answering_aborted = false;
    }
}
