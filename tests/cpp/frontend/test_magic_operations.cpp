// Tests of what the magics and xcuda's functions do once their Python arguments are core values:
// the session's reports (frontend/session_report), %%cuda_program's line and tool command
// (compile/program_cell), %%cuda_header (runtime/header_cell), the help transform's text
// (base/help_transform), a kernel fault's lost buffers in words (base/lost_buffers), what a %%cuda cell
// decides (frontend/cuda_cell), a cell's build (frontend/cell_build), the session functions
// (frontend/session_control) and `with xcuda.device(n)` (frontend/device_scope). None needs a GPU;
// the tests that build compile with NVRTC for compute_75.

#include "expect_error.hpp"
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cell_build.hpp"
#include "compiler.hpp"
#include "cuda_driver.hpp"
#include "device_scope.hpp"
#include "session_control.hpp"
#include "cuda_cell.hpp"
#include "cuda_module.hpp"
#include "cuda_session.hpp"
#include "errors.hpp"
#include "header_cell.hpp"
#include "help_transform.hpp"
#include "lost_buffers.hpp"
#include "module_registry.hpp"
#include "plain_magic.hpp"
#include "program_cell.hpp"
#include "session_report.hpp"
#include "text.hpp"

namespace xcuda
{
    namespace
    {

        bool has_row(const text_table& table, const std::vector<std::string>& row)
        {
            for (const auto& r : table.rows)
            {
                if (r == row)
                {
                    return true;
                }
            }
            return false;
        }

        // A session, a compiler without a disk cache and a registry, as the module has for its process.
        struct core_state
        {
            cuda_session session;
            compiler compile{disk_cache("", 0, false)};
            module_registry registry{session, compile};
        };
    }

    TEST(program_cell, help_is_answered_before_the_cell_is_looked_at)
    {
        EXPECT_TRUE(program_cell::parse("-h", "").help());
        EXPECT_NE(program_cell::arguments().usage().find("%%cuda_program"), std::string::npos);
    }

    TEST(program_cell, an_empty_cell_is_a_usage_error_saying_what_to_write)
    {
        std::string problem = xcuda_tests::message_of<usage_error>([] { program_cell::parse("", "  \n"); });
        EXPECT_NE(problem.find("%%cuda_program"), std::string::npos) << problem;
        EXPECT_NE(problem.find("the cell is empty: write a CUDA program with int main()"), std::string::npos) << problem;
    }

    TEST(program_cell, args_come_before_the_words_and_unknown_options_go_to_nvcc)
    {
        program_cell cell = program_cell::parse("--args \"-n 100\" out.txt -O3 --arch sm_90", "int main() {}");
        EXPECT_EQ(cell.program_arguments(), (std::vector<std::string>{"-n", "100", "out.txt"}));
        EXPECT_EQ(cell.nvcc_options(), (std::vector<std::string>{"-arch=sm_90", "-O3"}));
    }

    TEST(program_cell, nvcc_options_that_name_the_output_or_make_no_program_are_usage_errors)
    {
        const char* main = "int main() {}";
        for (const char* line : {"-o prog", "-o=prog", "--output-file prog", "--output-file=prog -O3"})
        {
            std::string problem = xcuda_tests::message_of<usage_error>([&] { program_cell::parse(line, main); });
            EXPECT_NE(problem.find("%%cuda_program"), std::string::npos) << line << ": " << problem;
            EXPECT_NE(problem.find("names the output file, which %%cuda_program chooses itself"), std::string::npos)
                << line << ": " << problem;
        }
        for (const char* line : {"-c", "-ptx", "--cubin", "-run", "-dc", "--device-link", "-E"})
        {
            std::string problem = xcuda_tests::message_of<usage_error>([&] { program_cell::parse(line, main); });
            EXPECT_NE(problem.find("nvcc's " + std::string(line) + " makes no program for %%cuda_program to run"),
                      std::string::npos) << problem;
        }
        // Options that only look alike still go to nvcc; -o as the program's argument after '--args' too.
        program_cell cell = program_cell::parse("-odir=/tmp -rdc=true -O3 --args \"-o out.txt\"", main);
        EXPECT_EQ(cell.nvcc_options(), (std::vector<std::string>{"-odir=/tmp", "-rdc=true", "-O3"}));
        EXPECT_EQ(cell.program_arguments(), (std::vector<std::string>{"-o", "out.txt"}));
        // After a bare '--' every word goes to nvcc, and is checked the same way.
        EXPECT_NE(xcuda_tests::message_of<usage_error>([&] { program_cell::parse("-- -G -o prog", main); })
                      .find("nvcc's -o names the output file"),
                  std::string::npos);
    }

