// The operations layer (magics/src/operations): what the launch magics, xcuda.bench and the replay
// under ncu / compute-sanitizer do, tested without Python and without a GPU. Python's part is played
// by the callbacks (is an expression, time a size); the tools' output by recorded text.

#include "expect_error.hpp"
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <iterator>

#include <sys/stat.h>

#include "bench_result.hpp"
#include "compiler.hpp"
#include "module_registry.hpp"
#include "replay_bundle.hpp"
#include "bench_sweep.hpp"
#include "errors.hpp"
#include "kernel_views.hpp"
#include "launch_magic_line.hpp"
#include "launch_magic_options.hpp"
#include "launch_replayer.hpp"
#include "profile_result.hpp"
#include "progress_meter.hpp"
#include "sanitizer_result.hpp"

#ifndef XCUDA_TEST_RECORDINGS
#error "XCUDA_TEST_RECORDINGS is not defined: CMakeLists.txt sets it for xcuda_core_tests"
#endif

using namespace xcuda;

namespace
{
    std::string recorded(const std::string& name)
    {
        std::ifstream in(std::string(XCUDA_TEST_RECORDINGS) + "/" + name, std::ios::binary);
        if (!in)
        {
            throw std::runtime_error("recorded output " + name + " cannot be opened");
        }
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }

    std::vector<std::string> pieces(const std::string& text, bool commas)
    {
        std::vector<std::string> out;
        for (const auto& s : launch_magic_line::split_top_level(text, commas))
        {
            out.push_back(text.substr(s.begin, s.end - s.begin));
        }
        return out;
    }

    // A stand-in for Python's compile(): balanced brackets, no dangling operator at either end.
    bool looks_like_expression(const std::string& text)
    {
        int depth = 0;
        for (char c : text)
        {
            depth += (c == '(' || c == '[') - (c == ')' || c == ']');
            if (depth < 0)
                return false;
        }
        return depth == 0 && !text.empty() && text.back() != '*' && text.front() != '*';
    }

    using xcuda_tests::message_of;
}

// ---- launch_magic_line ------------------------------------------------------------------------

TEST(LaunchMagicLine, WordsSplitOutsideBracketsAndStrings)
{
    EXPECT_EQ(pieces("saxpy  [2**k for k in range(3)] make", false),
              (std::vector<std::string>{"saxpy", "[2**k for k in range(3)]", "make"}));
    EXPECT_EQ(pieces("f 'a b' g", false), (std::vector<std::string>{"f", "'a b'", "g"}));
}

TEST(LaunchMagicLine, CommasSplitOnlyAtTheTopLevel)
{
    EXPECT_EQ(pieces("k, [1, 2], lambda n: (a, n)", true), (std::vector<std::string>{"k", " [1, 2]", " lambda n: (a, n)"}));
    EXPECT_EQ(pieces("f(a, b)", true).size(), 1u);
    EXPECT_EQ(pieces("a,", true), (std::vector<std::string>{"a", ""}));
}

TEST(LaunchMagicLine, TheCallAtTheEndIsSplitFromItsCallee)
{
    std::string callee;
    std::string arguments;
    ASSERT_TRUE(launch_magic_line::split_call(" saxpy[g, (256)](a, f(x), ')') ", callee, arguments));
    EXPECT_EQ(callee, "saxpy[g, (256)]");
    EXPECT_EQ(arguments, "a, f(x), ')'");
    EXPECT_FALSE(launch_magic_line::split_call("saxpy[g, b]", callee, arguments));
    EXPECT_FALSE(launch_magic_line::split_call("(a, b)", callee, arguments));
    EXPECT_FALSE(launch_magic_line::split_call("x[0](a)[1]", callee, arguments));
}

TEST(LaunchMagicLine, ALaunchsArgumentsReadAsATuple)
{
    const magic_arguments& declared = launch_magic_options::timeit();
    EXPECT_EQ(launch_magic_line::launch(declared, "k[1, 2](a)").arguments, "(a,)");
    EXPECT_EQ(launch_magic_line::launch(declared, "k[1, 2]( )").arguments, "( )");
    EXPECT_EQ(message_of<usage_error>([&] { launch_magic_line::launch(declared, "k[1, 2]"); }),
              declared.problem("expected a launch such as saxpy[grid, block](a, x, y, out, n), got 'k[1, 2]'"));
}

