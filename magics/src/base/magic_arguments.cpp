#include "magic_arguments.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "errors.hpp"
#include "text.hpp"

namespace xcuda
{
    std::string magic_arguments::parsed::value(const std::string& name, const std::string& fallback) const
    {
        auto it = values.find(name);
        return it == values.end() || it->second.empty() ? fallback : it->second.back();
    }

    std::vector<std::string> magic_arguments::parsed::all(const std::string& name) const
    {
        auto it = values.find(name);
        return it == values.end() ? std::vector<std::string>{} : it->second;
    }

    magic_arguments::magic_arguments(std::string magic, std::string synopsis, std::string description)
        : m_magic(std::move(magic))
        , m_synopsis(std::move(synopsis))
        , m_description(std::move(description))
    {
    }

    magic_arguments& magic_arguments::add(option spec)
    {
        m_options.push_back(std::move(spec));
        return *this;
    }

    magic_arguments& magic_arguments::trailing_as(trailing kind, std::string hint)
    {
        m_trailing = kind;
        m_trailing_hint = std::move(hint);
        return *this;
    }

    magic_arguments& magic_arguments::epilog(std::string text)
    {
        m_epilog = std::move(text);
        return *this;
    }

    magic_arguments& magic_arguments::pass_unknown(std::function<bool(const std::string&)> accepts, std::string what,
                                                   std::function<bool(const std::string&)> takes_value)
    {
        m_accepts = std::move(accepts);
        m_passed_to = std::move(what);
        m_takes_value = std::move(takes_value);
        return *this;
    }

    std::vector<magic_arguments::word> magic_arguments::split_words(const std::string& line)
    {
        std::vector<word> words;
        word current;
        bool in_word = false;
        char quote = 0;
        auto start = [&](std::size_t i) {
            if (!in_word)
            {
                current.begin = i;
                in_word = true;
            }
        };
        for (std::size_t i = 0; i < line.size(); ++i)
        {
            char c = line[i];
            if (quote)
            {
                if (c == quote)
                {
                    quote = 0;
                }
                else if (c == '\\' && quote == '"' && i + 1 < line.size())
                {
                    current.text += line[++i];
                }
                else
                {
                    current.text += c;
                }
            }
            else if (c == '\'' || c == '"')
            {
                start(i);
                quote = c;
            }
            else if (c == '\\' && i + 1 < line.size())
            {
                start(i);
                current.text += line[++i];
            }
            else if (std::isspace(static_cast<unsigned char>(c)))
            {
                if (in_word)
                {
                    words.push_back(std::move(current));
                    current = word{};
                    in_word = false;
                }
            }
            else
            {
                start(i);
                current.text += c;
            }
        }
        if (quote)
        {
            throw usage_error(std::string("unterminated ") + quote + " quote");
        }
        if (in_word)
        {
            words.push_back(std::move(current));
        }
        return words;
    }

    std::vector<std::string> magic_arguments::split(const std::string& line)
    {
        std::vector<std::string> words;
        for (word& w : split_words(line))
        {
            words.push_back(std::move(w.text));
        }
        return words;
    }

    std::string magic_arguments::problem(const std::string& text) const
    {
        return m_magic + ": " + text + " (see " + m_magic + " -h)";
    }

    const magic_arguments::option* magic_arguments::find(const std::string& name) const
    {
        for (const option& spec : m_options)
        {
            if (std::find(spec.names.begin(), spec.names.end(), name) != spec.names.end())
            {
                return &spec;
            }
        }
        return nullptr;
    }

    namespace
    {
        std::size_t edit_distance(const std::string& a, const std::string& b)
        {
            std::vector<std::size_t> row(b.size() + 1);
            for (std::size_t j = 0; j <= b.size(); ++j)
            {
                row[j] = j;
            }
            for (std::size_t i = 1; i <= a.size(); ++i)
            {
                std::size_t diagonal = row[0];
                row[0] = i;
                for (std::size_t j = 1; j <= b.size(); ++j)
                {
                    std::size_t above = row[j];
                    row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
                    diagonal = above;
                }
            }
            return row[b.size()];
        }
    }

    std::string magic_arguments::suggestion(const std::string& name) const
    {
        std::string stem = name.substr(0, name.find('='));
        std::string best;
        std::size_t best_distance = 3;  // at most two edits away
        for (const option& spec : m_options)
        {
            for (const std::string& candidate : spec.names)
            {
                std::size_t d = edit_distance(stem, candidate);
                if (d < best_distance && d < candidate.size() / 2 + 1)
                {
                    best = spec.names.front();
                    best_distance = d;
                }
            }
        }
        return best;
    }