    TEST(program_cell, an_nvcc_option_written_alone_takes_the_next_word_as_its_value)
    {
        // A pasted compile line: the values of -I, -Xcompiler, --maxrregcount go to nvcc, not to the program.
        program_cell cell = program_cell::parse("-I include -Xcompiler -fopenmp --maxrregcount 32 -O3 100 out.txt",
                                                "int main() {}");
        EXPECT_EQ(cell.nvcc_options(),
                  (std::vector<std::string>{"-I", "include", "-Xcompiler", "-fopenmp", "--maxrregcount", "32", "-O3"}));
        EXPECT_EQ(cell.program_arguments(), (std::vector<std::string>{"100", "out.txt"}));
        // Joined values, flags and the magic's own options are as before: the word after a flag is the program's.
        program_cell joined = program_cell::parse("-Iinclude -I=more -G 7 --arch sm_90", "int main() {}");
        EXPECT_EQ(joined.nvcc_options(), (std::vector<std::string>{"-arch=sm_90", "-Iinclude", "-I=more", "-G"}));
        EXPECT_EQ(joined.program_arguments(), (std::vector<std::string>{"7"}));
        // A value-taking option right before one of the magic's options does not swallow it.
        program_cell own = program_cell::parse("-I --arch sm_90", "int main() {}");
        EXPECT_EQ(own.nvcc_options(), (std::vector<std::string>{"-arch=sm_90", "-I"}));
        EXPECT_TRUE(program_cell::nvcc_option_takes_value("--include-path"));
        EXPECT_FALSE(program_cell::nvcc_option_takes_value("-G"));
    }

    TEST(program_cell, options_that_do_not_go_together_are_usage_errors)
    {
        const char* main = "int main() {}";
        EXPECT_NE(xcuda_tests::message_of<usage_error>([&] { program_cell::parse("--profile --sanitize", main); })
                      .find("--profile and --sanitize run the program under different tools; choose one"),
                  std::string::npos);
        EXPECT_NE(xcuda_tests::message_of<usage_error>([&] { program_cell::parse("--profiler ncu", main); })
                      .find("--profiler and --profiler-args go with --profile"),
                  std::string::npos);
        EXPECT_NE(xcuda_tests::message_of<usage_error>([&] { program_cell::parse("--tool racecheck", main); }).find("--tool goes with --sanitize"),
                  std::string::npos);
        EXPECT_NE(xcuda_tests::message_of<usage_error>([&] { program_cell::parse("--profile --profiler perf", main); })
                      .find("--profiler needs ncu or nsys, got 'perf'"),
                  std::string::npos);
        EXPECT_NE(xcuda_tests::message_of<usage_error>([&] { program_cell::parse("--sanitize --tool leakcheck", main); })
                      .find("--tool needs memcheck, racecheck, initcheck or synccheck, got 'leakcheck'"),
                  std::string::npos);
    }

    TEST(program_cell, profile_falls_back_to_nsys_with_its_report_in_the_program_folder)
    {
        program_cell cell = program_cell::parse("--profile --profiler-args \"--trace cuda\"", "int main() {}");
        auto find = [](const std::string& tool) { return tool == "nsys" ? std::string("/opt/nsys") : std::string(); };
        EXPECT_EQ(cell.tool_prefix(find, "/tmp/p"),
                  (std::vector<std::string>{"/opt/nsys", "profile", "--stats=true", "--force-overwrite=true", "-o",
                                            "/tmp/p/report", "--trace", "cuda"}));
        auto both = [](const std::string& tool) { return "/bin/" + tool; };
        EXPECT_EQ(cell.tool_prefix(both, "/tmp/p"), (std::vector<std::string>{"/bin/ncu", "--trace", "cuda"}));
    }