TEST(LaunchMagicLine, ThreeExpressionsFromWordsWhenOnlyOneSplitReads)
{
    const magic_arguments& declared = launch_magic_options::bench();
    auto e = launch_magic_line::three_expressions(declared, "saxpy [2 ** k for k in range(3)] make", &looks_like_expression);
    EXPECT_EQ(e[0], "saxpy");
    EXPECT_EQ(e[1], "[2 ** k for k in range(3)]");
    EXPECT_EQ(e[2], "make");
    auto c = launch_magic_line::three_expressions(declared, "k, [1, 2], m", &looks_like_expression);
    EXPECT_EQ(c[1], "[1, 2]");
}

TEST(LaunchMagicLine, AmbiguousOrShortLinesAreRefusedWithTheirReason)
{
    const magic_arguments& declared = launch_magic_options::bench();
    EXPECT_NE(message_of<usage_error>([&] {
                  launch_magic_line::three_expressions(declared, "a b c d", &looks_like_expression);
              }).find("reads as three expressions in more than one way"),
              std::string::npos);
    EXPECT_NE(message_of<usage_error>([&] { launch_magic_line::three_expressions(declared, "a b", &looks_like_expression); })
                  .find("expected three expressions (kernel, sizes, make_args), got 'a b'"),
              std::string::npos);
    EXPECT_NE(message_of<usage_error>([&] { launch_magic_line::three_expressions(declared, "a, b", &looks_like_expression); })
                  .find("got 2 separated by commas"),
              std::string::npos);
    EXPECT_NE(message_of<usage_error>([&] { launch_magic_line::three_expressions(declared, "a * b", &looks_like_expression); })
                  .find("could not read three Python expressions"),
              std::string::npos);
}

// ---- launch_magic_options ---------------------------------------------------------------------

TEST(LaunchMagicOptions, TimeitReadsItsOptionsAndTheLaunch)
{
    auto r = launch_magic_options::read_timeit("-r 7 -n 400 -o saxpy[4, 256](a, x)");
    EXPECT_FALSE(r.help);
    EXPECT_EQ(r.repeat, 7);
    EXPECT_EQ(r.warmup, 5);
    ASSERT_TRUE(r.nbytes.has_value());
    EXPECT_EQ(*r.nbytes, 400);
    EXPECT_TRUE(r.return_object);
    EXPECT_EQ(r.launch.callee, "saxpy[4, 256]");
    EXPECT_EQ(r.launch.arguments, "(a, x,)");
    EXPECT_FALSE(launch_magic_options::read_timeit("k[1,1]()").nbytes.has_value());
    EXPECT_TRUE(launch_magic_options::read_timeit("-h").help);
    EXPECT_THROW(launch_magic_options::read_timeit("-r 0 k[1,1]()"), usage_error);
}

TEST(LaunchMagicOptions, BenchReadsNumbersFlagsAndThreeExpressions)
{
    auto r = launch_magic_options::read_bench("-b 128 --peak 900 --no-plot k sizes make", &looks_like_expression);
    EXPECT_EQ(r.block, 128);
    EXPECT_EQ(r.repeat, 20);
    ASSERT_TRUE(r.peak.has_value());
    EXPECT_DOUBLE_EQ(*r.peak, 900);
    EXPECT_FALSE(r.bytes_per_element.has_value());
    EXPECT_FALSE(r.plot);
    EXPECT_TRUE(r.progress);
    EXPECT_EQ(r.expressions[2], "make");
    EXPECT_EQ(message_of<usage_error>([] { launch_magic_options::read_bench("-b 64", &looks_like_expression); }),
              launch_magic_options::bench().problem("expected a kernel, the sizes and make_args after the options"));
}

