#include "compile_cache.hpp"

#include "standard_headers.hpp"

namespace xcuda
{
    std::string compile_cache::make_key(const std::string& source, const compile_options& options,
                                        const std::map<std::string, std::string>& headers)
    {
        return make_key(nvrtc_compiler::version(), source, options, headers);
    }

    std::string compile_cache::make_key(std::pair<int, int> nvrtc, const std::string& source,
                                        const compile_options& options, const std::map<std::string, std::string>& headers)
    {
        // Length-prefixed fields: no separator inside one field can make two inputs collide.
        std::string key;
        key.reserve(source.size() + 256);
        auto field = [&key](const std::string& text) {
            key += std::to_string(text.size());
            key += ':';
            key += text;
        };
        auto [major, minor] = nvrtc;
        field("nvrtc " + std::to_string(major) + "." + std::to_string(minor));
        field("standard headers " + standard_headers::digest());
        field(source);
        for (const auto& option : options.to_nvrtc_options())
        {
            field(option);
        }
        field("names");
        for (const auto& name : options.name_expressions)
        {
            field(name);
        }
        field("headers");
        for (const auto& [name, text] : headers)
        {
            field(name);
            field(text);
        }
        return key;
    }

    std::shared_ptr<const compile_result> compile_cache::find(const std::string& key)
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        auto it = m_entries.find(key);
        if (it == m_entries.end())
        {
            ++m_misses;
            return nullptr;
        }
        ++m_hits;
        m_order.splice(m_order.begin(), m_order, it->second.position);
        return it->second.result;
    }

    void compile_cache::insert(const std::string& key, std::shared_ptr<const compile_result> result)
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        auto it = m_entries.find(key);
        if (it != m_entries.end())
        {
            it->second.result = std::move(result);
            m_order.splice(m_order.begin(), m_order, it->second.position);
            return;
        }
        m_order.push_front(key);
        m_entries.emplace(key, entry{std::move(result), m_order.begin()});
        evict_locked();
    }

    void compile_cache::evict_locked()
    {
        while (m_entries.size() > m_capacity && !m_order.empty())
        {
            m_entries.erase(m_order.back());
            m_order.pop_back();
        }
    }

    void compile_cache::clear()
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_entries.clear();
        m_order.clear();
    }

    std::size_t compile_cache::size() const
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        return m_entries.size();
    }

    void compile_cache::set_capacity(std::size_t entries)
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_capacity = entries == 0 ? 1 : entries;
        evict_locked();
    }
}
