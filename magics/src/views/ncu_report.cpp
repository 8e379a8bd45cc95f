#include "ncu_report.hpp"

#include <cmath>
#include <limits>

#include <cstdlib>

#include "errors.hpp"
#include "text.hpp"

namespace xcuda
{
    namespace
    {
        // The rows of the table that starts at the first line beginning with `first_field`.
        std::vector<std::vector<std::string>> table(const std::string& output, const std::string& first_field,
                                                    const char* page)
        {
            std::vector<std::string> lines = text::split_lines(output);
            std::size_t start = 0;
            while (start < lines.size() && lines[start].compare(0, first_field.size() + 2, "\"" + first_field + "\"") != 0)
            {
                ++start;
            }
            if (start == lines.size())
            {
                std::string said = ncu_report::errors(output);
                throw tool_error(std::string("ncu's ") + page + " page has no table" +
                                 (said.empty() ? std::string(" (it printed nothing ncu-like)") : ": " + said));
            }
            std::vector<std::vector<std::string>> rows;
            for (std::size_t i = start; i < lines.size(); ++i)
            {
                if (!lines[i].empty() && lines[i][0] == '"')
                {
                    rows.push_back(ncu_report::split_row(lines[i]));
                }
            }
            return rows;
        }

        std::size_t column(const std::vector<std::string>& header, const std::string& name)
        {
            for (std::size_t i = 0; i < header.size(); ++i)
            {
                if (header[i] == name)
                {
                    return i;
                }
            }
            return std::string::npos;
        }

        std::string field(const std::vector<std::string>& row, std::size_t index)
        {
            return index < row.size() ? row[index] : std::string();
        }

        double number_or_zero(const std::string& text)
        {
            ncu_value v = ncu_report::value(text, "");
            return v.number ? *v.number : 0.0;
        }

        // A source line number from ncu's "Line No" column; 0 (no line) for what is not one (negative,
        // fractional, beyond an int, not a number): converting an out-of-range double to int is undefined.
        int line_number_or_zero(const std::string& text)
        {
            double number = number_or_zero(text);
            if (!(number >= 1 && number <= static_cast<double>(std::numeric_limits<int>::max())) || number != std::floor(number))
            {
                return 0;
            }
            return static_cast<int>(number);
        }

        // Scale of an SI prefix at the start of unit for one of the bases that take one.
        bool split_prefix(const std::string& unit, double& scale, std::string& base)
        {
            static const char* bases[] = {"byte", "hz", "Hz", "inst", "cycle", "sector", "request", "warp", "thread", "block"};
            static const std::pair<char, double> prefixes[] = {{'K', 1e3}, {'k', 1e3}, {'M', 1e6}, {'G', 1e9}, {'T', 1e12}};
            for (const auto& prefix : prefixes)
            {
                if (unit.size() < 2 || unit[0] != prefix.first)
                {
                    continue;
                }
                for (const char* b : bases)
                {
                    std::string rest = unit.substr(1);
                    if (rest.compare(0, std::string(b).size(), b) == 0)
                    {
                        scale = prefix.second;
                        base = rest;
                        return true;
                    }
                }
            }
            return false;
        }
    }

    const ncu_value* ncu_details::find(const std::string& section, const std::string& label) const
    {
        auto it = figures.find({section, label});
        return it == figures.end() ? nullptr : &it->second;
    }

    std::vector<std::string> ncu_report::split_row(const std::string& line)
    {
        std::vector<std::string> fields;
        std::size_t i = 0;
        while (i < line.size())
        {
            if (line[i] != '"')
            {
                // An unquoted field (ncu writes none, but a trailing comma leaves an empty one).
                std::size_t comma = line.find(',', i);
                fields.push_back(line.substr(i, comma == std::string::npos ? std::string::npos : comma - i));
                if (comma == std::string::npos)
                {
                    break;
                }
                i = comma + 1;
                continue;
            }
            // A quoted field ends at a quote followed by a comma or the end of the line: quotes inside
            // are not escaped.
            std::size_t end = i + 1;
            for (;;)
            {
                end = line.find('"', end);
                if (end == std::string::npos || end + 1 == line.size() || line[end + 1] == ',')
                {
                    break;
                }
                ++end;
            }
            if (end == std::string::npos)
            {
                fields.push_back(line.substr(i + 1));
                break;
            }
            fields.push_back(line.substr(i + 1, end - i - 1));
            i = end + 1;
            if (i < line.size() && line[i] == ',')
            {
                ++i;
            }
        }
        return fields;
    }