TEST(LaunchMagicOptions, ProfileAndSanitizeSayWhatIsMissingOrWrong)
{
    auto p = launch_magic_options::read_profile("--full --no-source --keep --no-plot k[1, 32](a)");
    EXPECT_TRUE(p.options.full);
    EXPECT_FALSE(p.options.source);
    EXPECT_TRUE(p.options.keep);
    EXPECT_FALSE(p.plot);
    EXPECT_EQ(message_of<usage_error>([] { launch_magic_options::read_profile("--full"); }),
              launch_magic_options::profile().problem(
                  "expected a launch after the options, such as saxpy[grid, block](a, x, y, out, n)"));
    auto s = launch_magic_options::read_sanitize("-t racecheck k[1, 32](a)");
    EXPECT_EQ(s.tool, "racecheck");
    EXPECT_EQ(message_of<usage_error>([] { launch_magic_options::read_sanitize("--tool leakcheck k[1, 1]()"); }),
              launch_magic_options::sanitize().problem(
                  "--tool takes memcheck, racecheck, initcheck or synccheck, not 'leakcheck'"));
}

// ---- bench_sweep and bench_result -------------------------------------------------------------

TEST(BenchSweep, SettingsOutOfRangeAreRefusedWithTheValueAsWritten)
{
    bench_sweep::settings s;
    s.block = 0;
    EXPECT_EQ(message_of<argument_value_error>([&] { bench_sweep::check(s); }), "block must be at least 1, got 0");
    s.block = 32;
    s.warmup = -1;
    EXPECT_EQ(message_of<argument_value_error>([&] { bench_sweep::check(s); }),
              "repeat must be at least 1 and warmup at least 0");
    s.warmup = 0;
    s.peak = -2.0;
    s.peak_written = "-2";
    EXPECT_EQ(message_of<argument_value_error>([&] { bench_sweep::check(s); }),
              "peak must be a positive bandwidth in GB/s, got -2");
    EXPECT_EQ(message_of<argument_value_error>([] { bench_sweep::check_size(0, 3); }),
              "every size must be at least 1, got 0 at position 3");
    EXPECT_THROW(bench_sweep::check_not_empty({}), argument_value_error);
    EXPECT_EQ(message_of<argument_type_error>([] { bench_sweep::check_argument_count(16, 1, 3, [] { return std::string("k(float*, float*, int)"); }); }),
              "make_args(16) returned 1 value; kernel k(float*, float*, int) takes 3 arguments");
    EXPECT_NO_THROW(bench_sweep::check_argument_count(16, 1, 0, []() -> std::string { throw std::logic_error("not asked"); }));
}

TEST(BenchSweep, EachSizeGetsItsGridBytesAndBandwidth)
{
    bench_sweep::settings s;
    s.block = 256;
    s.bytes_per_element = 12;
    s.peak = 2000;
    bench_sweep sweep("saxpy", {1000, 4096}, s, []() -> double { throw std::logic_error("measured a given peak"); });
    std::vector<std::pair<long long, long long>> asked;
    std::vector<std::size_t> after;
    sweep.run(
        [&](long long n, long long grid, std::optional<long long> nbytes) {
            asked.push_back({grid, nbytes.value_or(-1)});
            return bench_sweep::timing{0.5, static_cast<double>(n * 12)};
        },
        [&](std::size_t done, long long) { after.push_back(done); });
    EXPECT_EQ(asked, (std::vector<std::pair<long long, long long>>{{4, 12000}, {16, 49152}}));
    EXPECT_EQ(after, (std::vector<std::size_t>{1, 2}));
    cuda_session session;  // not started: no device name, no theoretical peak
    bench_result r = sweep.finish(session);
    EXPECT_EQ(r.grids, (std::vector<long long>{4, 16}));
    EXPECT_EQ(r.nbytes, (std::vector<long long>{12000, 49152}));
    EXPECT_DOUBLE_EQ(r.bandwidth_gbs[0], 12000 / 0.5e-3 / 1e9);
    EXPECT_DOUBLE_EQ(r.fraction_of_peak()[1], 49152 / 0.5e-3 / 1e9 / 2000);
    EXPECT_FALSE(r.device.has_value());
    EXPECT_EQ(r.peak_source, "given");
}

