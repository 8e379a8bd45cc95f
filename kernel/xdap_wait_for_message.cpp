// A replacement for xeus 2.4.1's xdap_tcp_client::wait_for_message, which crashes the kernel when a
// breakpoint is hit (SIGSEGV, about one run in two on this machine; docs/debugger.md).
//
// Why: on debugpy's "stopped" event, xdap_tcp_client::forward_event asks debugpy for its threads and waits
// with the condition `msg["command"] == "threads"`, on a const nl::json&. Every DAP message the wait sees
// is tested, events included (a "thread" or "output" event arriving first, or one queued before), and
// nlohmann's const operator[] with a key that is absent is undefined behaviour: it reads past the object's
// map and segfaults in operator==. The other conditions in xeus test "type" first and never read "command"
// of an event.
//
// How: libxeus calls wait_for_message through its PLT (default visibility, no -Bsymbolic), so this
// definition in the executable, exported (CMakeLists.txt: --export-dynamic-symbol), is the one every call
// in libxeus reaches. It is xeus 2.4.1's own loop with one change: a condition sees a copy of the message in
// which "type", "command" and "event" exist (null where DAP did not send them); the message returned is
// the one debugpy sent. Only for xeus 2.4 (find_package(xeus 2.4) and its header's class layout); a xeus
// that fixed the condition makes this unnecessary, never wrong.

#include <algorithm>
#include <string>

#include "nlohmann/json.hpp"
#include "xeus/xdap_tcp_client.hpp"

namespace nl = nlohmann;

namespace
{
    bool holds(const std::function<bool(const nl::json&)>& condition, const nl::json& message)
    {
        if (!message.is_object())
        {
            return false;
        }
        nl::json tested = message;
        for (const char* key : {"type", "command", "event"})
        {
            if (!tested.contains(key))
            {
                tested[key] = nullptr;
            }
        }
        return condition(tested);
    }
}

namespace xeus
{
    nl::json xdap_tcp_client::wait_for_message(const message_condition& condition)
    {
        nl::json message;
        bool waiting = true;
        // A message that came earlier and waits in the queue.
        auto found = std::find_if(m_message_queue.begin(), m_message_queue.end(), [&](const std::string& raw) {
            nl::json parsed = nl::json::parse(raw);
            if (holds(condition, parsed))
            {
                message = std::move(parsed);
                return true;
            }
            return false;
        });
        if (found != m_message_queue.end())
        {
            waiting = false;
            m_message_queue.erase(found);
        }
        // Else the next ones from debugpy; the others are queued for later, in order.
        while (waiting)
        {
            handle_tcp_socket(m_stopped_queue);
            while (!m_stopped_queue.empty())
            {
                const std::string& raw = m_stopped_queue.front();
                nl::json parsed = nl::json::parse(raw);
                if (waiting && holds(condition, parsed))
                {
                    waiting = false;
                    message = std::move(parsed);
                }
                else
                {
                    m_message_queue.push_back(raw);
                }
                m_stopped_queue.pop_front();
            }
        }
        return message;
    }
}
