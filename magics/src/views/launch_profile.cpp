#include "launch_profile.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "text.hpp"

namespace xcuda
{
    namespace
    {
        std::optional<double> metric(const std::map<std::string, ncu_value>& metrics, const std::string& name)
        {
            auto it = metrics.find(name);
            return it == metrics.end() ? std::nullopt : it->second.number;
        }

        std::optional<double> figure(const ncu_details& details, const std::string& section, const std::string& label)
        {
            const ncu_value* v = details.find(section, label);
            return v ? v->number : std::nullopt;
        }

        std::optional<double> either(std::optional<double> a, std::optional<double> b)
        {
            return a ? a : b;
        }

        std::optional<double> sum(std::initializer_list<std::pair<std::optional<double>, double>> terms)
        {
            std::optional<double> total;
            for (const auto& term : terms)
            {
                if (term.first)
                {
                    total = total.value_or(0) + *term.first * term.second;
                }
            }
            return total;
        }

        std::string percent(const std::optional<double>& value)
        {
            return value ? text::format("%.0f%%", *value) : "n/a";
        }

        std::string rate(double bytes_per_second)
        {
            return bytes_per_second >= 1e12 ? text::format("%.2f TB/s", bytes_per_second / 1e12)
                                            : text::format("%.1f GB/s", bytes_per_second / 1e9);
        }

        std::string duration(double ns)
        {
            if (ns >= 1e6)
                return text::format("%.3f ms", ns / 1e6);
            if (ns >= 1e3)
                return text::format("%.2f us", ns / 1e3);
            return text::format("%.0f ns", ns);
        }

        // "/*0040*/" at the start of an nvdisasm instruction line: its offset, or -1.
        long long sass_offset(const std::string& line)
        {
            std::size_t open = line.find("/*");
            if (open == std::string::npos)
            {
                return -1;
            }
            char* end = nullptr;
            long long offset = std::strtoll(line.c_str() + open + 2, &end, 16);
            return end && end[0] == '*' && end[1] == '/' ? offset : -1;
        }

        // The opcode of a SASS instruction, without a guard ("@!P0 EXIT" -> "EXIT") or an address.
        std::string opcode(const std::string& instruction)
        {
            std::string s = instruction;
            std::size_t close = s.find("*/");
            if (s.find("/*") != std::string::npos && close != std::string::npos)
            {
                s = s.substr(close + 2);
            }
            s = text::trim(s);
            if (!s.empty() && s[0] == '@')
            {
                std::size_t space = s.find_first_of(" \t");
                s = space == std::string::npos ? "" : text::trim(s.substr(space));
            }
            std::size_t end = 0;
            while (end < s.size() && !std::isspace(static_cast<unsigned char>(s[end])) && s[end] != ';')
            {
                ++end;
            }
            return s.substr(0, end);
        }
    }

    std::pair<std::string, double> line_figures::top_stall() const
    {
        std::pair<std::string, double> top{"", 0.0};
        for (const auto& stall : stalls)
        {
            // "selected" is issuing, not waiting: it is never the reason a line is slow.
            if (stall.first != "selected" && stall.second > top.second)
            {
                top = stall;
            }
        }
        if (samples > 0)
        {
            top.second /= samples;
        }
        return top;
    }