    ncu_value ncu_report::value(const std::string& text, const std::string& unit)
    {
        ncu_value v;
        v.text = text;
        v.unit = unit;
        std::string digits;
        for (char c : text)
        {
            if (c != ',')
            {
                digits += c;
            }
        }
        digits = text::trim(digits);
        if (!digits.empty())
        {
            char* end = nullptr;
            double number = std::strtod(digits.c_str(), &end);
            if (end && *end == '\0' && end != digits.c_str())
            {
                v.number = number;
            }
        }
        // Units to their base: time in ns, sizes in bytes, rates per second, frequencies in hz.
        double scale = 1.0;
        std::string base;
        if (unit == "us" || unit == "usecond")
        {
            scale = 1e3;
            v.unit = "ns";
        }
        else if (unit == "ms" || unit == "msecond")
        {
            scale = 1e6;
            v.unit = "ns";
        }
        else if (unit == "s" || unit == "second")
        {
            scale = 1e9;
            v.unit = "ns";
        }
        else if (unit == "nsecond")
        {
            v.unit = "ns";
        }
        else if (split_prefix(unit, scale, base))
        {
            v.unit = base == "Hz" ? "hz" : base;
        }
        else if (unit == "Hz")
        {
            v.unit = "hz";
        }
        if (v.number)
        {
            *v.number *= scale;
        }
        return v;
    }

    std::map<std::string, ncu_value> ncu_report::parse_raw(const std::string& output)
    {
        std::vector<std::vector<std::string>> rows = table(output, "ID", "raw");
        std::map<std::string, ncu_value> metrics;
        if (rows.size() < 3)
        {
            throw tool_error("ncu's raw page has no profiled launch" +
                             (errors(output).empty() ? std::string() : ": " + errors(output)));
        }
        const std::vector<std::string>& names = rows[0];
        const std::vector<std::string>& units = rows[1];
        const std::vector<std::string>& values = rows[2];
        for (std::size_t i = 0; i < names.size(); ++i)
        {
            metrics[names[i]] = value(field(values, i), field(units, i));
        }
        return metrics;
    }

    ncu_details ncu_report::parse_details(const std::string& output)
    {
        std::vector<std::vector<std::string>> rows = table(output, "ID", "details");
        ncu_details details;
        const std::vector<std::string>& header = rows[0];
        std::size_t kernel = column(header, "Kernel Name");
        std::size_t section = column(header, "Section Name");
        std::size_t label = column(header, "Metric Name");
        std::size_t unit = column(header, "Metric Unit");
        std::size_t metric = column(header, "Metric Value");
        std::size_t rule = column(header, "Rule Name");
        std::size_t type = column(header, "Rule Type");
        std::size_t description = column(header, "Rule Description");
        std::size_t speedup = column(header, "Estimated Speedup");
        if (section == std::string::npos || label == std::string::npos || metric == std::string::npos)
        {
            throw tool_error("ncu's details page lacks the Section Name, Metric Name or Metric Value column");
        }
        std::string first_id;
        for (std::size_t r = 1; r < rows.size(); ++r)
        {
            const std::vector<std::string>& row = rows[r];
            if (first_id.empty())
            {
                first_id = field(row, 0);
                details.kernel = field(row, kernel);
            }
            if (field(row, 0) != first_id)
            {
                break;  // a second launch: the replay makes one, the first is the one
            }
            if (!field(row, rule).empty())
            {
                ncu_rule advice;
                advice.section = field(row, section);
                advice.name = field(row, rule);
                advice.type = field(row, type);
                advice.description = field(row, description);
                advice.speedup = value(field(row, speedup), "").number;
                details.rules.push_back(advice);
                continue;
            }
            if (field(row, label).empty())
            {
                continue;
            }
            details.figures[{field(row, section), field(row, label)}] = value(field(row, metric), field(row, unit));
        }
        return details;
    }