    TEST(program_cell, a_missing_tool_names_what_to_install)
    {
        auto none = [](const std::string&) { return std::string(); };
        try
        {
            program_cell::parse("--profile --profiler ncu", "int main() {}").tool_prefix(none, "/tmp/p");
            FAIL() << "no tool_not_found_error";
        }
        catch (const tool_not_found_error& e)
        {
            EXPECT_NE(std::string(e.what()).find("%%cuda_program --profile needs ncu, and none was found"),
                      std::string::npos) << e.what();
        }
        EXPECT_THROW(program_cell::parse("--sanitize", "int main() {}").tool_prefix(none, "/tmp/p"), tool_not_found_error);
        auto sanitizer = [](const std::string& tool) { return "/cuda/bin/" + tool; };
        EXPECT_EQ(program_cell::parse("--sanitize --tool racecheck", "int main() {}").tool_prefix(sanitizer, "/tmp/p"),
                  (std::vector<std::string>{"/cuda/bin/compute-sanitizer", "--tool", "racecheck"}));
        EXPECT_TRUE(program_cell::parse("", "int main() {}").tool_prefix(none, "/tmp/p").empty());
    }

    TEST(program_cell, the_exit_message_names_the_tool_and_the_signal)
    {
        EXPECT_EQ(program_cell::exit_message(3, {}), "the program exited with status 3; its output is above");
        EXPECT_EQ(program_cell::exit_message(137, {"/usr/local/cuda/bin/ncu", "--set", "full"}),
                  "the program under ncu exited with status 137 (killed by signal 9); its output is above");
    }

    TEST(header_cell, takes_exactly_one_name_and_answers_help)
    {
        core_state s;
        EXPECT_EQ(header_cell::run(s.registry, "-h", ""), header_cell::arguments().usage());
        EXPECT_NE(xcuda_tests::message_of<usage_error>([&] { header_cell::run(s.registry, "a.cuh b.cuh", "x"); })
                      .find("takes one header name, e.g. %%cuda_header vec.cuh"),
                  std::string::npos);
        EXPECT_NE(xcuda_tests::message_of<usage_error>([&] { header_cell::run(s.registry, "", "x"); }).find("takes one header name"),
                  std::string::npos);
        EXPECT_EQ(header_cell::run(s.registry, "vec.cuh", "#define N 4\n"), "header vec.cuh kept for #include \"vec.cuh\"");
        EXPECT_EQ(s.registry.headers().at("vec.cuh"), "#define N 4\n");
    }

    TEST(header_cell, changing_a_header_names_the_modules_it_makes_stale_and_status_shows_them)
    {
        core_state s;
        header_cell::run(s.registry, "vec.cuh", "#define N 4\n");
        const std::string source = "#include \"vec.cuh\"\nextern \"C\" __global__ void fill(float* x) { x[0] = N; }\n";
        compile_options options;
        options.arch = "compute_75";
        s.registry.build("uses_vec", compile_recipe{source, options, s.registry.headers_for(source)});
        std::string message = header_cell::run(s.registry, "vec.cuh", "#define N 8\n");
        EXPECT_EQ(message, "header vec.cuh kept for #include \"vec.cuh\"; stale until their cells run again: uses_vec");

        session_report report = session_report::status(s.registry, s.compile, {});
        ASSERT_EQ(report.tables.size(), 3u);
        ASSERT_EQ(report.tables[0].rows.size(), 1u);
        const std::vector<std::string>& row = report.tables[0].rows[0];
        EXPECT_EQ(row[0], "uses_vec");
        EXPECT_EQ(row[1], "a %%cuda cell or xcuda.compile()");
        EXPECT_EQ(row[2], "fill(float* x)");
        EXPECT_EQ(row[3], "compute_75 PTX");
        EXPECT_EQ(row[4], "no");
        EXPECT_EQ(row[6], "vec.cuh (STALE: vec.cuh changed; re-run the cell)");
    }

