#pragma once
// Nsight Compute's CSV pages read into values: the raw page (every metric by name), the details page
// (each section's labelled figures and the rules' advice) and the SASS source page (per instruction:
// executions and sampled warp stalls). What each looks like is in tests/fixtures/ncu/, captured from
// ncu 2025.3 on an H200 (README there).
//
// The format, as ncu 2025.3 writes it:
//   - lines the profiler or the program printed come first ("==PROF== ...", the program's output);
//     the table starts at its header line;
//   - every field is quoted, and quotes inside a field are NOT doubled (a CUDA source line
//     `"extern "C" ..."` is written as is), so a field ends at a quote followed by a comma or the
//     end of the line; a row may end with a comma and nothing after it;
//   - numbers carry thousands separators ("3,199,011,446.41"); "no data", "n/a" and "-" mean none;
//   - raw page: a header row of metric names, a row of units, then one row per profiled launch;
//   - details page: one row per figure: ..., "Section Name","Metric Name","Metric Unit",
//     "Metric Value", then for a rule's row "Rule Name","Rule Type","Rule Description",
//     "Estimated Speedup Type","Estimated Speedup";
//   - source page (--print-source sass): "Kernel Name","NAME", then a header row ("Address","Source",
//     "Warp Stall Sampling (All Samples)", ..., "Instructions Executed", ..., "stall_long_sb", ...,
//     "stall_long_sb (Not Issued)", ...), then one row per instruction;
//   - source page (--print-source cuda,sass): per file "File Path","PATH" and "Function Name","NAME",
//     a header row "Line No","Source","Address","Source",... , then for each source line that has
//     code a row with its number and text (its metrics summed), followed by its instructions' rows
//     (line number and text empty).
// Units are normalised to base units (ns, byte, byte/s, hz, %) whatever --print-units said.
//
// Pure functions over text; no state; never throw on odd rows (they are skipped), but throw
// tool_error when a page has no table at all (ncu's own message is then in the text).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace xcuda
{
    struct ncu_value
    {
        std::string text;             // as written ("3,199,011,446.41", "PolicySpread", "(256, 1, 1)")
        std::string unit;             // normalised ("ns", "byte/s", "%", "" ...)
        std::optional<double> number; // in that unit; none for text and "no data"
    };

    struct ncu_rule
    {
        std::string section;
        std::string name;        // "SOLBottleneck"
        std::string type;        // "OPT", "WRN", "INF"
        std::string description;
        std::optional<double> speedup;  // estimated, percent
    };

    struct ncu_details
    {
        // (section name, metric label) -> value, e.g. ("Occupancy", "Achieved Occupancy").
        std::map<std::pair<std::string, std::string>, ncu_value> figures;
        std::vector<ncu_rule> rules;
        std::string kernel;
        const ncu_value* find(const std::string& section, const std::string& label) const;
    };

    struct ncu_instruction
    {
        std::uint64_t address = 0;
        std::string text;  // the SASS as ncu shows it, trimmed
        std::string file;  // cuda,sass page: the source file and line ncu put it under ("" / 0 on the
        int line = 0;      // sass page, which has no lines)
        double samples = 0;             // warp stall samples, all
        double samples_not_issued = 0;  // those where the warp did not issue
        double executed = 0;            // warp-level instructions executed
        std::map<std::string, double> stalls;  // "long_sb" -> samples (all samples, by reason)
    };

    struct ncu_source
    {
        std::string kernel;
        std::vector<ncu_instruction> instructions;
        bool has_lines = false;  // from the cuda,sass page: each instruction's file and line are set
    };

    class ncu_report
    {
    public:
        // The first launch's metrics by name ("gpu__time_duration.sum" -> 60800 ns).
        static std::map<std::string, ncu_value> parse_raw(const std::string& output);
        static ncu_details parse_details(const std::string& output);
        static ncu_source parse_source(const std::string& output);

        // One line of ncu's CSV split into its fields (the rules above).
        static std::vector<std::string> split_row(const std::string& line);
        // A value from its text and unit: thousands separators dropped, the unit made a base unit.
        static ncu_value value(const std::string& text, const std::string& unit);

        // What ncu said went wrong, from its output: its "==ERROR==" lines, or "" when none.
        static std::string errors(const std::string& output);
        // A stall reason's column name ("stall_long_sb") in words ("long scoreboard: waiting for a
        // global or local memory result").
        static std::string stall_reason(const std::string& reason);
    };
}
