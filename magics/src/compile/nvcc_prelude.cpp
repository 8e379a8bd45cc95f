#include "nvcc_prelude.hpp"

#include <cctype>
#include <set>
#include <vector>

#include "standard_headers.hpp"

namespace xcuda
{
    namespace
    {
        bool macro_name_char(char c)
        {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
        }

        // The names `text` #defines anywhere (`#define NAME`, `#  define NAME(`): a scan of directives,
        // not a preprocessor; a #define inside a comment or a false #if branch counts too, which only
        // leaves a prelude name out that NVRTC would then not see (as without the prelude).
        void defined_names(const std::string& text, std::set<std::string>& names)
        {
            std::size_t at = 0;
            while ((at = text.find('#', at)) != std::string::npos)
            {
                std::size_t p = at + 1;
                at = p;
                while (p < text.size() && (text[p] == ' ' || text[p] == '\t'))
                {
                    ++p;
                }
                if (text.compare(p, 6, "define") != 0 || p + 6 >= text.size() || macro_name_char(text[p + 6]))
                {
                    continue;
                }
                p += 6;
                while (p < text.size() && (text[p] == ' ' || text[p] == '\t'))
                {
                    ++p;
                }
                std::size_t start = p;
                while (p < text.size() && macro_name_char(text[p]))
                {
                    ++p;
                }
                if (p > start)
                {
                    names.insert(text.substr(start, p - start));
                }
            }
        }

        // "NAME", "NAME=VALUE", "NAME(x)=..." of a -D option: the name.
        std::string macro_name(const std::string& definition)
        {
            std::size_t end = 0;
            while (end < definition.size() && macro_name_char(definition[end]))
            {
                ++end;
            }
            return definition.substr(0, end);
        }

        const std::string& stand_in()
        {
            static const std::string text = [] {
                for (const standard_header& header : standard_headers::all())
                {
                    if (std::string(header.name) == nvcc_prelude::header_name)
                    {
                        return std::string(header.text);
                    }
                }
                return std::string();
            }();
            return text;
        }
    }

    std::string nvcc_prelude::for_unit(const std::string& source, const std::map<std::string, std::string>& header_cells,
                                       const std::vector<std::string>& defines, const std::vector<std::string>& options)
    {
        std::set<std::string> own;
        defined_names(source, own);
        for (const auto& [name, text] : header_cells)
        {
            defined_names(text, own);
        }
        for (const std::string& definition : defines)
        {
            own.insert(macro_name(definition));
        }
        for (std::size_t i = 0; i < options.size(); ++i)
        {
            const std::string& option = options[i];
            for (const std::string prefix : {"--define-macro=", "-D"})
            {
                if (option.rfind(prefix, 0) == 0)
                {
                    std::string definition = option.substr(prefix.size());
                    if (definition.empty() && prefix == "-D" && i + 1 < options.size())
                    {
                        definition = options[++i];
                    }
                    own.insert(macro_name(definition));
                    break;
                }
            }
        }
        const std::string& text = stand_in();
        if (own.empty())
        {
            return text;
        }
        std::string kept;
        for (std::size_t line = 0; line < text.size();)
        {
            std::size_t end = text.find('\n', line);
            end = end == std::string::npos ? text.size() : end + 1;
            std::set<std::string> names;
            defined_names(text.substr(line, end - line), names);
            if (names.empty() || own.count(*names.begin()) == 0)
            {
                kept.append(text, line, end - line);
            }
            line = end;
        }
        return kept;
    }

    std::string nvcc_prelude::option()
    {
        return std::string("--pre-include=") + header_name;
    }
}

namespace xcuda
{
    std::string nvcc_prelude::without_its_redefinitions(const std::string& log)
    {
        const std::string mark = std::string(" of ") + header_name + ")";
        if (log.find(mark) == std::string::npos)
        {
            return log;
        }
        // NVRTC's log is paragraphs split by blank lines: a diagnostic (its line, the source line, the
        // caret) or a remark.
        std::vector<std::string> kept;
        bool warnings_left = false;
        std::size_t remark = std::string::npos;
        for (std::size_t at = 0; at < log.size();)
        {
            std::size_t end = log.find("\n\n", at);
            end = end == std::string::npos ? log.size() : end;
            std::string paragraph = log.substr(at, end - at);
            at = end;
            while (at < log.size() && log[at] == '\n')
            {
                ++at;
            }
            std::string first = paragraph.substr(0, paragraph.find('\n'));
            if (first.find("warning #47-D") != std::string::npos && first.find(mark) != std::string::npos)
            {
                continue;
            }
            if (first.rfind("Remark: The warnings can be suppressed", 0) == 0)
            {
                remark = kept.size();
            }
            else if (first.find(": warning") != std::string::npos)
            {
                warnings_left = true;
            }
            kept.push_back(std::move(paragraph));
        }
        std::string result;
        for (std::size_t i = 0; i < kept.size(); ++i)
        {
            if (i == remark && !warnings_left)
            {
                continue;
            }
            result += (result.empty() ? "" : "\n\n") + kept[i];
        }
        return result;
    }
}