    TEST(session_report, status_of_an_empty_session_says_what_to_do)
    {
        core_state s;
        session_report report = session_report::status(s.registry, s.compile, {});
        std::string text = report.text();
        EXPECT_NE(text.find("no modules: run a %%cuda cell"), std::string::npos) << text;
        EXPECT_NE(text.find("no device arrays in the namespace"), std::string::npos) << text;
        // No worker program was given to this compiler: a fork per compile, unless XCUDA_COMPILE_PROCESS=0.
        std::string runs_in = s.compile.where_compiles().mode == "in-process"
                                  ? "this process (XCUDA_COMPILE_PROCESS=0)"
                                  : "a fork per compile (no xcuda-compile beside the module)";
        EXPECT_EQ(report.tables[2].columns.back(), "NVRTC runs in");
        EXPECT_TRUE(has_row(report.tables[2], {"0", "0", "0", "off", runs_in})) << text;
        std::string html = report.html();
        EXPECT_EQ(html.rfind("<div class=\"xcuda-report\">", 0), 0u) << html;
        EXPECT_EQ(html.substr(html.size() - 6), "</div>");
    }

    TEST(session_report, status_names_the_compile_worker_before_it_starts)
    {
        core_state s;
        s.compile.set_worker_program("/nowhere/xcuda-compile");  // never started: the report only reads
        compiler::process_info where = s.compile.where_compiles();
        if (where.mode == "in-process")
        {
            GTEST_SKIP() << "XCUDA_COMPILE_PROCESS=0 is set: no worker is used";
        }
        EXPECT_EQ(where.mode, "worker");
        EXPECT_EQ(where.program, "/nowhere/xcuda-compile");
        EXPECT_EQ(where.pid, -1);
        EXPECT_EQ(where.starts, 0);
        session_report report = session_report::status(s.registry, s.compile, {});
        EXPECT_EQ(report.tables[2].rows.at(0).back(), "xcuda-compile (not started)");
    }

    TEST(session_report, status_lists_named_arrays_but_not_ipython_history)
    {
        core_state s;
        std::vector<named_array> arrays{{"x", "(4,)", "float32", 16, 0},
                                        {"_1", "(4,)", "float32", 16, 0},
                                        {"gone", "(2, 2)", "int64", 32, -1}};
        session_report report = session_report::status(s.registry, s.compile, arrays);
        const text_table& buffers = report.tables[1];
        ASSERT_EQ(buffers.rows.size(), 2u);
        EXPECT_EQ(buffers.rows[0][0], "x");
        EXPECT_EQ(buffers.rows[0][4], "0");
        EXPECT_EQ(buffers.rows[1], (std::vector<std::string>{"gone", "(2, 2)", "int64", text::binary_bytes(32), "released"}));
    }

    TEST(session_report, info_without_a_gpu_says_why_and_where_the_engine_is)
    {
        core_state s;
        if (s.session.try_ensure())
        {
            GTEST_SKIP() << "a driver and a GPU are present: the report takes the GPU branch";
        }
        device_placement placement;
        placement.ordinal = 0;
        placement.reason = "XCUDA_DEVICE=0";
        placement.in_engine = true;
        placement.engine = "engine 3";
        placement.host_slot = 2;
        placement.registry = "/tmp/engines";
        placement.has_gpu_uuid = true;
        placement.gpu_uuid = "GPU-1";
        placement.shared_with = {"engine 4", "engine 5"};
        session_report report = session_report::info(s.session, placement);
        ASSERT_EQ(report.tables.size(), 1u);
        const text_table& table = report.tables[0];
        ASSERT_FALSE(table.rows.empty());
        EXPECT_EQ(table.rows[0][0], "GPU");
        EXPECT_EQ(table.rows[0][1].rfind("none: ", 0), 0u);
        EXPECT_TRUE(has_row(table, {"device choice", "device 0: XCUDA_DEVICE=0"}));
        EXPECT_TRUE(has_row(table, {"engine", "engine 3, slot 2 (registry /tmp/engines)"}));
        EXPECT_TRUE(has_row(table, {"GPU shared with", "WARNING: engine 4; engine 5"}));
        EXPECT_TRUE(has_row(table, {"compile target", "compute_75 (PTX)"}));
        placement.refused = true;
        placement.reason = "XCUDA_DEVICE=x is not a device";
        placement.in_engine = false;
        session_report refused = session_report::info(s.session, placement);
        EXPECT_TRUE(has_row(refused.tables[0], {"device choice", "refused: XCUDA_DEVICE=x is not a device"}));
        EXPECT_FALSE(has_row(refused.tables[0], {"engine", "engine 3, slot 2 (registry /tmp/engines)"}));
    }