TEST(BenchSweep, ASizeWhoseBytesAreUnknownStopsTheSweepThere)
{
    bench_sweep sweep("k", {10, 20, 30}, bench_sweep::settings{}, [] { return 100.0; });
    int calls = 0;
    EXPECT_EQ(message_of<argument_value_error>([&] {
                  sweep.run(
                      [&](long long, long long, std::optional<long long> nbytes) {
                          EXPECT_FALSE(nbytes.has_value());
                          return bench_sweep::timing{1.0, ++calls == 2 ? std::nullopt : std::optional<double>(8.0)};
                      },
                      [](std::size_t, long long) {});
              }),
              "the bytes k moves are not known (none of its arguments is an array): pass bytes_per_element= "
              "(%cuda_bench --bytes-per-element)");
    EXPECT_EQ(sweep.done(), 1u);
    EXPECT_EQ(sweep.stopped_at(), 20);
    cuda_session session;
    bench_result r = sweep.finish(session);
    EXPECT_EQ(r.peak_source, "measured");
    EXPECT_DOUBLE_EQ(r.peak_gbs, 100);
    EXPECT_EQ(r.sizes, std::vector<long long>{10});
}

TEST(BenchResult, TableAndPeakSayWhatWasMeasured)
{
    bench_result r;
    r.kernel = "saxpy";
    r.device = "GPU X";
    r.block = 256;
    r.repeat = 1;
    r.sizes = {1024};
    r.grids = {4};
    r.nbytes = {12288};
    r.median_ms = {0.002};
    r.bandwidth_gbs = {6.144};
    r.peak_gbs = 100;
    r.peak_source = "measured";
    r.theoretical_gbs = 120.0;
    EXPECT_EQ(r.heading(), "saxpy on GPU X, block 256, median of 1 launch");
    EXPECT_EQ(r.peak_text(), "peak 100 GB/s measured (device-to-device copy); theoretical 120 GB/s (memory clock x bus width)");
    std::string text = r.text();
    EXPECT_NE(text.find("median us"), std::string::npos);
    EXPECT_NE(text.find("2.00"), std::string::npos);
    EXPECT_NE(text.find("6.1"), std::string::npos);
    EXPECT_EQ(r.html("").find("<img"), std::string::npos);
    EXPECT_NE(r.html("QUJD").find("alt=\"saxpy bandwidth plot\" src=\"data:image/png;base64,QUJD\"/></div>"), std::string::npos);
}

// ---- progress_meter ---------------------------------------------------------------------------

TEST(ProgressMeter, AShortQuickSweepShowsNothing)
{
    auto start = progress_meter::clock::now();
    progress_meter m("k", 3, start);
    EXPECT_FALSE(m.step(1, 10, start).has_value());
    EXPECT_FALSE(m.finish("", 3, start).has_value());
    EXPECT_TRUE(m.step(1, 10, start + std::chrono::seconds(2)).has_value());
    EXPECT_FALSE(m.step(3, 10, start + std::chrono::seconds(2)).has_value());  // the last size: finish says it
}

TEST(ProgressMeter, ALongSweepShowsItsBarAndHowItEnded)
{
    auto start = progress_meter::clock::now();
    progress_meter m("saxpy", 8, start);
    auto text = m.step(2, 4096, start + std::chrono::milliseconds(1500));
    ASSERT_TRUE(text.has_value());
    EXPECT_EQ(*text, "saxpy [######------------------] 2/8 sizes, n = 4096, 1.5 s");
    m.mark_shown();
    EXPECT_EQ(m.finish("", 8, start + std::chrono::milliseconds(3400)).value_or(""), "saxpy: 8 sizes in 3.4 s");
    EXPECT_EQ(m.finish("KeyboardInterrupt at n = 16384", 4).value_or(""),
              "saxpy: stopped after 4/8 sizes (KeyboardInterrupt at n = 16384)");
    EXPECT_EQ(m.html("a<b", 2), "<div><progress value=\"2\" max=\"8\" style=\"width:16em\"></progress> a&lt;b</div>");
    EXPECT_EQ(m.overwrite("abcd"), "\rabcd");
    EXPECT_EQ(m.overwrite("ab"), "\rab  ");
}

// ---- launch_replayer, profile_result, sanitizer_result ----------------------------------------

