#include "output_buffer.hpp"

#include <algorithm>
#include <utility>

namespace xcuda
{
    output_buffer::output_buffer(std::chrono::milliseconds interval, std::size_t limit)
        : m_interval(interval)
        , m_limit(limit)
        , m_timer([this] { timer_loop(); })
    {
    }

    output_buffer::~output_buffer()
    {
        {
            std::lock_guard<std::mutex> lock(m_pending_mutex);
            m_stop = true;
        }
        m_wake.notify_all();
        m_timer.join();
    }

    void output_buffer::set_publisher(publisher publish)
    {
        std::lock_guard<std::mutex> lock(m_flush_mutex);
        m_publish = std::move(publish);
    }

    void output_buffer::set_parent(nl::json parent)
    {
        std::lock_guard<std::mutex> lock(m_pending_mutex);
        m_parent = std::move(parent);
    }

    void output_buffer::write(const std::string& stream, const std::string& text)
    {
        if (text.empty())
        {
            return;
        }
        bool over_limit = false;
        {
            std::lock_guard<std::mutex> lock(m_pending_mutex);
            if (m_runs.empty())
            {
                m_oldest = std::chrono::steady_clock::now();
                m_wake.notify_one();
            }
            if (!m_runs.empty() && m_runs.back().stream == stream)
            {
                m_runs.back().text += text;
            }
            else if (m_runs.size() >= max_runs)
            {
                // Past max_runs switches, a write joins the latest run of its own stream: each stream keeps
                // its order, and only the interleaving past the first switches is coarser.
                auto same = std::find_if(m_runs.rbegin(), m_runs.rend(),
                                         [&](const run& r) { return r.stream == stream; });
                if (same != m_runs.rend())
                {
                    same->text += text;
                }
                else
                {
                    m_runs.push_back({stream, text});
                }
            }
            else
            {
                m_runs.push_back({stream, text});
            }
            m_pending_bytes += text.size();
            over_limit = m_pending_bytes >= m_limit;
        }
        if (over_limit)
        {
            flush();
        }
    }

    void output_buffer::flush()
    {
        std::lock_guard<std::mutex> flushing(m_flush_mutex);
        if (!m_publish)
        {
            return;  // kept until the server can publish
        }
        std::vector<run> runs;
        nl::json parent;
        {
            std::lock_guard<std::mutex> lock(m_pending_mutex);
            runs.swap(m_runs);
            m_pending_bytes = 0;
            parent = m_parent;
        }
        for (const run& r : runs)
        {
            m_publish(r.stream, r.text, parent);
            ++m_messages;
        }
    }

    void output_buffer::timer_loop()
    {
        std::unique_lock<std::mutex> lock(m_pending_mutex);
        while (!m_stop)
        {
            if (m_runs.empty())
            {
                m_wake.wait(lock);
                continue;
            }
            auto due = m_oldest + m_interval;
            if (std::chrono::steady_clock::now() < due)
            {
                m_wake.wait_until(lock, due);
                continue;
            }
            lock.unlock();
            flush();
            lock.lock();
            if (!m_runs.empty() && std::chrono::steady_clock::now() >= m_oldest + m_interval)
            {
                // Nothing could be published yet (no publisher): try again after another interval.
                m_oldest = std::chrono::steady_clock::now();
            }
        }
    }
}