    TEST(session_report, paths_under_home_are_shown_from_the_tilde)
    {
        EXPECT_EQ(session_report::home_relative("/home/ada/.cache/xcuda", "/home/ada"), "~/.cache/xcuda");
        EXPECT_EQ(session_report::home_relative("/home/ada", "/home/ada"), "~");
        EXPECT_EQ(session_report::home_relative("/home/adam/cache", "/home/ada"), "/home/adam/cache");
        EXPECT_EQ(session_report::home_relative("/var/cache", "/"), "/var/cache");
        EXPECT_EQ(session_report::home_relative("/var/cache", ""), "/var/cache");
    }

    TEST(session_report, driver_versions_read_as_major_dot_minor)
    {
        EXPECT_EQ(session_report::version_text(12090), "12.9");
        EXPECT_EQ(session_report::version_text(13000), "13.0");
    }

    TEST(help_transform, a_help_line_alone_gets_an_empty_body)
    {
        EXPECT_TRUE(help_transform::needs_body({"%%cuda -h\n"}));
        EXPECT_TRUE(help_transform::needs_body({"%%cuda_header --help\n", "\n", "  \t\n"}));
        EXPECT_TRUE(help_transform::needs_body({"%%cuda_program --arch sm_90 -h"}));
        EXPECT_EQ(help_transform::with_body("%%cuda -h"), (std::vector<std::string>{"%%cuda -h\n", "\n"}));
        EXPECT_EQ(help_transform::with_body("%%cuda -h\n"), (std::vector<std::string>{"%%cuda -h\n", "\n"}));
    }

    TEST(help_transform, every_other_cell_passes_unchanged)
    {
        EXPECT_FALSE(help_transform::needs_body({}));
        EXPECT_FALSE(help_transform::needs_body({"%%cuda -h\n", "__global__ void k() {}\n"}));
        EXPECT_FALSE(help_transform::needs_body({"%%cuda --name h\n"}));
        EXPECT_FALSE(help_transform::needs_body({"%%cudax -h\n"}));
        EXPECT_FALSE(help_transform::needs_body({"print('-h')\n"}));
        EXPECT_FALSE(help_transform::asks_for_help("%%timeit -h"));
    }

    TEST(lost_buffers, names_each_lost_array_by_its_variables_and_counts_the_rest)
    {
        std::vector<kernel_fault::lost_buffer> lost{{"x: 4 float32", 16, 0, 1}, {"tmp", 8, 0, 2}, {"y", 8, 1, 3}};
        kernel_fault fault("cuCtxSynchronize", 700, "CUDA_ERROR_ILLEGAL_ADDRESS", "illegal address", {"k"}, 0, lost, 1);
        lost_buffers named(fault);
        named.name(1, "x");
        named.name(1, "x_view");
        named.name(9, "unrelated");
        ASSERT_EQ(named.entries().size(), 3u);
        EXPECT_EQ(named.entries()[0].names, (std::vector<std::string>{"x", "x_view"}));
        EXPECT_TRUE(named.entries()[1].names.empty());
        EXPECT_EQ(named.describe(),
                  "\nDevice arrays lost (using them raises xcuda.SessionLostError):\n  x = x_view: x: 4 float32"
                  "\n  and 2 buffers not bound to a variable (temporaries, or held inside other objects)"
                  "\nYour Python variables and host (numpy) arrays are intact. Run %cuda_recover to continue on the "
                  "GPU: it replaces the kernel process and carries your variables over.");
    }