TEST(LaunchReplayer, FailureLinesKeepWhatExplainsTheFailure)
{
    std::string output = "==PROF== Connected\nxcuda-replay: cuLaunchKernel failed: an illegal address\n"
                         "noise\n==ERROR== The application returned an error code (3).\n";
    EXPECT_EQ(launch_replayer::failure_lines(output),
              "\n  xcuda-replay: cuLaunchKernel failed: an illegal address\n  ==ERROR== The application returned an "
              "error code (3).");
}

TEST(LaunchReplayer, AFailedRunIsExplainedByWhatWentWrong)
{
    tool_process::outcome run;
    run.status = 3;
    run.output = "xcuda-replay: cuLaunchKernel failed: an illegal address\n";
    EXPECT_EQ(std::string(launch_replayer::failure("ncu", run).what()),
              "the launch failed when ncu made it again in a child process; the session was not touched. "
              "%cuda_sanitize finds out-of-bounds accesses and races.\n  xcuda-replay: cuLaunchKernel failed: an "
              "illegal address");
    run.output = "==ERROR== ERR_NVGPUCTRPERM - no permission\n";
    EXPECT_EQ(std::string(launch_replayer::failure("ncu", run).what()).rfind("ncu may not read the GPU's performance counters", 0), 0u);
    run.status = 1;
    run.output = "something else\n";
    EXPECT_EQ(std::string(launch_replayer::failure("compute-sanitizer", run).what()),
              "compute-sanitizer failed (exit status 1):\nsomething else\n");
}

TEST(LaunchReplayer, OnlyASanitizerSummaryOfARunningReplayIsAReport)
{
    std::string report = recorded("sanitizer/memcheck.txt");
    EXPECT_TRUE(launch_replayer::sanitizer_reported(report));
    EXPECT_FALSE(launch_replayer::sanitizer_reported("xcuda-replay: no GPU\n" + report));
    EXPECT_FALSE(launch_replayer::sanitizer_reported("========= COMPUTE-SANITIZER\n"));
}

TEST(LaunchReplayer, NcuIsAskedForTheTablesSectionsOrTheFullSet)
{
    launch_replayer::tools tools{"/x/ncu", "/x/xcuda-replay"};
    auto argv = launch_replayer::ncu_arguments(tools, "/b/profile", "/b", false);
    ASSERT_GE(argv.size(), 12u);
    EXPECT_EQ(std::vector<std::string>(argv.begin(), argv.begin() + 10),
              (std::vector<std::string>{"/x/ncu", "--target-processes", "all", "--clock-control", "none", "--import-source",
                                        "no", "-f", "-o", "/b/profile"}));
    EXPECT_EQ(argv[10], "--section");
    EXPECT_EQ(argv[11], "SpeedOfLight");
    EXPECT_EQ(argv[argv.size() - 4], "--metrics");
    EXPECT_EQ(argv[argv.size() - 2], "/x/xcuda-replay");
    EXPECT_EQ(argv.back(), "/b");
    auto full = launch_replayer::ncu_arguments(tools, "/b/profile", "/b", true);
    EXPECT_EQ(std::vector<std::string>(full.begin() + 10, full.end()),
              (std::vector<std::string>{"--set", "full", "/x/xcuda-replay", "/b"}));
}

TEST(LaunchReplayer, ToolsAndSanitizerToolsAreCheckedBeforeAnyWork)
{
    EXPECT_NE(message_of<usage_error>([] { launch_replayer::check_sanitizer_tool("leakcheck"); })
                  .find("compute-sanitizer has no tool 'leakcheck' here"),
              std::string::npos);
    EXPECT_NO_THROW(launch_replayer::check_sanitizer_tool("synccheck"));
    const char* before = std::getenv("XCUDA_NCU");
    std::string saved = before ? before : "";
    ::setenv("XCUDA_NCU", "/bin/sh", 1);
    EXPECT_EQ(message_of<tool_not_found_error>([] { launch_replayer::tools_for("ncu", "%cuda_profile", "/no/such/folder"); }),
              "xcuda-replay, the program that makes a launch again for ncu and compute-sanitizer, is not next to the "
              "xcuda module (looked for /no/such/folder/xcuda-replay); rebuild or reinstall xcuda");
    if (before)
        ::setenv("XCUDA_NCU", saved.c_str(), 1);
    else
        ::unsetenv("XCUDA_NCU");
}

