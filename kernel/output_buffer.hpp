#ifndef XCUDA_OUTPUT_BUFFER_HPP
#define XCUDA_OUTPUT_BUFFER_HPP

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nlohmann/json.hpp"

namespace nl = nlohmann;

namespace xcuda
{
    /**
     * What a cell writes to sys.stdout and sys.stderr, published as few stream messages, as ipykernel does.
     *
     * Why: xeus-python publishes one iopub message per write(), so `for i in range(20000): print(i)` makes
     * 40,000 messages; zmq's PUB socket drops messages for a subscriber past its high-water mark (1,000
     * queued), and 14,000 lines and then the cell's idle status were lost. Here writes coalesce into one
     * pending run per stream switch and are published:
     *   - by a timer, `interval` after the oldest pending write (so a print before a long computation shows);
     *   - at once when `limit` bytes are pending (so memory stays bounded and a big output streams);
     *   - before any other iopub message (flush(), called by the server), so text printed before a display,
     *     a result or an error appears before it, and at the end of each cell, before its idle status.
     * The order of the writes is kept, also between stdout and stderr: adjacent writes to one stream join.
     * A flush publishes at most about max_runs messages: past max_runs switches between the streams (a loop
     * printing to stdout and stderr in turn), a write joins the latest pending run of its stream, so each
     * stream keeps its order and the interleaving is kept for the first switches of each flush only. (One
     * message per switch lost 115 of 1,500 lines in CI: 3,000 messages a flush, past the mark.)
     * At the high-water mark a PUB socket drops, and cannot block: what keeps every line is that the message
     * count stays far below the mark (at most about 1/interval timer flushes a second, plus one per `limit`
     * bytes), not a bigger mark, which would only trade the loss for memory while a client is slow.
     *
     * Messages carry the parent header set with set_parent() (the running request's, copied on the main
     * thread at the start of each cell); output written between cells by other threads goes with the last
     * cell's, as in ipykernel.
     *
     * Threading: write() from any thread (a mutex guards the pending runs); flush() from any thread. One
     * flush publishes at a time (a second mutex, held while taking the pending runs and publishing them), so
     * when flush() returns nothing written before it is still on its way. The timer thread never touches
     * Python. Made once per process and never destroyed (the kernel ends with std::exit).
     */
    class output_buffer
    {
    public:

        // Publishes one stream message: (stream name, text, parent header).
        using publisher = std::function<void(const std::string&, const std::string&, const nl::json&)>;

        output_buffer(std::chrono::milliseconds interval, std::size_t limit);
        ~output_buffer();
        output_buffer(const output_buffer&) = delete;
        output_buffer& operator=(const output_buffer&) = delete;

        // Until a publisher is set, writes are kept (the kernel configures Python before its server runs).
        void set_publisher(publisher publish);
        void set_parent(nl::json parent);

        void write(const std::string& stream, const std::string& text);
        void flush();

        // Stream messages published so far.
        std::size_t messages_published() const noexcept { return m_messages; }

    private:

        struct run
        {
            std::string stream;
            std::string text;
        };

        void timer_loop();

        static constexpr std::size_t max_runs = 32;

        const std::chrono::milliseconds m_interval;
        const std::size_t m_limit;

        mutable std::mutex m_pending_mutex;  // m_runs, m_pending_bytes, m_oldest, m_stop, m_parent
        std::condition_variable m_wake;
        std::vector<run> m_runs;
        std::size_t m_pending_bytes = 0;
        std::chrono::steady_clock::time_point m_oldest;
        nl::json m_parent = nl::json::object();
        bool m_stop = false;

        std::mutex m_flush_mutex;  // one flush at a time; lock order: m_flush_mutex, then m_pending_mutex
        publisher m_publish;
        std::atomic<std::size_t> m_messages{0};

        std::thread m_timer;
    };
}

#endif