    ncu_source ncu_report::parse_source(const std::string& output)
    {
        ncu_source source;
        std::string file;
        int line = 0;
        std::vector<std::string> header;
        std::size_t address = std::string::npos;
        std::size_t text_column = std::string::npos;
        std::size_t samples = std::string::npos;
        std::size_t not_issued = std::string::npos;
        std::size_t executed = std::string::npos;
        std::vector<std::pair<std::size_t, std::string>> stalls;
        bool any_table = false;
        for (const std::string& raw : text::split_lines(output))
        {
            if (raw.empty() || raw[0] != '"')
            {
                continue;
            }
            std::vector<std::string> row = split_row(raw);
            const std::string& first = row[0];
            if (first == "Kernel Name" || first == "Function Name")
            {
                if (source.kernel.empty())
                {
                    source.kernel = field(row, 1);
                }
                continue;
            }
            if (first == "File Path" || first == "File Name")
            {
                file = field(row, 1);
                line = 0;
                continue;
            }
            if (first == "Address" || first == "Line No")
            {
                any_table = true;
                header = row;
                address = column(header, "Address");
                // The instruction's text is the "Source" column after "Address" (the one before it, on
                // the cuda,sass page, is the source line's).
                text_column = address == std::string::npos ? std::string::npos : address + 1;
                samples = column(header, "Warp Stall Sampling (All Samples)");
                not_issued = column(header, "Warp Stall Sampling (Not-issued Samples)");
                executed = column(header, "Instructions Executed");
                stalls.clear();
                for (std::size_t i = 0; i < header.size(); ++i)
                {
                    const std::string& name = header[i];
                    if (name.compare(0, 6, "stall_") == 0 && name.find(' ') == std::string::npos)
                    {
                        stalls.emplace_back(i, name.substr(6));
                    }
                }
                source.has_lines = first == "Line No";
                continue;
            }
            if (header.empty())
            {
                continue;
            }
            if (source.has_lines && !first.empty())
            {
                line = line_number_or_zero(first);  // a source line's row: its instructions follow
                continue;
            }
            std::string where = field(row, address);
            if (where.compare(0, 2, "0x") != 0)
            {
                continue;
            }
            ncu_instruction instruction;
            instruction.address = std::strtoull(where.c_str(), nullptr, 16);
            instruction.text = text::trim(field(row, text_column));
            instruction.file = source.has_lines ? file : std::string();
            instruction.line = source.has_lines ? line : 0;
            instruction.samples = number_or_zero(field(row, samples));
            instruction.samples_not_issued = number_or_zero(field(row, not_issued));
            instruction.executed = number_or_zero(field(row, executed));
            for (const auto& stall : stalls)
            {
                double count = number_or_zero(field(row, stall.first));
                if (count > 0)
                {
                    instruction.stalls[stall.second] = count;
                }
            }
            source.instructions.push_back(std::move(instruction));
        }
        if (!any_table)
        {
            std::string said = errors(output);
            throw tool_error("ncu's source page has no table" + (said.empty() ? std::string() : ": " + said));
        }
        return source;
    }

    std::string ncu_report::errors(const std::string& output)
    {
        std::string said;
        for (const std::string& line : text::split_lines(output))
        {
            if (line.compare(0, 9, "==ERROR==") == 0)
            {
                said += (said.empty() ? "" : "\n") + text::trim(line.substr(9));
            }
        }
        return said;
    }

    std::string ncu_report::stall_reason(const std::string& reason)
    {
        static const std::map<std::string, std::string> words = {
            {"barrier", "barrier: waiting at __syncthreads() for the other warps of the block"},
            {"branch_resolving", "branch resolving: waiting for a branch target"},
            {"dispatch", "dispatch: the dispatcher held the warp back"},
            {"drain", "drain: waiting for memory stores to leave before exit"},
            {"imc", "constant cache miss: waiting for a __constant__ or parameter value"},
            {"lg", "local/global queue full: too many memory requests in flight (lg throttle)"},
            {"long_sb", "long scoreboard: waiting for a global or local memory result"},
            {"math", "math pipe busy (math pipe throttle)"},
            {"membar", "memory barrier: waiting for a __threadfence()"},
            {"mio", "MIO queue full: shared memory, special math or other MIO instructions (MIO throttle)"},
            {"misc", "miscellaneous"},
            {"no_inst", "no instruction: instruction cache miss"},
            {"not_selected", "not selected: ready, but another warp issued"},
            {"selected", "selected: issuing an instruction"},
            {"short_sb", "short scoreboard: waiting for shared memory or a special math result"},
            {"sleep", "sleeping (__nanosleep)"},
            {"sleeping", "sleeping (__nanosleep)"},
            {"tex", "texture queue full (tex throttle)"},
            {"wait", "fixed-latency wait: a dependency on the previous instructions"},
        };
        auto it = words.find(reason);
        return it == words.end() ? reason : it->second;
    }
}