TEST(ProfileResult, ReadFromRecordedPagesWithThePlotInsideItsDiv)
{
    profile_result r = profile_result::from_ncu(recorded("ncu/ncu_raw.csv"), recorded("ncu/ncu_details.csv"), std::nullopt,
                                                std::nullopt, "", "", "cell", true);
    EXPECT_FALSE(r.profile.kernel.empty());
    EXPECT_EQ(message_of<argument_value_error>([&] { r.profiled_kernel(); }),
              "this profile was read from recorded ncu output: it has no kernel to show");
    auto values = r.metric_values();
    ASSERT_EQ(values.size(), r.profile.metrics.size());
    for (const auto& [name, value] : r.profile.metrics)
    {
        EXPECT_EQ(std::holds_alternative<double>(values.at(name)), value.number.has_value()) << name;
    }
    std::string plain = r.html("");
    std::string with = r.html("UE5H");
    EXPECT_EQ(plain.find("<img"), std::string::npos);
    EXPECT_EQ(with.substr(with.size() - 6), "</div>");
    EXPECT_NE(with.find(" roofline\" src=\"data:image/png;base64,UE5H\"/></div>"), std::string::npos);
    EXPECT_EQ(with.substr(0, plain.size() - 6), plain.substr(0, plain.size() - 6));
}

TEST(SanitizerResult, FindingsNameTheirKernelAndTheCellsLine)
{
    sanitizer_result r = sanitizer_result::from_output(recorded("sanitizer/memcheck.txt"), "memcheck", "", "probe.cu");
    ASSERT_FALSE(r.report.findings.empty());
    EXPECT_EQ(sanitizer_result::kernel_of(r.report.findings[0]).value_or(""), "oob_write");
    EXPECT_EQ(r.cell_line_of(r.report.findings[0]).value_or(0), 18);
    sanitizer_result other = sanitizer_result::from_output(recorded("sanitizer/memcheck.txt"), "memcheck", "", "cell");
    EXPECT_FALSE(other.cell_line_of(other.report.findings[0]).has_value());
    r.launch = "k[grid=(1, 1, 1)]";
    EXPECT_NE(r.html().find("<p>k[grid=(1, 1, 1)], replayed in a child process</p>"), std::string::npos);
    r.launch.clear();
    EXPECT_EQ(r.html().find("replayed in a child process"), std::string::npos);
}

TEST(KernelViews, AListingJoinsIntoItsLines)
{
    code_listing listing = code_listing::from_ptx(".visible .entry k()\n{\n\tret;\n}\n");
    std::string joined = kernel_views::join(listing);
    EXPECT_NE(joined.find("ret;\n"), std::string::npos);
    EXPECT_EQ(joined.back(), '\n');
}

TEST(ReplayOptions, UnknownKeywordsAreRefusedWithWhatTheCallTakes)
{
    profile_options p;
    p.set("full", true);
    p.set("source", false);
    EXPECT_TRUE(p.full);
    EXPECT_FALSE(p.source);
    EXPECT_EQ(message_of<argument_type_error>([&] { p.set("plot", true); }),
              "profile() got an unexpected keyword 'plot' (it takes full, source and keep)");
    EXPECT_NO_THROW(sanitize_options::check_keyword("tool", "tool and keep"));
    EXPECT_EQ(message_of<argument_type_error>([] { sanitize_options::check_keyword("leak", "tool and keep"); }),
              "sanitize() got an unexpected keyword 'leak' (it takes tool and keep)");
}

// ---- the replay against stand-ins for ncu and compute-sanitizer --------------------------------
//
// A real bundle of a saxpy call (compiled by NVRTC, host arrays: no GPU needed), and shell scripts in
// the tools' places that print recorded output: the whole operation runs, from the bundle written to
// the tools' command lines, their reports read, and the folder removed or kept.

namespace
{
    const char* replay_saxpy_source =
        "extern \"C\" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)\n"
        "{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }\n";

