#ifndef XCUDA_WIRE_GATE_HPP
#define XCUDA_WIRE_GATE_HPP

// Header-only on purpose: the kernel's CMake source list belongs to another change (see issue 28); the
// gate is used by replaceable_server.cpp alone.

#include <atomic>
#include <climits>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nlohmann/json.hpp"
#include "xeus/xauthentication.hpp"
#include "xeus/xguid.hpp"
#include "xeus/xkernel_configuration.hpp"
#include "xeus/xmessage.hpp"
#include "zmq.hpp"
#include "zmq_addon.hpp"

namespace nl = nlohmann;

namespace xcuda
{
    /**
     * The kernel's five ports, checked before xeus sees a byte.
     *
     * Why: any local process can connect to a kernel's ports, and xeus 2.4.1's deserializer pops frames it
     * has not counted: the delimiter `<IDS|MSG>` and one to four frames abort the process, key or no key.
     * Well-signed requests with fields of the wrong type (a cursor past the end, an unknown history kind)
     * throw inside xeus' handlers, which then send no reply, so the client waits forever. And xeus binds
     * its sockets without ROUTER_HANDOVER, so a second client reusing the first one's identity (a
     * reconnecting frontend does) gets no replies.
     *
     * So the gate binds the connection file's ports itself, and xeus' sockets listen on inproc endpoints of
     * the same zmq context (inner_configuration), which no other process can reach. Shell, control and stdin
     * messages pass to xeus only when they check out: the delimiter, at least the signature and four parts,
     * a valid HMAC, four JSON objects (nesting at most max_json_depth: xeus dumps headers recursively), a
     * header with string msg_id and non-empty msg_type (and session, username, version, date strings where
     * present), and, for stdin, an input_reply. Anything else is dropped with a line on stderr (the first
     * drops, then every 1000th). A well-signed request whose header or content fields are wrong
     * (request_problem) is answered here: busy, an error reply with ename
     * "BadRequest" and an evalue naming the field, idle; so is a `*_request` kind the kernel does not know,
     * and a debug_request while the kernel has no debugger. Replies and iopub messages from xeus pass out
     * unchanged; the heartbeat is echoed here.
     *
     * Threading: one thread of its own owns every socket of the gate; the object is never destroyed (the
     * kernel ends in std::exit, and a zmq socket must not be closed from another thread).
     */
    class wire_gate
    {
    public:
        static constexpr int max_json_depth = 128;

        // The configuration xeus gets: the same key, its sockets on inproc endpoints named after ours.
        static xeus::xconfiguration inner_configuration(const xeus::xconfiguration& outer)
        {
            xeus::xconfiguration inner = outer;
            inner.m_transport = "inproc";
            inner.m_ip = "xcuda-wire-gate";
            inner.m_shell_port = "shell";
            inner.m_control_port = "control";
            inner.m_stdin_port = "stdin";
            inner.m_iopub_port = "iopub";
            inner.m_hb_port = "hb";
            return inner;
        }

        // Binds outer's ports (throws zmq::error_t when one is taken, as xeus would) and starts the thread.
        static wire_gate* start(zmq::context_t& context, const xeus::xconfiguration& outer)
        {
            auto* gate = new wire_gate(context, outer);  // never destroyed, see above
            std::thread([gate] { gate->run(); }).detach();
            return gate;
        }

        // Whether debug_request goes to xeus (a debugger answers it) or is answered here with an error.
        void set_debugger_present(bool present) { m_debugger_present = present; }

