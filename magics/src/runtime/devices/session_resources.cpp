#include "session_resources.hpp"

#include <algorithm>

namespace xcuda
{
    void session_resources::add(session_resource* resource)
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_resources.insert(resource);
    }

    void session_resources::remove(session_resource* resource) noexcept
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_resources.erase(resource);
    }

    std::pair<std::size_t, std::size_t> session_resources::totals(const std::string& kind) const
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        std::pair<std::size_t, std::size_t> totals{0, 0};
        for (const session_resource* resource : m_resources)
        {
            if (kind == resource->kind())
            {
                ++totals.first;
                totals.second += resource->bytes();
            }
        }
        return totals;
    }

    std::vector<std::string> session_resources::descriptions(const std::string& kind) const
    {
        std::vector<std::string> found;
        std::lock_guard<std::mutex> lock(m_mutex);
        for (const session_resource* resource : m_resources)
        {
            if (kind == resource->kind())
            {
                found.push_back(resource->describe());
            }
        }
        std::sort(found.begin(), found.end());
        return found;
    }

    std::vector<session_resource*> session_resources::take_all()
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        std::vector<session_resource*> taken(m_resources.begin(), m_resources.end());
        std::stable_sort(taken.begin(), taken.end(), [](const session_resource* a, const session_resource* b) {
            return a->release_rank() < b->release_rank();
        });
        m_resources.clear();
        return taken;
    }
}
