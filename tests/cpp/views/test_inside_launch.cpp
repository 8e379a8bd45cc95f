// One launch seen from inside, without a GPU: ncu's and compute-sanitizer's recorded output read into figures
// and findings (tests/fixtures/, captured on an H200), and the tools found and run. The replay bundle the
// tools run: runtime/test_replay_bundle.cpp.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include "errors.hpp"
#include "launch_profile.hpp"
#include "ncu_report.hpp"
#include "replay_bundle.hpp"
#include "sanitizer_report.hpp"
#include "tool_finder.hpp"
#include "tool_process.hpp"

#ifndef XCUDA_TEST_RECORDINGS
#error "XCUDA_TEST_RECORDINGS is not defined: CMakeLists.txt sets it for xcuda_core_tests"
#endif

using namespace xcuda;

namespace
{
    std::string recording(const std::string& name)
    {
        const std::string path = std::string(XCUDA_TEST_RECORDINGS) + "/" + name;
        std::ifstream in(path, std::ios::binary);
        if (!in)
        {
            throw std::runtime_error("recorded output " + path + " cannot be opened");
        }
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
}

// ----- ncu's pages ---------------------------------------------------------------------------------

TEST(ncu_report, a_row_splits_at_quotes_followed_by_commas_only)
{
    EXPECT_EQ(ncu_report::split_row("\"a\",\"3,199.5\",\"\","),
              (std::vector<std::string>{"a", "3,199.5", ""}));  // a trailing comma opens no field
    // ncu does not double quotes inside a field.
    EXPECT_EQ(ncu_report::split_row("\"7\",\"extern \"C\" __global__ void k()\",\"-\""),
              (std::vector<std::string>{"7", "extern \"C\" __global__ void k()", "-"}));
}

TEST(ncu_report, values_lose_their_separators_and_units_become_base_units)
{
    EXPECT_DOUBLE_EQ(*ncu_report::value("3,199,011,446.41", "hz").number, 3199011446.41);
    ncu_value us = ncu_report::value("61.57", "us");
    EXPECT_EQ(us.unit, "ns");
    EXPECT_DOUBLE_EQ(*us.number, 61570.0);
    ncu_value tb = ncu_report::value("3.07", "Tbyte/s");
    EXPECT_EQ(tb.unit, "byte/s");
    EXPECT_DOUBLE_EQ(*tb.number, 3.07e12);
    EXPECT_EQ(ncu_report::value("1.49", "Ghz").unit, "hz");
    EXPECT_EQ(ncu_report::value("1.02", "Kbyte/block").unit, "byte/block");
    EXPECT_FALSE(ncu_report::value("no data", "%").number);
    EXPECT_FALSE(ncu_report::value("PolicySpread", "").number);
}

TEST(ncu_report, the_raw_page_gives_every_metric_by_name)
{
    auto metrics = ncu_report::parse_raw(recording("ncu/ncu_raw.csv"));
    EXPECT_DOUBLE_EQ(*metrics.at("gpu__time_duration.sum").number, 60800.0);
    EXPECT_EQ(metrics.at("gpu__time_duration.sum").unit, "ns");
    EXPECT_DOUBLE_EQ(*metrics.at("dram__bytes.sum.per_second").number, 3110168421052.63);
    EXPECT_DOUBLE_EQ(*metrics.at("launch__registers_per_thread").number, 16.0);
    EXPECT_EQ(metrics.at("device__attribute_display_name").text, "NVIDIA H200");
    EXPECT_EQ(metrics.at("launch__grid_size").text, "65,536");
}

TEST(ncu_report, the_details_page_gives_labelled_figures_and_the_rules)
{
    ncu_details d = ncu_report::parse_details(recording("ncu/ncu_full_details.csv"));
    EXPECT_EQ(d.kernel, "saxpy");
    const ncu_value* duration = d.find("GPU Speed Of Light Throughput", "Duration");
    ASSERT_TRUE(duration);
    EXPECT_DOUBLE_EQ(*duration->number, 61570.0);  // written as 61.57 us
    EXPECT_DOUBLE_EQ(*d.find("Occupancy", "Achieved Occupancy")->number, 73.75);
    bool bottleneck = false;
    for (const ncu_rule& rule : d.rules)
    {
        bottleneck = bottleneck || (rule.name == "SOLBottleneck" && rule.type == "OPT" &&
                                    rule.description.rfind("Memory is more heavily utilized", 0) == 0);
    }
    EXPECT_TRUE(bottleneck);
}

TEST(ncu_report, the_sass_page_gives_each_instruction_and_its_stalls)
{
    ncu_source s = ncu_report::parse_source(recording("ncu/ncu_source_sass.csv"));
    EXPECT_EQ(s.kernel, "saxpy");
    EXPECT_FALSE(s.has_lines);
    ASSERT_GT(s.instructions.size(), 27u);
    EXPECT_EQ(s.instructions[0].address, 0x7efbaf7a0000ull);
    EXPECT_EQ(s.instructions[0].text, "LDC R1, c[0x0][0x28]");
    const ncu_instruction& ffma = s.instructions[25];
    EXPECT_EQ(ffma.text, "FFMA R9, R2, UR6, R5");
    EXPECT_DOUBLE_EQ(ffma.samples, 4671.0);
    EXPECT_DOUBLE_EQ(ffma.executed, 524288.0);
    EXPECT_GT(ffma.stalls.at("long_sb"), 0.0);
}

TEST(ncu_report, the_cuda_and_sass_page_puts_each_instruction_under_its_line)
{
    ncu_source s = ncu_report::parse_source(recording("ncu/ncu_source_both.csv"));
    EXPECT_TRUE(s.has_lines);
    EXPECT_EQ(s.kernel, "saxpy");
    ASSERT_FALSE(s.instructions.empty());
    EXPECT_EQ(s.instructions[0].line, 7);
    EXPECT_EQ(s.instructions[0].file, "/work/main/.probe/probe.cu");
    for (const ncu_instruction& i : s.instructions)
    {
        if (i.text == "FFMA R9, R2, UR6, R5")
        {
            EXPECT_EQ(i.line, 11);
        }
    }
}

TEST(ncu_report, a_page_without_a_table_raises_with_ncus_own_words)
{
    try
    {
        ncu_report::parse_raw("==PROF== Connected\n==ERROR== Failed to profile \"k\": ERR_NVGPUCTRPERM\n");
        ADD_FAILURE() << "no exception";
    }
    catch (const tool_error& e)
    {
        EXPECT_NE(std::string(e.what()).find("ERR_NVGPUCTRPERM"), std::string::npos) << e.what();
    }
}

// ----- the profile's figures and verdict ------------------------------------------------------------

TEST(launch_profile, saxpy_is_memory_bound_and_its_time_goes_to_line_11)
{
    launch_profile p = launch_profile::from_pages(recording("ncu/ncu_raw.csv"), recording("ncu/ncu_details.csv"));
    EXPECT_EQ(p.kernel, "saxpy");
    EXPECT_EQ(p.device, "NVIDIA H200");
    EXPECT_DOUBLE_EQ(*p.duration_ns, 60800.0);
    EXPECT_DOUBLE_EQ(*p.dram_bytes, 134229248.0 + 54868992.0);
    EXPECT_NEAR(*p.dram_percent, 64.66, 1e-9);
    EXPECT_NEAR(*p.sm_percent, 30.60, 1e-9);
    EXPECT_NEAR(*p.memory_percent, 63.98, 1e-9);  // from the details page: no raw metric for it here
    EXPECT_NEAR(*p.achieved_occupancy, 73.45, 1e-9);
    EXPECT_DOUBLE_EQ(*p.theoretical_occupancy, 100.0);
    EXPECT_NEAR(*p.peak_dram_bytes_per_second / 1e12, 4.81, 0.01);  // bytes per second over the percent
    EXPECT_EQ(p.bound(), "memory");
    EXPECT_EQ(p.verdict().rfind("memory-bound: memory at 64% of its peak (DRAM 3.11 TB/s, 65%); compute (SM) at 31%.", 0),
              0u)
        << p.verdict();
    EXPECT_NE(p.verdict().find("at most 1.6x faster"), std::string::npos);

    p.attach_source(ncu_report::parse_source(recording("ncu/ncu_source_both.csv")), code_listing(), "probe.cu");
    ASSERT_TRUE(p.lines_note.empty()) << p.lines_note;
    const line_figures* top = nullptr;
    double samples = 0;
    for (const line_figures& f : p.lines)
    {
        samples += f.samples;
        if (!top || f.samples > top->samples)
        {
            top = &f;
        }
    }
    ASSERT_TRUE(top);
    EXPECT_EQ(top->line, 11);
    EXPECT_GT(top->samples / samples, 0.8);
    EXPECT_EQ(top->top_stall().first, "long_sb");
    auto notes = p.line_notes();
    EXPECT_EQ(notes.at(11).first.rfind("86% of stall samples (long scoreboard 95%)", 0), 0u) << notes.at(11).first;

    // The cell's lines only: the same page under another file name puts everything on line 0.
    p.attach_source(ncu_report::parse_source(recording("ncu/ncu_source_both.csv")), code_listing(), "cell");
    ASSERT_EQ(p.lines.size(), 1u);
    EXPECT_EQ(p.lines[0].line, 0);
}

TEST(launch_profile, low_throughput_on_both_sides_is_latency_bound)
{
    launch_profile p;
    p.memory_percent = 30;
    p.sm_percent = 12;
    p.achieved_occupancy = 20;
    p.theoretical_occupancy = 50;
    EXPECT_EQ(p.bound(), "latency");
    EXPECT_NE(p.verdict().find("latency-bound"), std::string::npos);
    EXPECT_NE(p.verdict().find("3.3x below it"), std::string::npos) << p.verdict();
    EXPECT_NE(p.verdict().find("achieved occupancy 20% of 50% theoretical"), std::string::npos);
    p.sm_percent = 85;
    EXPECT_EQ(p.bound(), "compute");
    launch_profile empty;
    EXPECT_EQ(empty.bound(), "");
}

TEST(launch_profile, sass_without_lines_is_matched_by_offset_and_opcode)
{
    ncu_source page = ncu_report::parse_source(recording("ncu/ncu_source_sass.csv"));
    // nvdisasm -c -g of the same function: the first instructions, with their lines.
    code_listing sass = code_listing::from_sass(
        "\t.section\t.text.saxpy,\"ax\",@progbits\n"
        "        .text.saxpy:\n"
        "\t//## File \"/x/cell\", line 7\n"
        "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
        "\t//## File \"/x/cell\", line 9\n"
        "        /*0010*/                   S2R R2, SR_TID.X ;\n");
    launch_profile p;
    p.attach_source(page, sass.only("saxpy"));
    ASSERT_TRUE(p.lines_note.empty()) << p.lines_note;
    std::map<int, double> samples;
    for (const line_figures& f : p.lines)
    {
        samples[f.line] = f.samples;
    }
    EXPECT_DOUBLE_EQ(samples.at(7), 53.0);
    EXPECT_DOUBLE_EQ(samples.at(9), 8.0);
    EXPECT_GT(samples.at(0), 5000.0);  // the rest: not in this short listing

    // A listing whose opcodes differ is not trusted.
    code_listing other = code_listing::from_sass(
        "\t.section\t.text.saxpy,\"ax\",@progbits\n"
        "        /*0000*/                   MOV R1, c[0x0][0x28] ;\n"
        "        /*0010*/                   MOV R2, SR_TID.X ;\n");
    p.attach_source(page, other.only("saxpy"));
    EXPECT_TRUE(p.lines.empty());
    EXPECT_NE(p.lines_note.find("does not match"), std::string::npos);
}

// ----- compute-sanitizer's reports ------------------------------------------------------------------

TEST(sanitizer_report, memcheck_names_the_write_its_line_thread_and_block)
{
    sanitizer_report r = sanitizer_report::parse(recording("sanitizer/memcheck.txt"), "memcheck", "probe.cu");
    EXPECT_EQ(r.errors, 2);
    EXPECT_EQ(r.summary, "ERROR SUMMARY: 2 errors");
    ASSERT_EQ(r.findings.size(), 2u);
    const sanitizer_finding& f = r.findings[0];
    EXPECT_EQ(f.title, "Invalid __global__ write of size 4 bytes");
    EXPECT_EQ(f.kind, "memory access");
    EXPECT_EQ(f.thread, "(232,0,0)");
    EXPECT_EQ(f.block, "(3,0,0)");
    ASSERT_EQ(f.locations.size(), 1u);
    EXPECT_EQ(f.locations[0].function, "oob_write");
    EXPECT_EQ(f.locations[0].offset, "0xc0");
    EXPECT_EQ(f.locations[0].file, "probe.cu");
    EXPECT_EQ(f.locations[0].line, 18);
    EXPECT_EQ(r.findings[1].kind, "api");
    EXPECT_EQ(r.kernel_findings(), 1u);
    EXPECT_NE(r.program_output.find("oob: unspecified launch failure"), std::string::npos);
    const std::string text = r.text(recording("probe.cu"));
    EXPECT_NE(text.find("at line 18 (oob_write+0xc0): data[i] = 1.0f;"), std::string::npos) << text;
    EXPECT_FALSE(r.clean());
}

TEST(sanitizer_report, racecheck_names_both_lines_of_the_race)
{
    sanitizer_report r = sanitizer_report::parse(recording("sanitizer/racecheck.txt"), "racecheck", "probe.cu");
    EXPECT_EQ(r.errors, 1);
    EXPECT_EQ(r.warnings, 0);
    ASSERT_EQ(r.findings.size(), 1u);
    const sanitizer_finding& f = r.findings[0];
    EXPECT_EQ(f.kind, "race");
    EXPECT_EQ(f.title, "Race on shared memory: a Write against Write and Read accesses");
    ASSERT_EQ(f.locations.size(), 3u);
    EXPECT_EQ(f.locations[0].line, 24);
    EXPECT_EQ(f.locations[2].access, "Read");
    EXPECT_EQ(f.locations[2].line, 25);
    EXPECT_EQ(f.locations[2].hazards, 640);
}

TEST(sanitizer_report, racecheck_hazards_carry_threads_and_block)
{
    sanitizer_report r = sanitizer_report::parse(recording("sanitizer/racecheck_hazard.txt"), "racecheck", "probe.cu");
    EXPECT_EQ(r.errors, 800);
    EXPECT_EQ(r.findings.size(), 100u);
    const sanitizer_finding& f = r.findings[0];
    EXPECT_EQ(f.title, "Potential WAW hazard detected at __shared__ 0x400");
    EXPECT_EQ(f.block, "(0,0,0)");
    ASSERT_EQ(f.locations.size(), 2u);
    EXPECT_EQ(f.locations[0].thread, "(32,0,0)");
    EXPECT_EQ(f.locations[1].thread, "(192,0,0)");
    EXPECT_NE(r.text("").find("... and 80 more"), std::string::npos);
}

TEST(sanitizer_report, a_clean_run_is_clean_and_leaks_are_counted)
{
    for (const char* file : {"sanitizer/initcheck.txt", "sanitizer/synccheck.txt"})
    {
        sanitizer_report r = sanitizer_report::parse(recording(file), "initcheck");
        EXPECT_TRUE(r.clean()) << file;
        EXPECT_EQ(r.errors, 0);
    }
    // The form of --leak-check full's lines (the replay frees all it allocates, so none come from it).
    sanitizer_report leaky = sanitizer_report::parse(
        "========= COMPUTE-SANITIZER\n"
        "========= Leaked 33,554,432 bytes at 0x7f0000000000\n"
        "=========     Saved host backtrace up to driver entry point at allocation time\n"
        "========= \n"
        "========= LEAK SUMMARY: 33554432 bytes leaked in 1 allocations\n"
        "========= ERROR SUMMARY: 1 error\n",
        "memcheck");
    EXPECT_EQ(leaky.leaked_bytes, 33554432);
    EXPECT_EQ(leaky.findings.size(), 1u);
    EXPECT_EQ(leaky.findings[0].kind, "leak");
    EXPECT_FALSE(leaky.clean());
}

// ----- the tools --------------------------------------------------------------------------------

TEST(tool_finder, a_missing_tool_says_where_it_looked)
{
    ::setenv("XCUDA_NCU", "/nonexistent/ncu", 1);
    try
    {
        tool_finder::require("ncu", "%cuda_profile");
        ADD_FAILURE() << "found a tool that is not there";
    }
    catch (const tool_not_found_error& e)
    {
        std::string what = e.what();
        EXPECT_NE(what.find("%cuda_profile needs ncu"), std::string::npos) << what;
        EXPECT_NE(what.find("$XCUDA_NCU = /nonexistent/ncu"), std::string::npos) << what;
    }
    ::unsetenv("XCUDA_NCU");
    tool_finder::search found = tool_finder::find("compute-sanitizer");
    bool bin = false;
    bool own_folder = false;
    for (const std::string& place : found.looked)
    {
        bin = bin || place == "/usr/local/cuda/bin/compute-sanitizer";
        own_folder = own_folder || place == "/usr/local/cuda/compute-sanitizer/compute-sanitizer";
    }
    EXPECT_TRUE(bin);
    // The toolkit's own compute-sanitizer folder comes after bin/: it is tried only when bin/ has none (a
    // machine without the tool; on the GPU host the search ends at bin/).
    EXPECT_TRUE(own_folder || found.path == "/usr/local/cuda/bin/compute-sanitizer") << found.path;
    ::setenv("XCUDA_COMPUTE_SANITIZER", "/bin/sh", 1);
    EXPECT_EQ(tool_finder::require("compute-sanitizer", "%cuda_sanitize"), "/bin/sh");
    ::unsetenv("XCUDA_COMPUTE_SANITIZER");
}

TEST(tool_process, a_program_runs_to_its_end_with_its_output_and_status)
{
    std::string folder = replay_bundle::make_folder();
    tool_process::outcome out =
        tool_process::run({"/bin/sh", "-c", "echo out; echo err >&2; pwd; exit 3"}, folder, "", [] { return false; });
    EXPECT_EQ(out.status, 3);
    EXPECT_NE(out.output.find("out\nerr\n"), std::string::npos) << out.output;
    EXPECT_NE(out.output.find(folder), std::string::npos);  // it ran in the folder given
    replay_bundle::remove_folder(folder);
    EXPECT_THROW(tool_process::run({"/nonexistent/tool"}, "", "/tmp/xcuda-test-tool.out", nullptr), tool_error);
    ::unlink("/tmp/xcuda-test-tool.out");
}

TEST(tool_process, an_interrupt_stops_the_program_and_what_it_started)
{
    std::string folder = replay_bundle::make_folder();
    int asked = 0;
    std::string marker = folder + "/child-alive";
    try
    {
        // The shell starts a grandchild that would write the marker after 2 s if it survived.
        tool_process::run({"/bin/sh", "-c", "(sleep 2; touch " + marker + ") & sleep 30"}, folder, "",
                          [&] { return ++asked > 5; });
        ADD_FAILURE() << "not interrupted";
    }
    catch (const interrupted_error& e)
    {
        EXPECT_NE(std::string(e.what()).find("sh was stopped"), std::string::npos) << e.what();
    }
    ::sleep(3);
    EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "the process group's grandchild survived the interrupt";
    replay_bundle::remove_folder(folder);
}

// Issue 28, item 9: a "Line No" that is no line number (too big for an int, negative, fractional, not a
// number) leaves its instructions without a line instead of converting an out-of-range double to int.
TEST(ncu_report, a_line_number_out_of_range_means_no_line)
{
    for (const char* line : {"1e30", "-5", "2.5", "nan", "inf", "3000000000"})
    {
        std::string page = std::string("\"File Path\",\"/x/probe.cu\"\n\"Function Name\",\"k\"\n") +
                           "\"Line No\",\"Source\",\"Address\",\"Source\"\n\"" + line + "\",\"x = 1;\",\"-\",\"-\"\n" +
                           "\"\",\"\",\"0x10\",\"      EXIT\"\n";
        ncu_source s = ncu_report::parse_source(page);
        ASSERT_EQ(s.instructions.size(), 1u) << line;
        EXPECT_EQ(s.instructions[0].line, 0) << line;
    }
}

// ----- the editor's numbering (base/cell_lines) ------------------------------------------------------

TEST(editor_lines, sanitizer_findings_and_profile_lines_are_numbered_as_the_editor_does)
{
    // A %%cuda cell: its source line 18 is the editor's 19 (the %%cuda line is line 1); the source text
    // shown beside it is still the source's line 18.
    sanitizer_report r = sanitizer_report::parse(recording("sanitizer/memcheck.txt"), "memcheck", "probe.cu");
    r.lines = cell_lines::cell(3);
    const std::string text = r.text(recording("probe.cu"));
    EXPECT_NE(text.find("at line 19 (oob_write+0xc0): data[i] = 1.0f;"), std::string::npos) << text;
    EXPECT_EQ(text.find("at line 18"), std::string::npos) << text;

    launch_profile p = launch_profile::from_pages(recording("ncu/ncu_raw.csv"), recording("ncu/ncu_details.csv"));
    p.attach_source(ncu_report::parse_source(recording("ncu/ncu_source_both.csv")), code_listing(), "probe.cu");
    p.cell = cell_lines::cell(3);
    text_table table = p.lines_table(recording("probe.cu"));
    ASSERT_FALSE(table.rows.empty());
    EXPECT_EQ(table.rows[0][0], "12");  // the busiest line, source line 11
    EXPECT_NE(table.rows[0][4].find("out[i]"), std::string::npos) << table.rows[0][4];
}