        // "" when a well-formed request of msg_type has content xeus can answer; else what is wrong, in words.
        // A cursor_pos counts Unicode code points of "code" and must lie within it.
        static std::string request_problem(const std::string& msg_type, const nl::json& content, bool debugger_present)
        {
            struct field
            {
                const char* name;
                char kind;  // s string, b bool, i int, o object, a any
                bool required;
            };
            auto check = [&content](std::initializer_list<field> fields) -> std::string {
                for (const field& f : fields)
                {
                    auto at = content.find(f.name);
                    if (at == content.end())
                    {
                        if (f.required)
                        {
                            return std::string("content has no \"") + f.name + "\"";
                        }
                        continue;
                    }
                    const nl::json& value = *at;
                    bool ok = f.kind == 's'   ? value.is_string()
                              : f.kind == 'b' ? value.is_boolean()
                              : f.kind == 'o' ? value.is_object()
                              : f.kind == 'i' ? is_int(value)
                                              : true;
                    if (!ok)
                    {
                        const char* expected = f.kind == 's'   ? "a string"
                                               : f.kind == 'b' ? "true or false"
                                               : f.kind == 'o' ? "an object"
                                                               : "an integer that fits in 32 bits";
                        return std::string("\"") + f.name + "\" must be " + expected + ", not " + value.dump(-1).substr(0, 40);
                    }
                }
                return {};
            };
            auto cursor_in_code = [&content]() -> std::string {
                std::int64_t cursor = content.at("cursor_pos").get<std::int64_t>();
                std::int64_t length = code_points(content.at("code").get_ref<const std::string&>());
                if (cursor < 0 || cursor > length)
                {
                    return "\"cursor_pos\" " + std::to_string(cursor) + " is outside the code (0 to " +
                           std::to_string(length) + " code points)";
                }
                return {};
            };
            std::string problem;
            if (msg_type == "execute_request")
            {
                return check({{"code", 's', true}, {"silent", 'b', false}, {"store_history", 'b', false},
                              {"user_expressions", 'o', false}, {"allow_stdin", 'b', false}, {"stop_on_error", 'b', false}});
            }
            if (msg_type == "complete_request")
            {
                problem = check({{"code", 's', true}, {"cursor_pos", 'i', true}});
                return problem.empty() ? cursor_in_code() : problem;
            }
            if (msg_type == "inspect_request")
            {
                problem = check({{"code", 's', true}, {"cursor_pos", 'i', true}, {"detail_level", 'i', false}});
                return problem.empty() ? cursor_in_code() : problem;
            }
            if (msg_type == "history_request")
            {
                problem = check({{"hist_access_type", 's', false}, {"output", 'b', false}, {"raw", 'b', false},
                                 {"session", 'i', false}, {"start", 'i', false}, {"stop", 'i', false}, {"n", 'i', false},
                                 {"pattern", 's', false}, {"unique", 'b', false}});
                std::string kind = problem.empty() ? content.value("hist_access_type", "tail") : "";
                if (problem.empty() && kind != "tail" && kind != "range" && kind != "search")
                {
                    problem = "\"hist_access_type\" must be \"tail\", \"range\" or \"search\", not \"" + kind.substr(0, 40) + "\"";
                }
                return problem;
            }
            if (msg_type == "is_complete_request")
            {
                return check({{"code", 's', true}});
            }
            if (msg_type == "comm_info_request")
            {
                return check({{"target_name", 's', false}});
            }
            if (msg_type == "shutdown_request")
            {
                return check({{"restart", 'b', false}});
            }
            if (msg_type == "kernel_info_request" || msg_type == "interrupt_request")
            {
                return {};
            }
            if (msg_type == "debug_request")
            {
                return debugger_present ? std::string() : "this kernel has no debugger";
            }
            return "this kernel does not know the request kind \"" + msg_type.substr(0, 60) + "\"";
        }

        // "" when a comm message has the fields xeus reads unchecked (a missing one is undefined behaviour).
        static std::string comm_problem(const std::string& msg_type, const nl::json& content)
        {
            auto string_field = [&content](const char* name) {
                auto at = content.find(name);
                return at != content.end() && at->is_string();
            };
            if (!string_field("comm_id"))
            {
                return "a " + msg_type + " without a string comm_id";
            }
            if (msg_type == "comm_open" && !string_field("target_name"))
            {
                return "a comm_open without a string target_name";
            }
            return {};
        }