    TEST(lost_buffers, one_unnamed_buffer_is_singular_and_no_buffer_still_says_what_to_run)
    {
        kernel_fault one("c", 700, "n", "m", {}, 0, {{"tmp", 8, 0, 2}}, 0);
        EXPECT_EQ(lost_buffers(one).describe().rfind("\n  and 1 buffer not bound to a variable", 0), 0u);
        kernel_fault none("c", 700, "n", "m", {}, 0, {}, 0);
        EXPECT_EQ(lost_buffers(none).describe().rfind("\nYour Python variables and host (numpy) arrays are intact.", 0), 0u);
    }
}

namespace xcuda
{
    namespace
    {
        std::shared_ptr<cuda_module> built_for(module_registry& registry, const std::string& source)
        {
            compile_options options;
            options.arch = "compute_75";
            return registry.build("cell", compile_recipe{source, options, {}}).module;
        }
    }

    TEST(cuda_cell, an_empty_cell_and_names_ipython_needs_are_refused_before_the_build)
    {
        EXPECT_NE(xcuda_tests::message_of<usage_error>([] { cuda_cell::check_source(" \n\t\n"); }).find("%%cuda: the cell is empty"),
                  std::string::npos);
        EXPECT_NO_THROW(cuda_cell::check_source("__global__ void k() {}"));
        for (const char* name : {"In", "Out", "get_ipython", "_", "_ii", "__name__", "display"})
        {
            EXPECT_TRUE(cuda_cell::reserved_name(name)) << name;
        }
        for (const char* name : {"saxpy", "__x", "In2", "_1"})
        {
            EXPECT_FALSE(cuda_cell::reserved_name(name)) << name;
        }
        EXPECT_EQ(cuda_cell::reserved_name_problem("In"),
                  "%%cuda --name In: the name is IPython's own (binding a module there breaks later cells); choose "
                  "another name (see %%cuda -h)");
        EXPECT_EQ(cuda_cell::unbound_warning("kernel", "exit"),
                  "%%cuda: kernel 'exit' is not bound to the name exit, which IPython needs; choose another with "
                  "%%cuda --name NAME (then NAME.exit or NAME['exit'])");
        EXPECT_EQ(cuda_cell::replaces_warning("kernel", "x", "int"),
                  "%%cuda: kernel 'x' replaces the variable x (int); to keep it, bind the cell's kernels under another "
                  "name with %%cuda --name NAME");
    }

    TEST(cuda_cell, messages_name_the_cell_as_ipython_does)
    {
        EXPECT_EQ(cuda_cell::lines_of(5, {}).label(), "Cell In[5]");
        EXPECT_EQ(cuda_cell::lines_of(0, {}).label(), "the %%cuda cell");
        EXPECT_EQ(cuda_cell::lines_of(5, {"vec.cuh"}).locate("vec.cuh", 3).label, "header cell vec.cuh");
    }

    TEST(cuda_cell, a_modules_cell_is_read_whole_by_launches_on_other_threads_while_a_rerun_renames_it)
    {
        // A launch on another thread reads the module's cell_lines for a fault's text while the cell runs
        // again (set_lines): each read is one whole value, never a torn one.
        core_state s;
        auto module = built_for(s.registry, "extern \"C\" __global__ void k(float* x) { x[0] = 1; }\n");
        module->set_lines(cuda_cell::lines_of(1, {}));
        std::atomic<bool> stop{false};
        std::atomic<int> bad{0};
        std::vector<std::thread> readers;
        for (int t = 0; t < 4; ++t)
        {
            readers.emplace_back([&] {
                while (!stop.load())
                {
                    cell_lines lines = module->lines();
                    std::string expected = "Cell In[" + std::to_string(lines.execution_count()) + "]";
                    if (lines.label() != expected || lines.editor_line(4) != 5)
                    {
                        ++bad;
                    }
                }
            });
        }
        for (int n = 1; n <= 2000; ++n)
        {
            module->set_lines(cuda_cell::lines_of(n, {}));
        }
        stop = true;
        for (std::thread& reader : readers)
        {
            reader.join();
        }
        EXPECT_EQ(bad.load(), 0);
        EXPECT_EQ(module->lines().label(), "Cell In[2000]");
    }