    struct replay_fixture
    {
        cuda_session session;
        compiler compile{disk_cache("", 0, false)};
        module_registry registry{session, compile};
        std::shared_ptr<cuda_kernel> kernel;
        std::vector<float> x = std::vector<float>(64, 1.0f), y = std::vector<float>(64, 2.0f), out = std::vector<float>(64, 0.0f);
        std::string tools_folder;

        replay_fixture()
        {
            compile_options options;
            options.arch = "sm_90";
            auto module = registry.build("replay_tests", compile_recipe{replay_saxpy_source, options, {}}).module;
            kernel = std::make_shared<cuda_kernel>(module, module->signatures().front());
            char folder[] = "/tmp/xcuda-operations-test-XXXXXX";
            tools_folder = ::mkdtemp(folder);
        }
        ~replay_fixture() { std::system(("rm -rf " + tools_folder).c_str()); }

        // The replay of saxpy[1, 64](2, x, y, out, 64) written, as Launcher.replay_bundle does without a GPU.
        std::unique_ptr<launch_replayer> replayer(bool keep)
        {
            launch_dims dims;
            dims.grid = {1, 1, 1};
            dims.block = {64, 1, 1};
            launch_call call(*kernel, dims, nullptr);
            call.record_for_replay();
            call.arguments().store_float(0, 2.0);
            call.pass_host_array(1, x.data(), 256, true, false, nullptr, "x");
            call.pass_host_array(2, y.data(), 256, true, false, nullptr, "y");
            call.pass_host_array(3, out.data(), 256, false, true, nullptr, "out");
            call.arguments().store_unsigned(4, 64);
            return std::make_unique<launch_replayer>(call, false, replay_saxpy_source, keep);
        }

        // An executable script in the tools' folder; returns its path.
        std::string script(const std::string& name, const std::string& body)
        {
            std::string path = tools_folder + "/" + name;
            std::ofstream(path) << "#!/bin/sh\n" << body;
            ::chmod(path.c_str(), 0700);
            return path;
        }
    };

    bool exists(const std::string& path)
    {
        struct stat st;
        return ::stat(path.c_str(), &st) == 0;
    }

    std::string file_text(const std::string& path)
    {
        std::ifstream in(path);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }

    const std::string recordings = XCUDA_TEST_RECORDINGS;

    // ncu: the profiling run creates the report named after -o (when first_run says so), --import prints a page.
    std::string fake_ncu(const std::string& first_run)
    {
        return "case \" $* \" in\n"
               "  *\" --import \"*)\n"
               "    case \" $* \" in\n"
               "      *\" raw \"*) cat " + recordings + "/ncu/ncu_raw.csv ;;\n"
               "      *\" details \"*) cat " + recordings + "/ncu/ncu_details.csv ;;\n"
               "      *cuda,sass*) cat " + recordings + "/ncu/ncu_source_both.csv ;;\n"
               "      *) cat " + recordings + "/ncu/ncu_source_sass.csv ;;\n"
               "    esac ;;\n"
               "  *) echo \"$*\" >> \"$PWD/runs.txt\"\n"
               "     report=; prev=; for a in \"$@\"; do [ \"$prev\" = -o ] && report=$a; prev=$a; done\n" +
               first_run + " ;;\n"
               "esac\n";
    }
}

TEST(LaunchReplayerRun, TheBundleIsWrittenWithTheCellAndRemovedAfterwards)
{
    replay_fixture f;
    std::string folder;
    {
        auto replayer = f.replayer(false);
        folder = replayer->folder();
        EXPECT_TRUE(exists(folder + "/cell"));
        EXPECT_EQ(file_text(folder + "/cell"), replay_saxpy_source);
        EXPECT_NE(replayer->description().find("saxpy"), std::string::npos) << replayer->description();
    }
    EXPECT_FALSE(exists(folder));
    {
        auto kept = f.replayer(true);
        folder = kept->folder();
    }
    EXPECT_TRUE(exists(folder + "/cell"));
    replay_bundle::remove_folder(folder);
}