        // At most max_json_depth nested arrays and objects, counted on the bytes (strings skipped).
        static bool shallow_enough(const zmq::message_t& frame)
        {
            const char* text = frame.data<const char>();
            int depth = 0;
            bool in_string = false;
            for (std::size_t i = 0; i < frame.size(); ++i)
            {
                char c = text[i];
                if (in_string)
                {
                    if (c == '\\')
                    {
                        ++i;
                    }
                    else if (c == '"')
                    {
                        in_string = false;
                    }
                }
                else if (c == '"')
                {
                    in_string = true;
                }
                else if ((c == '[' || c == '{') && ++depth > max_json_depth)
                {
                    return false;
                }
                else if (c == ']' || c == '}')
                {
                    --depth;
                }
            }
            return true;
        }

    private:
        static bool is_int(const nl::json& value)
        {
            if (value.is_number_unsigned())
            {
                return value.get<std::uint64_t>() <= static_cast<std::uint64_t>(INT_MAX);
            }
            if (value.is_number_integer())
            {
                std::int64_t v = value.get<std::int64_t>();
                return v >= INT_MIN && v <= INT_MAX;
            }
            return false;
        }

        static std::int64_t code_points(const std::string& text)
        {
            std::int64_t count = 0;
            for (unsigned char c : text)
            {
                count += (c & 0xC0) != 0x80;
            }
            return count;
        }

        enum channel_index
        {
            shell = 0,
            control = 1,
            stdin_channel = 2
        };

        wire_gate(zmq::context_t& context, const xeus::xconfiguration& outer)
            : m_auth(xeus::make_xauthentication(outer.m_signature_scheme, outer.m_key))
            , m_iopub_out(context, zmq::socket_type::pub)
            , m_iopub_in(context, zmq::socket_type::sub)
            , m_heartbeat(context, zmq::socket_type::router)
        {
            xeus::xconfiguration inner = inner_configuration(outer);
            const std::string ports[] = {outer.m_shell_port, outer.m_control_port, outer.m_stdin_port};
            const std::string inner_ports[] = {inner.m_shell_port, inner.m_control_port, inner.m_stdin_port};
            for (int i = 0; i < 3; ++i)
            {
                m_front.emplace_back(context, zmq::socket_type::router);
                m_front.back().set(zmq::sockopt::linger, 1000);
                m_front.back().set(zmq::sockopt::router_handover, 1);
                m_front.back().bind(endpoint(outer, ports[i]));
                m_back.emplace_back(context, zmq::socket_type::dealer);
                m_back.back().set(zmq::sockopt::linger, 1000);
                // One routing id on all three: xeus sends stdin requests to the identities of the shell request.
                m_back.back().set(zmq::sockopt::routing_id, "xcuda-wire-gate");
                m_back.back().connect(endpoint(inner, inner_ports[i]));
            }
            m_iopub_out.set(zmq::sockopt::linger, 1000);
            m_iopub_out.bind(endpoint(outer, outer.m_iopub_port));
            m_iopub_in.set(zmq::sockopt::subscribe, "");
            m_iopub_in.connect(endpoint(inner, inner.m_iopub_port));
            m_heartbeat.set(zmq::sockopt::linger, 0);
            m_heartbeat.bind(endpoint(outer, outer.m_hb_port));
        }

        static std::string endpoint(const xeus::xconfiguration& config, const std::string& port)
        {
            return config.m_transport + "://" + config.m_ip + (config.m_transport == "tcp" ? ":" : "-") + port;
        }