    TEST(cuda_cell, a_failed_compile_shows_its_messages_at_the_editor_lines)
    {
        core_state s;
        const std::string source = "extern \"C\" __global__ void k(float* x)\n{ x[0] = undefined_name; }\n";
        try
        {
            built_for(s.registry, source);
            FAIL() << "the cell compiled";
        }
        catch (const compile_error& error)
        {
            cuda_cell::failure failure = cuda_cell::failed(error, cuda_cell::lines_of(7, {}));
            ASSERT_FALSE(failure.shown.empty());
            EXPECT_EQ(failure.shown[0].line, 3);  // source line 2, below the %%cuda line
            EXPECT_NE(failure.summary.find("1 error in Cell In[7], line 3"), std::string::npos) << failure.summary;
        }
    }

    TEST(cuda_cell, a_cell_without_kernels_warns_that_there_is_nothing_to_launch)
    {
        core_state s;
        auto module = built_for(s.registry, "__device__ float twice(float x) { return 2 * x; }\n");
        cuda_cell::outcome outcome = cuda_cell::built(*module, module->source(), "", cuda_cell::lines_of(1, {}));
        ASSERT_EQ(outcome.warnings.size(), 1u);
        EXPECT_NE(outcome.warnings[0].find("defines no __global__ function, so there is nothing to launch"),
                  std::string::npos);
        auto with_kernel = built_for(s.registry, "extern \"C\" __global__ void k(float* x) { x[0] = 1; }\n");
        EXPECT_TRUE(cuda_cell::built(*with_kernel, with_kernel->source(), "", cuda_cell::lines_of(1, {})).warnings.empty());
    }

    TEST(cuda_cell, the_driver_note_is_said_once_per_process)
    {
        core_state s;
        auto module = built_for(s.registry, "extern \"C\" __global__ void k(float* x) { x[0] = 1; }\n");
        std::vector<std::string> first = cuda_cell::built(*module, module->source(), "install driver 580", cuda_cell::lines_of(1, {})).warnings;
        ASSERT_EQ(first.size(), 1u);
        EXPECT_EQ(first[0], "%%cuda: install driver 580");
        EXPECT_TRUE(cuda_cell::built(*module, module->source(), "install driver 580", cuda_cell::lines_of(1, {})).warnings.empty());
    }

    TEST(cuda_cell, nvrtc_warnings_in_the_cell_are_shown_as_diagnostics)
    {
        core_state s;
        const std::string source = "extern \"C\" __global__ void k(float* x)\n{ int unused; x[0] = 1; }\n";
        auto module = built_for(s.registry, source);
        if (module->compiled().log.find("warning") == std::string::npos)
        {
            GTEST_SKIP() << "this NVRTC gives no warning for an unused variable: " << module->compiled().log;
        }
        cuda_cell::outcome outcome = cuda_cell::built(*module, source, "", cuda_cell::lines_of(1, {}));
        EXPECT_TRUE(outcome.show_diagnostics);
        EXPECT_TRUE(outcome.log.empty());
        ASSERT_FALSE(outcome.shown.empty());
        EXPECT_EQ(outcome.shown[0].line, 3);
        EXPECT_EQ(outcome.shown[0].severity, "warning");
    }
}

namespace xcuda
{
    TEST(cell_build, without_a_gpu_a_cell_builds_for_compute_75_with_the_header_cells_it_includes)
    {
        core_state s;
        if (s.session.try_ensure())
        {
            GTEST_SKIP() << "a GPU is present: the default target is its sm_XX";
        }
        header_cell::run(s.registry, "n.cuh", "#define N 3\n");
        int unlocked_calls = 0;
        std::vector<std::string> warnings;
        auto module = cell_build::build(
            s.registry, s.session, "#include \"n.cuh\"\nextern \"C\" __global__ void k(int* x) { x[0] = N; }\n", "c",
            compile_options{}, nullptr,
            [&](const std::function<void()>& compile) {
                ++unlocked_calls;
                compile();
            },
            [&](const std::string& warning) { warnings.push_back(warning); });
        EXPECT_EQ(unlocked_calls, 1);
        EXPECT_TRUE(warnings.empty());
        EXPECT_EQ(module->compiled().arch, "compute_75");
        EXPECT_EQ(module->headers().count("n.cuh"), 1u);
        EXPECT_FALSE(module->loaded());
        std::map<std::string, std::string> given{{"n.cuh", "#define N 5\n"}};
        auto with_given = cell_build::build(
            s.registry, s.session, "#include \"n.cuh\"\nextern \"C\" __global__ void k(int* x) { x[0] = N; }\n", "d",
            compile_options{}, &given, [](const std::function<void()>& compile) { compile(); },
            [](const std::string&) {});
        EXPECT_EQ(with_given->headers().at("n.cuh"), "#define N 5\n");
    }