    magic_arguments::parsed magic_arguments::parse(const std::string& line) const
    {
        parsed result;
        std::vector<word> words;
        try
        {
            words = split_words(line);
        }
        catch (const usage_error& e)
        {
            throw usage_error(problem(std::string(e.what()) + " in the line"));
        }
        for (std::size_t i = 0; i < words.size(); ++i)
        {
            const std::string& w = words[i].text;
            if (w == "--")
            {
                if (m_trailing == trailing::text)
                {
                    std::size_t after = words[i].begin + 2;
                    result.text = after < line.size() ? text::trim(line.substr(after)) : std::string();
                }
                else
                {
                    for (std::size_t j = i + 1; j < words.size(); ++j)
                    {
                        if (m_accepts)
                            result.passed.push_back(words[j].text);
                        else if (m_trailing == trailing::words)
                            result.words.push_back(words[j].text);
                        else
                            throw usage_error(problem("unexpected word '" + words[j].text + "' after --"));
                    }
                }
                break;
            }
            if (w == "-h" || w == "--help")
            {
                result.help = true;
                continue;
            }
            if (w.size() > 1 && w[0] == '-')
            {
                std::string name = w;
                std::string value;
                bool has_value = false;
                const option* spec = find(w);
                if (!spec && w.find('=') != std::string::npos)
                {
                    name = w.substr(0, w.find('='));
                    spec = find(name);
                    value = w.substr(w.find('=') + 1);
                    has_value = spec != nullptr;
                }
                if (!spec)
                {
                    for (const option& candidate : m_options)
                    {
                        for (const std::string& short_name : candidate.names)
                        {
                            if (candidate.glued && short_name.size() == 2 && w.rfind(short_name, 0) == 0)
                            {
                                spec = &candidate;
                                name = short_name;
                                value = w.substr(2);
                                has_value = true;
                            }
                        }
                    }
                }
                if (!spec)
                {
                    if (m_accepts && m_accepts(w))
                    {
                        result.passed.push_back(w);
                        if (m_takes_value && m_takes_value(w) && i + 1 < words.size() && words[i + 1].text != "--" &&
                            !find(words[i + 1].text))
                        {
                            result.passed.push_back(words[++i].text);  // its value, as the tool reads it
                        }
                        continue;
                    }
                    std::string near = suggestion(w);
                    std::string text = "unknown option " + w;
                    if (!near.empty())
                    {
                        text += "; did you mean " + near + "?";
                    }
                    else if (!m_passed_to.empty())
                    {
                        text += "; options for " + m_passed_to + " go after a bare --";
                    }
                    throw usage_error(problem(text));
                }
                const std::string& canonical = spec->names.front();
                if (spec->value.empty())
                {
                    if (has_value)
                    {
                        throw usage_error(problem("option " + name + " takes no value"));
                    }
                    result.values[canonical].push_back("");
                    continue;
                }
                if (!has_value)
                {
                    if (i + 1 >= words.size())
                    {
                        throw usage_error(problem("option " + name + " needs a value (" + spec->value + ")"));
                    }
                    value = words[++i].text;
                }
                if (!spec->repeatable)
                {
                    result.values[canonical].clear();
                }
                result.values[canonical].push_back(value);
                continue;
            }
            if (m_trailing == trailing::text)
            {
                result.text = text::trim(line.substr(words[i].begin));
                break;
            }
            if (m_trailing == trailing::words)
            {
                result.words.push_back(w);
                continue;
            }
            throw usage_error(problem("unexpected word '" + w + "'" +
                                      (m_trailing_hint.empty() ? std::string() : ": " + m_trailing_hint)));
        }
        return result;
    }

    long long magic_arguments::integer(const parsed& p, const std::string& name, long long fallback,
                                       long long minimum) const
    {
        if (!p.has(name))
        {
            return fallback;
        }
        std::string text = p.value(name);
        errno = 0;
        char* end = nullptr;
        long long number = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0' || errno == ERANGE)
        {
            throw usage_error(problem(name + " needs an integer, got '" + text + "'"));
        }
        if (number < minimum)
        {
            throw usage_error(problem(name + " needs an integer of at least " + std::to_string(minimum) + ", got " + text));
        }
        return number;
    }

    double magic_arguments::number(const parsed& p, const std::string& name, double fallback, bool positive) const
    {
        if (!p.has(name))
        {
            return fallback;
        }
        std::string text = p.value(name);
        char* end = nullptr;
        double number = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || (positive && !(number > 0)))
        {
            throw usage_error(problem(name + " needs a " + (positive ? "positive " : "") + "number, got '" + text + "'"));
        }
        return number;
    }

    std::string magic_arguments::usage() const
    {
        std::string out = m_magic + " [options]" + (m_synopsis.empty() ? "" : " " + m_synopsis) + "\n";
        if (!m_description.empty())
        {
            out += "\n" + m_description + "\n";
        }
        out += "\nOptions:\n";
        auto row = [&out](const std::string& left, const std::string& help) {
            std::string line = "  " + left;
            std::vector<std::string> help_lines = text::split_lines(help);
            if (line.size() >= 24)
            {
                out += line + "\n";
                line.clear();
            }
            for (std::size_t k = 0; k < help_lines.size(); ++k)
            {
                line.resize(24, ' ');
                out += line + help_lines[k] + "\n";
                line.clear();
            }
            if (help_lines.empty())
            {
                out += line + "\n";
            }
        };
        for (const option& spec : m_options)
        {
            std::string left;
            for (const std::string& name : spec.names)
            {
                left += (left.empty() ? "" : ", ") + name + (spec.value.empty() || name != spec.names.front() ? "" : " " + spec.value);
            }
            row(left, spec.help + (spec.repeatable ? " (repeatable)" : ""));
        }
        row("-h, --help", "show this help");
        if (!m_epilog.empty())
        {
            out += "\n" + m_epilog + "\n";
        }
        return out;
    }
}