        void run()
        {
            std::vector<zmq::pollitem_t> items;
            for (auto& socket : m_front)
            {
                items.push_back({socket.handle(), 0, ZMQ_POLLIN, 0});
            }
            for (auto& socket : m_back)
            {
                items.push_back({socket.handle(), 0, ZMQ_POLLIN, 0});
            }
            items.push_back({m_iopub_in.handle(), 0, ZMQ_POLLIN, 0});
            items.push_back({m_heartbeat.handle(), 0, ZMQ_POLLIN, 0});
            while (true)
            {
                try
                {
                    zmq::poll(items.data(), items.size(), std::chrono::milliseconds(-1));
                    for (int i = 0; i < 3; ++i)
                    {
                        if (items[i].revents & ZMQ_POLLIN)
                        {
                            zmq::multipart_t message(m_front[i]);
                            let_in(static_cast<channel_index>(i), message);
                        }
                        if (items[3 + i].revents & ZMQ_POLLIN)
                        {
                            zmq::multipart_t message(m_back[i]);
                            message.send(m_front[i]);
                        }
                    }
                    if (items[6].revents & ZMQ_POLLIN)
                    {
                        zmq::multipart_t message(m_iopub_in);
                        message.send(m_iopub_out);
                    }
                    if (items[7].revents & ZMQ_POLLIN)
                    {
                        zmq::multipart_t message(m_heartbeat);
                        message.send(m_heartbeat);
                    }
                }
                catch (const zmq::error_t& error)
                {
                    if (error.num() != EINTR)
                    {
                        drop("a socket error (" + std::string(error.what()) + ")", shell);
                    }
                }
                catch (const std::exception& error)
                {
                    drop(std::string("an error (") + error.what() + ")", shell);
                }
            }
        }

        static const char* channel_name(channel_index c)
        {
            return c == shell ? "shell" : c == control ? "control" : "stdin";
        }

        void drop(const std::string& why, channel_index c)
        {
            ++m_dropped;
            if (m_dropped <= 20 || m_dropped % 1000 == 0)
            {
                std::cerr << "xcuda: dropped a message on the " << channel_name(c) << " port: " << why << " ("
                          << m_dropped << " dropped so far)" << std::endl;
            }
        }

        void let_in(channel_index c, zmq::multipart_t& message)
        {
            // [sender, ...identities, <IDS|MSG>, signature, header, parent_header, metadata, content, buffers...]
            static const std::string delimiter = "<IDS|MSG>";
            std::size_t at = 1;  // frame 0 is the sender's routing id, added by the ROUTER socket
            while (at < message.size() &&
                   !(message[at].size() == delimiter.size() && message[at].to_string_view() == delimiter))
            {
                ++at;
            }
            if (at >= message.size())
            {
                return drop("no <IDS|MSG> delimiter", c);
            }
            if (message.size() - at - 1 < 5)
            {
                return drop("fewer than the signature and four parts after the delimiter", c);
            }
            const zmq::message_t* parts = &message[at + 1];
            auto raw = [](const zmq::message_t& frame) {
                return xeus::xraw_buffer(frame.data<const unsigned char>(), frame.size());
            };
            if (!m_auth->verify(raw(parts[0]), raw(parts[1]), raw(parts[2]), raw(parts[3]), raw(parts[4])))
            {
                return drop("a bad signature", c);
            }
            nl::json json[4];
            static const char* names[] = {"header", "parent header", "metadata", "content"};
            for (int i = 0; i < 4; ++i)
            {
                const zmq::message_t& frame = parts[1 + i];
                if (!shallow_enough(frame))
                {
                    return drop(std::string("a ") + names[i] + " nested deeper than " + std::to_string(max_json_depth), c);
                }
                const char* text = frame.data<const char>();
                json[i] = nl::json::parse(text, text + frame.size(), nullptr, false);
                if (!json[i].is_object())
                {
                    return drop(std::string("a ") + names[i] + " that is not a JSON object", c);
                }
            }
            const nl::json& header = json[0];
            auto string_field = [&header](const char* name, bool required) {
                auto field = header.find(name);
                return field == header.end() ? !required : field->is_string();
            };
            if (!string_field("msg_id", true) || !string_field("msg_type", true))
            {
                return drop("a header without a string msg_id and msg_type", c);
            }
            const std::string& msg_type = header.at("msg_type").get_ref<const std::string&>();
            if (msg_type.empty())
            {
                return drop("an empty msg_type", c);
            }
            std::string header_problem;
            for (const char* name : {"session", "username", "version", "date"})
            {
                if (header_problem.empty() && !string_field(name, false))
                {
                    header_problem = std::string("the header's \"") + name + "\" must be a string";
                }
            }
            if (c == stdin_channel)
            {
                if (msg_type != "input_reply" || !header_problem.empty())
                {
                    return drop(header_problem.empty() ? "a " + msg_type.substr(0, 60) + " (only input_reply comes in on stdin)"
                                                       : header_problem, c);
                }
                message.send(m_back[c]);
                return;
            }
            const std::string suffix = "_request";
            bool is_request = msg_type.size() > suffix.size() &&
                              msg_type.compare(msg_type.size() - suffix.size(), suffix.size(), suffix) == 0;
            if (is_request)
            {
                std::string problem = header_problem.empty() ? request_problem(msg_type, json[3], m_debugger_present)
                                                             : header_problem;
                if (!problem.empty())
                {
                    return answer_bad_request(c, message, at, msg_type, problem);
                }
            }
            else if (!header_problem.empty())
            {
                return drop(header_problem, c);
            }
            else if (msg_type == "comm_open" || msg_type == "comm_msg" || msg_type == "comm_close")
            {
                std::string problem = comm_problem(msg_type, json[3]);
                if (!problem.empty())
                {
                    return drop(problem, c);
                }
            }
            // The sender's routing id goes on as the first identity (the inner ROUTER puts ours before it):
            // xeus addresses its reply to both, and the reply comes back through us to the sender.
            message.send(m_back[c]);
        }

