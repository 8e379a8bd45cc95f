#include "module_registry.hpp"

#include <algorithm>
#include <optional>

#include "errors.hpp"

namespace xcuda
{
    module_registry::module_registry(cuda_session& session, class compiler& compiler)
        : m_session(session)
        , m_compiler(compiler)
        , m_builder(compiler)
    {
    }

    std::string module_registry::key_for(const std::string& name, const std::vector<kernel_signature>& signatures)
    {
        if (!name.empty())
        {
            return "name:" + name;
        }
        // The cell's own kernels name it; kernels it only includes from a header cell are shared with
        // every cell that includes it, so they name a cell only when it has none of its own.
        std::vector<std::string> names;
        for (const auto& signature : signatures)
        {
            if (signature.file.empty())
            {
                names.push_back(signature.qualified_name);
            }
        }
        if (names.empty())
        {
            for (const auto& signature : signatures)
            {
                names.push_back(signature.qualified_name);
            }
        }
        std::sort(names.begin(), names.end());
        std::string key = "kernels:";
        for (const auto& kernel : names)
        {
            key += kernel + ",";
        }
        return key;
    }

    build_result module_registry::build(const std::string& name, compile_recipe recipe)
    {
        cell_plan plan = m_builder.prepare(name, std::move(recipe));
        build_result result;
        std::string key = key_for(name, plan.signatures);
        if (!plan.unreadable)
        {
            if (auto same = find_same(key, plan.cache_key))
            {
                m_compiler.memory().find(plan.cache_key);  // counts the hit, keeps the entry recent
                result.module = same;
                result.reused = true;
                result.cache_hit = true;
                install(key, same);
                return result;
            }
        }
        compiler::output compiled = m_builder.compile(plan);
        result.cache_hit = compiled.origin != "nvrtc";
        result.module = std::make_shared<cuda_module>(m_session, m_compiler, plan.module_name, std::move(plan.recipe),
                                                      std::move(compiled.binary), std::move(plan.signatures),
                                                      plan.cache_key);
        result.module->set_origin(compiled.origin);
        install(key, result.module);
        return result;
    }

    std::vector<std::shared_ptr<cuda_module>> module_registry::set_header(const std::string& name,
                                                                          const std::string& text, bool in_a_cell)
    {
        std::vector<std::shared_ptr<cuda_module>> stale;
        std::lock_guard<std::mutex> lock(m_mutex);
        m_headers[name] = text;
        if (in_a_cell)
        {
            m_header_cells.insert(name);
        }
        else
        {
            m_header_cells.erase(name);
        }
        for (const auto& entry : m_entries)
        {
            const auto& used = entry.second->headers();
            auto it = used.find(name);
            if (it != used.end() && it->second != text)
            {
                entry.second->mark_stale(name);
                stale.push_back(entry.second);
            }
        }
        return stale;
    }

    std::vector<std::shared_ptr<cuda_module>> module_registry::remove_header(const std::string& name, bool& found)
    {
        std::vector<std::shared_ptr<cuda_module>> stale;
        std::lock_guard<std::mutex> lock(m_mutex);
        found = m_headers.erase(name) > 0;
        m_header_cells.erase(name);
        for (const auto& entry : m_entries)
        {
            if (found && entry.second->headers().count(name))
            {
                entry.second->mark_stale(name);
                stale.push_back(entry.second);
            }
        }
        return stale;
    }

    std::set<std::string> module_registry::header_cells() const
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        return m_header_cells;
    }

    std::map<std::string, std::string> module_registry::headers() const
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        return m_headers;
    }

    std::map<std::string, std::string> module_registry::headers_for(const std::string& source) const
    {
        // Which header cells a text names in an #include "..." or <...>; then the same for those.
        std::lock_guard<std::mutex> lock(m_mutex);
        std::map<std::string, std::string> used;
        std::vector<const std::string*> pending{&source};
        while (!pending.empty())
        {
            const std::string& text = *pending.back();
            pending.pop_back();
            for (const auto& [name, header] : m_headers)
            {
                if (used.count(name))
                {
                    continue;
                }
                for (const std::string& spelled : {"\"" + name + "\"", "<" + name + ">"})
                {
                    std::size_t at = text.find(spelled);
                    if (at != std::string::npos && text.rfind("include", at) != std::string::npos)
                    {
                        used[name] = header;
                        pending.push_back(&header);
                        break;
                    }
                }
            }
        }
        return used;
    }

    std::shared_ptr<cuda_module> module_registry::find_same(const std::string& key, const std::string& cache_key) const
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        for (const auto& [entry_key, module] : m_entries)
        {
            if (entry_key == key && module->cache_key() == cache_key)
            {
                return module;
            }
        }
        return nullptr;
    }

    std::vector<std::shared_ptr<cuda_module>> module_registry::install(const std::string& key,
                                                                        std::shared_ptr<cuda_module> module)
    {
        // Kernels of a header cell are in every module that includes it: only the cells' own count.
        auto shares_a_kernel = [&module](const cuda_module& other) {
            for (const auto& a : other.signatures())
            {
                for (const auto& b : module->signatures())
                {
                    if (a.file.empty() && b.file.empty() && a.qualified_name == b.qualified_name)
                    {
                        return true;
                    }
                }
            }
            return false;
        };
        std::vector<std::shared_ptr<cuda_module>> replaced;
        std::vector<std::pair<std::string, std::shared_ptr<cuda_module>>> kept;
        std::lock_guard<std::mutex> lock(m_mutex);
        for (auto& entry : m_entries)
        {
            if (entry.second == module)
            {
                continue;
            }
            if (entry.first == key || shares_a_kernel(*entry.second))
            {
                replaced.push_back(std::move(entry.second));
            }
            else
            {
                kept.push_back(std::move(entry));
            }
        }
        kept.emplace_back(key, std::move(module));
        m_entries = std::move(kept);
        return replaced;
    }

    std::vector<std::shared_ptr<cuda_module>> module_registry::modules() const
    {
        std::vector<std::shared_ptr<cuda_module>> result;
        std::lock_guard<std::mutex> lock(m_mutex);
        for (const auto& entry : m_entries)
        {
            result.push_back(entry.second);
        }
        return result;
    }

    void module_registry::clear()
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_entries.clear();
    }
}