TEST(LaunchReplayerRun, SanitizeRunsTheToolOnTheReplayAndReadsItsReport)
{
    replay_fixture f;
    launch_replayer::tools tools{f.script("compute-sanitizer", "echo \"$*\" > \"$PWD/argv.txt\"\ncat " + recordings +
                                                                    "/sanitizer/memcheck.txt\nexit 3\n"),
                                 "/x/xcuda-replay"};
    auto replayer = f.replayer(true);
    sanitizer_result r = replayer->sanitize(tools, "memcheck", [] { return false; });
    EXPECT_EQ(file_text(replayer->folder() + "/argv.txt"),
              "--tool memcheck --show-backtrace no --target-processes application-only /x/xcuda-replay " +
                  replayer->folder() + "\n");
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.report.errors, 2);
    EXPECT_EQ(r.source, replay_saxpy_source);
    EXPECT_EQ(r.launch, replayer->description());
    EXPECT_EQ(r.folder, replayer->folder());
    replay_bundle::remove_folder(replayer->folder());
}

TEST(LaunchReplayerRun, ASanitizerThatCouldNotRunTheReplayIsAToolError)
{
    replay_fixture f;
    launch_replayer::tools tools{f.script("compute-sanitizer", "echo 'xcuda-replay: no GPU here'\nexit 2\n"), "/x/r"};
    auto replayer = f.replayer(false);
    EXPECT_EQ(message_of<tool_error>([&] { replayer->sanitize(tools, "racecheck", [] { return false; }); }),
              "compute-sanitizer failed (exit status 2):\n  xcuda-replay: no GPU here");
}

TEST(LaunchReplayerRun, ProfileReadsNcusPagesAndTheLinesOfTheCell)
{
    replay_fixture f;
    launch_replayer::tools tools{f.script("ncu", fake_ncu("     echo profiled; touch \"$report.ncu-rep\"")), "/x/xcuda-replay"};
    auto replayer = f.replayer(false);
    profile_options options;
    profile_result r = replayer->profile(tools, options, [] { return false; });
    EXPECT_FALSE(r.profile.kernel.empty());
    EXPECT_EQ(r.ncu_log, "profiled\n");
    EXPECT_EQ(r.source, replay_saxpy_source);
    EXPECT_TRUE(r.folder.empty());
    EXPECT_NE(r.profile.lines_note, "source-level figures were not asked for");
    options.source = false;
    profile_result plain = replayer->profile(tools, options, [] { return false; });
    EXPECT_EQ(plain.profile.lines_note, "source-level figures were not asked for");
}

TEST(LaunchReplayerRun, AnNcuThatRefusesASectionIsAskedForTheFullSet)
{
    replay_fixture f;
    launch_replayer::tools tools{
        f.script("ncu", fake_ncu("     case \" $* \" in *\" full \"*) echo full; touch \"$report.ncu-rep\" ;; "
                                 "*) echo '==ERROR== unknown section SourceCounters' ;; esac")),
        "/x/xcuda-replay"};
    auto replayer = f.replayer(true);
    profile_options options;
    options.source = false;
    options.keep = true;
    profile_result r = replayer->profile(tools, options, [] { return false; });
    EXPECT_EQ(r.ncu_log, "==ERROR== unknown section SourceCounters\nfull\n");
    std::string runs = file_text(replayer->folder() + "/runs.txt");
    EXPECT_NE(runs.find("--section SpeedOfLight"), std::string::npos);
    EXPECT_NE(runs.find("--set full /x/xcuda-replay " + replayer->folder()), std::string::npos);
    EXPECT_EQ(r.folder, replayer->folder());
    replay_bundle::remove_folder(replayer->folder());
}

TEST(LaunchReplayerRun, ALaunchThatFailedInTheReplayFailsTheProfile)
{
    replay_fixture f;
    launch_replayer::tools tools{
        f.script("ncu", fake_ncu("     echo 'xcuda-replay: cuLaunchKernel failed: an illegal address'; touch \"$report.ncu-rep\"")),
        "/x/xcuda-replay"};
    auto replayer = f.replayer(false);
    EXPECT_NE(message_of<tool_error>([&] { replayer->profile(tools, profile_options{}, [] { return false; }); })
                  .find("the launch failed when ncu made it again in a child process"),
              std::string::npos);
}