        void answer_bad_request(channel_index c, zmq::multipart_t& request, std::size_t delimiter_at,
                                const std::string& msg_type, const std::string& problem)
        {
            drop("a " + msg_type.substr(0, 60) + " with bad fields, answered with an error: " + problem, c);
            std::string reply_type = msg_type.substr(0, msg_type.size() - std::string("_request").size()) + "_reply";
            std::string parent(request[delimiter_at + 2].to_string_view());
            auto status = [&](const char* state) {
                nl::json content = {{"execution_state", state}};
                zmq::multipart_t out;
                out.addstr("kernel.xcuda-wire-gate.status");
                sign_and_add(out, xeus::make_header("status", "xcuda", m_session), parent, content);
                out.send(m_iopub_out);
            };
            status("busy");
            zmq::multipart_t reply;
            for (std::size_t i = 0; i < delimiter_at; ++i)
            {
                reply.addmem(request[i].data(), request[i].size());
            }
            nl::json content = {{"status", "error"}, {"ename", "BadRequest"}, {"evalue", problem},
                                {"traceback", nl::json::array({"BadRequest: " + problem})}};
            sign_and_add(reply, xeus::make_header(reply_type, "xcuda", m_session), parent, content);
            reply.send(m_front[c]);
            status("idle");
        }

        void sign_and_add(zmq::multipart_t& out, const nl::json& header, const std::string& parent, const nl::json& content)
        {
            std::string parts[4] = {header.dump(), parent, "{}", content.dump(-1, ' ', false, nl::json::error_handler_t::replace)};
            auto raw = [](const std::string& s) {
                return xeus::xraw_buffer(reinterpret_cast<const unsigned char*>(s.data()), s.size());
            };
            std::string signature = m_auth->sign(raw(parts[0]), raw(parts[1]), raw(parts[2]), raw(parts[3]));
            out.addstr("<IDS|MSG>");
            out.addstr(signature);
            for (const std::string& part : parts)
            {
                out.addstr(part);
            }
        }

        std::unique_ptr<xeus::xauthentication> m_auth;
        std::vector<zmq::socket_t> m_front;  // shell, control, stdin: bound on the connection file's ports
        std::vector<zmq::socket_t> m_back;   // connected to xeus' inproc sockets
        zmq::socket_t m_iopub_out;
        zmq::socket_t m_iopub_in;
        zmq::socket_t m_heartbeat;
        std::atomic<bool> m_debugger_present{false};
        std::uint64_t m_dropped = 0;
        std::string m_session = xeus::new_xguid();
    };
}

#endif