    launch_profile launch_profile::from_pages(const std::string& raw, const std::string& details_output)
    {
        launch_profile p;
        p.metrics = ncu_report::parse_raw(raw);
        ncu_details details = ncu_report::parse_details(details_output);
        const auto& m = p.metrics;
        const std::string sol = "GPU Speed Of Light Throughput";
        p.kernel = details.kernel;
        auto name = m.find("device__attribute_display_name");
        if (name != m.end())
        {
            p.device = name->second.text;
        }
        p.duration_ns = either(metric(m, "gpu__time_duration.sum"), figure(details, sol, "Duration"));
        p.dram_bytes = either(metric(m, "dram__bytes.sum"),
                              sum({{metric(m, "dram__bytes_read.sum"), 1}, {metric(m, "dram__bytes_write.sum"), 1}}));
        p.dram_bytes_per_second = metric(m, "dram__bytes.sum.per_second");
        if (!p.dram_bytes_per_second && p.dram_bytes && p.duration_ns && *p.duration_ns > 0)
        {
            p.dram_bytes_per_second = *p.dram_bytes / (*p.duration_ns * 1e-9);
        }
        p.dram_percent = either(metric(m, "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
                                figure(details, sol, "DRAM Throughput"));
        p.memory_percent = either(metric(m, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
                                  figure(details, sol, "Memory Throughput"));
        if (!p.memory_percent)
        {
            p.memory_percent = p.dram_percent;
        }
        p.sm_percent = either(metric(m, "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
                              figure(details, sol, "Compute (SM) Throughput"));
        p.achieved_occupancy = either(metric(m, "sm__warps_active.avg.pct_of_peak_sustained_active"),
                                      figure(details, "Occupancy", "Achieved Occupancy"));
        p.theoretical_occupancy = either(metric(m, "sm__maximum_warps_per_active_cycle_pct"),
                                         figure(details, "Occupancy", "Theoretical Occupancy"));
        p.registers = either(metric(m, "launch__registers_per_thread"),
                             figure(details, "Launch Statistics", "Registers Per Thread"));
        p.static_shared = either(metric(m, "launch__shared_mem_per_block_static"),
                                 figure(details, "Launch Statistics", "Static Shared Memory Per Block"));
        p.dynamic_shared = either(metric(m, "launch__shared_mem_per_block_dynamic"),
                                  figure(details, "Launch Statistics", "Dynamic Shared Memory Per Block"));
        // Thread-level floating-point instructions, counted per SM (sm__) or per sub-partition (smsp__):
        // the sums over the GPU are the same.
        auto op = [&](const char* which) {
            std::string name = std::string("sass_thread_inst_executed_op_") + which + "_pred_on.sum";
            return either(metric(m, "sm__" + name), metric(m, "smsp__" + name));
        };
        p.fp32_flops = sum({{op("fadd"), 1}, {op("fmul"), 1}, {op("ffma"), 2}});
        p.fp64_flops = sum({{op("dadd"), 1}, {op("dmul"), 1}, {op("dfma"), 2}});
        std::optional<double> clock = metric(m, "sm__cycles_elapsed.avg.per_second");
        auto peak = [&](const char* which) -> std::optional<double> {
            std::optional<double> per_cycle =
                metric(m, std::string("sm__sass_thread_inst_executed_op_") + which + "_pred_on.sum.peak_sustained");
            if (!per_cycle || !clock)
            {
                return std::nullopt;
            }
            return 2 * *per_cycle * *clock;  // a fused multiply-add is two operations
        };
        p.peak_fp32_flops_per_second = peak("ffma");
        p.peak_fp64_flops_per_second = peak("dfma");
        std::optional<double> dram_peak_per_cycle = metric(m, "dram__bytes.sum.peak_sustained");
        std::optional<double> dram_clock = metric(m, "dram__cycles_elapsed.avg.per_second");
        if (dram_peak_per_cycle && dram_clock)
        {
            p.peak_dram_bytes_per_second = *dram_peak_per_cycle * *dram_clock;
        }
        else if (p.dram_bytes_per_second && p.dram_percent && *p.dram_percent > 0)
        {
            // ncu's percent is of its own peak: the peak follows from the two.
            p.peak_dram_bytes_per_second = *p.dram_bytes_per_second / (*p.dram_percent / 100.0);
        }
        p.rules = details.rules;
        p.lines_note = "no source-level figures were collected";
        return p;
    }

    void launch_profile::attach_source(const ncu_source& source, const code_listing& kernel_sass,
                                       const std::string& cell_file)
    {
        lines.clear();
        if (source.instructions.empty())
        {
            lines_note = "ncu's source page lists no instructions for this kernel";
            return;
        }
        std::map<int, line_figures> by_line;
        auto count = [&](const ncu_instruction& i, int line) {
            line_figures& f = by_line[line];
            f.line = line;
            f.executed += i.executed;
            f.samples += i.samples;
            for (const auto& stall : i.stalls)
            {
                f.stalls[stall.first] += stall.second;
            }
        };
        if (source.has_lines)
        {
            // ncu put each instruction under its line: those of the cell count, a header's go to 0.
            for (const ncu_instruction& i : source.instructions)
            {
                const std::string tail = "/" + cell_file;
                bool in_cell = i.file == cell_file ||
                               (i.file.size() > tail.size() &&
                                i.file.compare(i.file.size() - tail.size(), tail.size(), tail) == 0);
                count(i, in_cell ? i.line : 0);
            }
        }
        else
        {
            // code_listing::from_sass already kept only the cell's lines (others are 0).
            std::map<long long, const code_line*> by_offset;
            for (const code_line& l : kernel_sass)
            {
                long long offset = l.kind == code_line::instruction ? sass_offset(l.text) : -1;
                if (offset >= 0)
                {
                    by_offset.emplace(offset, &l);
                }
            }
            if (by_offset.empty())
            {
                lines_note = "the CUBIN's SASS has no instruction addresses to match ncu's with";
                return;
            }
            // ncu lists the function from its first instruction: offsets are from the lowest address.
            std::uint64_t base = source.instructions.front().address;
            for (const ncu_instruction& i : source.instructions)
            {
                base = std::min(base, i.address);
            }
            std::size_t matched = 0;
            std::size_t compared = 0;
            for (const ncu_instruction& i : source.instructions)
            {
                auto found = by_offset.find(static_cast<long long>(i.address - base));
                int line = 0;
                if (found != by_offset.end())
                {
                    ++compared;
                    if (opcode(found->second->text) == opcode(i.text))
                    {
                        ++matched;
                        line = found->second->source_line;
                    }
                }
                count(i, line);
            }
            if (compared == 0 || matched * 10 < compared * 9)
            {
                lines_note = "ncu's SASS (" + std::to_string(source.instructions.size()) +
                             " instructions) does not match the CUBIN's (" + std::to_string(matched) + " of " +
                             std::to_string(compared) + " agree), so no per-line figures are shown";
                return;
            }
        }
        for (const auto& entry : by_line)
        {
            if (entry.first != 0)
            {
                lines.push_back(entry.second);
            }
        }
        auto unmapped = by_line.find(0);
        if (unmapped != by_line.end())
        {
            lines.push_back(unmapped->second);
        }
        lines_note.clear();
    }

    std::string launch_profile::bound() const
    {
        if (!memory_percent && !sm_percent)
        {
            return "";
        }
        double memory = memory_percent.value_or(0);
        double compute = sm_percent.value_or(0);
        if (std::max(memory, compute) < 60.0)
        {
            return "latency";
        }
        return memory >= compute ? "memory" : "compute";
    }

    std::string launch_profile::verdict() const
    {
        std::string kind = bound();
        if (kind.empty())
        {
            return "no verdict: ncu reported neither memory nor SM throughput";
        }
        std::string memory = "memory at " + percent(memory_percent) + " of its peak";
        if (dram_bytes_per_second)
        {
            memory += " (DRAM " + rate(*dram_bytes_per_second) + ", " + percent(dram_percent) + ")";
        }
        std::string compute = "compute (SM) at " + percent(sm_percent);
        auto headroom = [](std::optional<double> pct) {
            return pct && *pct > 0 ? text::format("%.1fx", 100.0 / *pct) : std::string("?");
        };
        if (kind == "memory")
        {
            return "memory-bound: " + memory + "; " + compute + ". At the peak it could run at most " +
                   headroom(memory_percent) + " faster; beyond that, move fewer bytes.";
        }
        if (kind == "compute")
        {
            return "compute-bound: " + compute + " of its peak; " + memory + ". At the peak it could run at most " +
                   headroom(sm_percent) + " faster; beyond that, execute fewer or cheaper instructions.";
        }
        std::string occupancy;
        if (achieved_occupancy && theoretical_occupancy)
        {
            occupancy = "; achieved occupancy " + percent(achieved_occupancy) + " of " + percent(theoretical_occupancy) +
                        " theoretical";
        }
        double busiest = std::max(memory_percent.value_or(0), sm_percent.value_or(0));
        return "latency-bound: neither " + memory + " nor " + compute + " is near its peak (the busier is " +
               text::format("%.1fx", busiest > 0 ? 100.0 / busiest : 0.0) + " below it)" + occupancy +
               ". The warps wait: more of them in flight, or more independent work per thread, would help.";
    }

    std::optional<double> launch_profile::flops_per_second() const
    {
        std::optional<double> flops = sum({{fp32_flops, 1}, {fp64_flops, 1}});
        if (!flops || !duration_ns || *duration_ns <= 0)
        {
            return std::nullopt;
        }
        return *flops / (*duration_ns * 1e-9);
    }

    namespace
    {
        std::optional<double> scaled(const std::optional<double>& value, double scale)
        {
            return value ? std::optional<double>(*value * scale) : std::nullopt;
        }
    }

    std::optional<double> launch_profile::duration_us() const { return scaled(duration_ns, 1e-3); }
    std::optional<double> launch_profile::dram_gbs() const { return scaled(dram_bytes_per_second, 1e-9); }
    std::optional<double> launch_profile::peak_dram_gbs() const { return scaled(peak_dram_bytes_per_second, 1e-9); }
    std::optional<double> launch_profile::gflops() const { return scaled(flops_per_second(), 1e-9); }

    std::optional<double> launch_profile::arithmetic_intensity() const
    {
        std::optional<double> flops = sum({{fp32_flops, 1}, {fp64_flops, 1}});
        if (!flops || !dram_bytes || *dram_bytes <= 0)
        {
            return std::nullopt;
        }
        return *flops / *dram_bytes;
    }

    text_table launch_profile::table() const
    {
        text_table t;
        t.title = kernel + (device.empty() ? "" : " on " + device);
        t.columns = {"", ""};
        auto add = [&](const std::string& name, const std::string& value) { t.rows.push_back({name, value}); };
        add("duration", duration_ns ? duration(*duration_ns) : "n/a");
        std::string dram = "n/a";
        if (dram_bytes_per_second)
        {
            dram = rate(*dram_bytes_per_second) + " (" + percent(dram_percent) + " of peak";
            if (peak_dram_bytes_per_second)
            {
                dram += " " + rate(*peak_dram_bytes_per_second);
            }
            dram += ")";
        }
        add("DRAM throughput", dram);
        if (dram_bytes)
        {
            add("DRAM traffic", text::bytes(*dram_bytes));
        }
        add("memory throughput", percent(memory_percent) + " of peak (busiest of DRAM, L1, L2)");
        add("SM throughput", percent(sm_percent) + " of peak");
        add("occupancy", percent(achieved_occupancy) + " achieved, " + percent(theoretical_occupancy) + " theoretical");
        add("registers", registers ? text::format("%.0f per thread", *registers) : "n/a");
        std::string shared = static_shared ? text::bytes(*static_shared) + " static" : std::string("n/a");
        if (dynamic_shared)
        {
            shared += ", " + text::bytes(*dynamic_shared) + " dynamic";
        }
        add("shared memory", shared + " per block");
        if (std::optional<double> achieved = flops_per_second())
        {
            add("floating point", text::format("%.1f GFLOP/s", *achieved / 1e9) +
                                      (arithmetic_intensity() ? text::format(", %.3f FLOP/byte", *arithmetic_intensity())
                                                              : std::string()));
        }
        add("verdict", verdict());
        return t;
    }

    text_table launch_profile::lines_table(const std::string& source, std::size_t most) const
    {
        text_table t;
        t.title = "Where the time goes (warp stall samples by source line)";
        t.columns = {"line", "samples", "instructions", "main stall reason", "source"};
        t.empty_text = lines_note.empty() ? "no samples" : lines_note;
        double all_samples = 0;
        double all_executed = 0;
        for (const line_figures& f : lines)
        {
            all_samples += f.samples;
            all_executed += f.executed;
        }
        std::vector<const line_figures*> order;
        for (const line_figures& f : lines)
        {
            order.push_back(&f);
        }
        std::stable_sort(order.begin(), order.end(), [](const line_figures* a, const line_figures* b) {
            return (a->line != 0) > (b->line != 0) || ((a->line != 0) == (b->line != 0) && a->samples > b->samples);
        });
        std::vector<std::string> source_lines = text::split_lines(source);
        for (std::size_t k = 0; k < order.size() && k < most; ++k)
        {
            const line_figures& f = *order[k];
            auto [reason, share] = f.top_stall();
            std::string text_of_line = f.line > 0 && static_cast<std::size_t>(f.line) <= source_lines.size()
                                           ? text::trim(source_lines[static_cast<std::size_t>(f.line) - 1])
                                           : std::string("(no source line)");
            t.rows.push_back({f.line ? std::to_string(cell.editor_line(f.line)) : "-",
                              all_samples > 0 ? text::format("%.0f%%", 100.0 * f.samples / all_samples) : "-",
                              all_executed > 0 ? text::format("%.0f%%", 100.0 * f.executed / all_executed) : "-",
                              reason.empty() ? "-" : ncu_report::stall_reason(reason) + text::format(" (%.0f%%)", 100 * share),
                              text_of_line});
        }
        return t;
    }

    std::string launch_profile::text(const std::string& source) const
    {
        std::string out = table_view::text(table());
        if (!lines.empty() || !lines_note.empty())
        {
            out += "\n" + table_view::text(lines_table(source));
        }
        for (const ncu_rule& rule : rules)
        {
            out += "\nncu " + rule.name + " (" + rule.type + "): " + rule.description;
        }
        return out;
    }

    std::string launch_profile::html(const std::string& source) const
    {
        std::string out = "<div class=\"xcuda-profile\">" + table_view::html(table());
        if (!lines.empty() || !lines_note.empty())
        {
            out += table_view::html(lines_table(source));
        }
        if (!rules.empty())
        {
            out += "<details><summary>ncu's advice (" + std::to_string(rules.size()) + ")</summary><ul>";
            for (const ncu_rule& rule : rules)
            {
                out += "<li><b>" + text::html_escape(rule.name) + "</b> (" + text::html_escape(rule.type) + "): " +
                       text::html_escape(rule.description) + "</li>";
            }
            out += "</ul></details>";
        }
        return out + "</div>";
    }

    std::map<int, std::pair<std::string, double>> launch_profile::line_notes() const
    {
        std::map<int, std::pair<std::string, double>> notes;
        double all_samples = 0;
        double all_executed = 0;
        for (const line_figures& f : lines)
        {
            all_samples += f.samples;
            all_executed += f.executed;
        }
        for (const line_figures& f : lines)
        {
            if (f.line == 0)
            {
                continue;
            }
            double share = all_samples > 0 ? f.samples / all_samples : 0.0;
            auto [reason, reason_share] = f.top_stall();
            std::string note = text::format("%.0f%% of stall samples", 100 * share);
            if (!reason.empty() && reason_share > 0)
            {
                std::string words = ncu_report::stall_reason(reason);
                note += " (" + words.substr(0, words.find(':')) + text::format(" %.0f%%)", 100 * reason_share);
            }
            if (all_executed > 0)
            {
                note += text::format(", %.0f%% of instructions", 100 * f.executed / all_executed);
            }
            notes[f.line] = {note, share};
        }
        return notes;
    }
}