    TEST(session_control, the_compile_worker_is_used_only_when_executable_beside_the_library)
    {
        char folder[] = "/tmp/xcuda-worker-XXXXXX";
        ASSERT_NE(::mkdtemp(folder), nullptr);
        std::string dir = folder;
        EXPECT_EQ(session_control::worker_beside(dir + "/_core.so"), "");
        std::string worker = dir + "/xcuda-compile";
        std::FILE* f = std::fopen(worker.c_str(), "w");
        ASSERT_NE(f, nullptr);
        std::fclose(f);
        EXPECT_EQ(session_control::worker_beside(dir + "/_core.so"), "");  // not executable
        ::chmod(worker.c_str(), 0700);
        EXPECT_EQ(session_control::worker_beside(dir + "/_core.so"), worker);
        ::unlink(worker.c_str());
        ::rmdir(folder);
    }

    TEST(session_control, copies_need_equal_sizes_and_a_fresh_session_has_no_output_waiting)
    {
        EXPECT_NO_THROW(session_control::check_copy_sizes(64, 64));
        try
        {
            session_control::check_copy_sizes(64, 32);
            FAIL() << "no argument_value_error";
        }
        catch (const argument_value_error& e)
        {
            EXPECT_STREQ(e.what(), "xcuda.copy needs equal sizes: the destination has 64 bytes, the source 32");
        }
        cuda_session session;
        EXPECT_FALSE(session_control::output_waiting(session));
    }

    TEST(device_scope, each_exit_returns_to_the_device_current_at_its_enter)
    {
        cuda_session session;
        if (cuda_driver::available())
        {
            GTEST_SKIP() << "a driver is present: devices 2 and 3 may not exist";
        }
        EXPECT_THROW(device_scope(session, -1), usage_error);
        int before = session.device_ordinal();
        device_scope outer(session, 2);
        device_scope inner(session, 3);
        EXPECT_EQ(outer.enter(session), 2);
        EXPECT_EQ(session.device_ordinal(), 2);
        EXPECT_EQ(inner.enter(session), 3);
        inner.exit(session);
        EXPECT_EQ(session.device_ordinal(), 2);
        outer.exit(session);
        EXPECT_EQ(session.device_ordinal(), before);
        outer.exit(session);  // an exit without its enter changes nothing
        EXPECT_EQ(session.device_ordinal(), before);
    }
}

namespace xcuda
{
    TEST(cuda_cell, sass_without_a_disassembler_warns_with_the_first_line_of_why)
    {
        EXPECT_EQ(cuda_cell::sass_unavailable_warning("nvdisasm was not found\ninstall the CUDA toolkit"),
                  "%%cuda --sass: the cell compiled and its kernels are bound, but its SASS cannot be shown: nvdisasm "
                  "was not found");
    }
}

namespace xcuda
{
    TEST(plain_magic, each_magic_is_declared_once_and_answers_only_help)
    {
        const magic_arguments& info = plain_magic::arguments("%cuda_info", plain_magic::info_description);
        EXPECT_EQ(&plain_magic::arguments("%cuda_info", "another text"), &info);
        EXPECT_NE(info.usage().find("Show the current device"), std::string::npos) << info.usage();
        EXPECT_TRUE(info.parse("-h").help);
        EXPECT_FALSE(info.parse("  ").help);
        EXPECT_THROW(info.parse("--all"), usage_error);
        const magic_arguments& status = plain_magic::arguments("%cuda_status", plain_magic::status_description);
        EXPECT_NE(status.usage().find("%cuda_status"), std::string::npos);
        EXPECT_NE(status.usage().find("the compile cache"), std::string::npos);
    }
}
