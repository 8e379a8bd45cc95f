#include "capture_registry.hpp"

#include <algorithm>

namespace xcuda
{
    void capture_registry::open(cuda_graph* graph, CUstream stream)
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_open.push_back({graph, stream, std::this_thread::get_id()});
        m_count.fetch_add(1, std::memory_order_release);
    }

    bool capture_registry::close(const cuda_graph* graph) noexcept
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        auto found = std::find_if(m_open.begin(), m_open.end(), [&](const capture& c) { return c.graph == graph; });
        if (found == m_open.end())
        {
            return false;
        }
        m_open.erase(found);
        m_count.fetch_sub(1, std::memory_order_release);
        return true;
    }

    bool capture_registry::is_open(const cuda_graph* graph) const noexcept
    {
        if (graph == nullptr || m_count.load(std::memory_order_acquire) == 0)
        {
            return false;
        }
        std::lock_guard<std::mutex> lock(m_mutex);
        return std::any_of(m_open.begin(), m_open.end(), [&](const capture& c) { return c.graph == graph; });
    }

    cuda_graph* capture_registry::find_of_this_thread() const noexcept
    {
        std::thread::id self = std::this_thread::get_id();
        std::lock_guard<std::mutex> lock(m_mutex);
        for (const capture& c : m_open)
        {
            if (c.thread == self)
            {
                return c.graph;
            }
        }
        return nullptr;
    }

    cuda_graph* capture_registry::find_on_stream(CUstream stream) const noexcept
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        for (const capture& c : m_open)
        {
            if (c.stream == stream)
            {
                return c.graph;
            }
        }
        return nullptr;
    }

    bool capture_registry::updating_on_this_thread() const noexcept
    {
        if (m_count.load(std::memory_order_acquire) == 0)
        {
            return false;
        }
        std::thread::id self = std::this_thread::get_id();
        std::lock_guard<std::mutex> lock(m_mutex);
        return std::find(m_updating.begin(), m_updating.end(), self) != m_updating.end();
    }

    capture_registry::updating::updating(capture_registry& registry) : m_registry(registry)
    {
        std::lock_guard<std::mutex> lock(registry.m_mutex);
        registry.m_updating.push_back(std::this_thread::get_id());
        registry.m_count.fetch_add(1, std::memory_order_release);
    }

    capture_registry::updating::~updating()
    {
        std::lock_guard<std::mutex> lock(m_registry.m_mutex);
        auto found = std::find(m_registry.m_updating.begin(), m_registry.m_updating.end(), std::this_thread::get_id());
        if (found != m_registry.m_updating.end())
        {
            m_registry.m_updating.erase(found);
            m_registry.m_count.fetch_sub(1, std::memory_order_release);
        }
    }
}
