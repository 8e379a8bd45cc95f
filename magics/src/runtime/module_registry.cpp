#include "module_registry.hpp"

#include <algorithm>
#include <optional>

#include "errors.hpp"

namespace xcuda
{
    module_registry::module_registry(cuda_session& session, class compiler& compiler)
        : m_session(session)
        , m_compiler(compiler)
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

    build_result module_registry::build(const std::string& name, const std::string& source, compile_options options,
                                        const std::map<std::string, std::string>& headers)
    {
        // A declaration the parser cannot read is reported only if NVRTC accepts the source: when
        // the source is wrong, NVRTC's message is the better one.
        // The parser sees what NVRTC sees: the header cells, the -I folders and the -D macros.
        std::vector<kernel_signature> signatures;
        std::optional<signature_error> unreadable;
        parse_context context{headers, options.include_dirs, options.defines};
        std::string parse_key = source;
        for (const auto& [header, text] : headers)
        {
            parse_key += '\0' + header + '\0' + text;
        }
        for (const auto& list : {options.include_dirs, options.defines})
        {
            parse_key += '\1';
            for (const auto& item : list)
            {
                parse_key += item + '\0';
            }
        }
        if (!parsed_before(parse_key, signatures, unreadable))
        {
            try
            {
                signatures = parse_kernel_signatures(source, context);
            }
            catch (const signature_error& e)
            {
                unreadable = e;
            }
            remember_parse(parse_key, signatures, unreadable);
        }
        // Instantiations asked for by name expression ("saxpy<float>") become kernels of their own.
        std::vector<kernel_signature> instances;
        for (const auto& expression : options.name_expressions)
        {
            if (expression.empty() || expression[0] == '&' || expression.find('<') == std::string::npos)
            {
                continue;
            }
            std::string base = expression.substr(0, expression.find('<'));
            base.erase(base.find_last_not_of(" \t") + 1);
            auto it = std::find_if(signatures.begin(), signatures.end(), [&](const kernel_signature& s) {
                return s.is_template() && (s.name == base || s.qualified_name == base);
            });
            if (it == signatures.end())
            {
                throw usage_error("--instantiate " + expression + ": the cell has no template kernel named '" +
                                            base + "'");
            }
            instances.push_back(it->instantiate(expression));
        }
        for (const auto& signature : signatures)
        {
            // An explicit instantiation or specialization in the source (template __global__ void
            // f<256>(...);) is found by its qualified name with the template arguments.
            if (!signature.extern_c && !signature.is_template() && signature.name.find('<') != std::string::npos &&
                std::find(options.name_expressions.begin(), options.name_expressions.end(), signature.qualified_name) ==
                    options.name_expressions.end())
            {
                options.name_expressions.push_back(signature.qualified_name);
            }
        }
        signatures.insert(signatures.end(), instances.begin(), instances.end());
        for (const auto& signature : signatures)
        {
            if (!signature.extern_c && !signature.is_template() && signature.name.find('<') == std::string::npos)
            {
                std::string expression = "&" + signature.qualified_name;
                if (std::find(options.name_expressions.begin(), options.name_expressions.end(), expression) ==
                    options.name_expressions.end())
                {
                    options.name_expressions.push_back(expression);
                }
            }
        }

        build_result result;
        std::string cache_key = m_compiler.key_for(source, options, headers);
        std::string key = key_for(name, signatures);
        if (!unreadable)
        {
            if (auto same = find_same(key, cache_key))
            {
                m_compiler.memory().find(cache_key);  // counts the hit, keeps the entry recent
                result.module = same;
                result.reused = true;
                result.cache_hit = true;
                install(key, same);
                return result;
            }
        }
        compiler::output compiled = m_compiler.compile(source, options, headers);
        result.cache_hit = compiled.origin != "nvrtc";
        if (unreadable)
        {
            throw *unreadable;
        }
        std::string module_name = name;
        if (module_name.empty())
        {
            for (const auto& signature : signatures)
            {
                module_name += (module_name.empty() ? "" : "+") + signature.name;
            }
            if (module_name.empty())
            {
                module_name = "cell";
            }
        }
        result.module = std::make_shared<cuda_module>(m_session, m_compiler, module_name, source, options,
                                                      std::move(compiled.binary), std::move(signatures), cache_key);
        result.module->set_origin(compiled.origin);
        result.module->set_headers(headers);
        install(key, result.module);
        return result;
    }

    std::vector<std::shared_ptr<cuda_module>> module_registry::set_header(const std::string& name,
                                                                          const std::string& text)
    {
        std::vector<std::shared_ptr<cuda_module>> stale;
        std::lock_guard<std::mutex> lock(m_mutex);
        m_headers[name] = text;
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

    bool module_registry::parsed_before(const std::string& source, std::vector<kernel_signature>& signatures,
                                        std::optional<signature_error>& unreadable) const
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        for (const auto& parse : m_parses)
        {
            if (parse.source == source)
            {
                signatures = parse.signatures;
                unreadable = parse.unreadable;
                return true;
            }
        }
        return false;
    }

    void module_registry::remember_parse(const std::string& source, const std::vector<kernel_signature>& signatures,
                                         const std::optional<signature_error>& unreadable)
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_parses.push_front(parse_result{source, signatures, unreadable});
        if (m_parses.size() > 32)
        {
            m_parses.pop_back();
        }
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
