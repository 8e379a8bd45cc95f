"""xcuda.bench and %cuda_bench: size sweeps, the bandwidth plot against the peak, the progress bar.

Without a GPU the sweep is timed by the test hook bench(..., _timer=fake): the fake is called exactly as
kernel.time(grid, block, *args, repeat=, warmup=, nbytes=) would be and returns a KernelTiming-like
object, so the sweep, the table, the plot, the progress bar and the magic run here for real. %cuda_bench
calls xcuda.bench looked up at call time, so the magic's tests wrap it. The tests marked gpu time SAXPY
for real; those marked nogpu check the error a machine without a driver gives.
"""
import functools
import io
import re
import sys

import numpy as np
import pytest
from IPython.core.displaypub import CapturingDisplayPublisher
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import xcuda

SAXPY = """extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }
"""
SIZES = [2**k for k in range(10, 17)]


class FakeTiming:
    def __init__(self, median_ms, nbytes):
        self.median_ms = median_ms
        self.nbytes = nbytes


class FakeTimer:
    """Stands in for kernel.time: records each call; 1 us plus 1 ms per 1e6 elements; 12 bytes per element."""

    def __init__(self, fail_at=None):
        self.calls = []
        self.fail_at = fail_at

    def __call__(self, grid, block, *args, repeat, warmup, nbytes):
        n = args[-1]
        if n == self.fail_at:
            raise KeyboardInterrupt
        self.calls.append({"grid": grid, "block": block, "args": args, "repeat": repeat, "warmup": warmup,
                           "nbytes": nbytes})
        return FakeTiming(1e-3 + n / 1e6, 12 * n if nbytes is None else nbytes)


def saxpy_args(n):
    return (np.float32(2.0), None, None, None, n)


@pytest.fixture(scope="module")
def saxpy():
    return xcuda.compile(SAXPY, name="bench_saxpy").saxpy


@pytest.fixture
def captured(shell, monkeypatch):
    """The shell's displays, as a notebook kernel's publisher would receive them."""
    publisher = CapturingDisplayPublisher()
    monkeypatch.setattr(shell, "display_pub", publisher)
    return publisher.outputs


@pytest.fixture
def terminal(monkeypatch):
    """Call it in the test (pytest puts its own sys.stderr back between set-up and the test): then there
    is no IPython shell, and stderr is a stream that says it is a terminal."""

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    def activate():
        import IPython

        stream = Terminal()
        monkeypatch.setattr(IPython, "get_ipython", lambda: None)
        monkeypatch.setattr(sys, "stderr", stream)
        return stream

    return activate


# ---- the sweep ------------------------------------------------------------------------------------


def test_a_sweep_launches_each_size_on_ceil_n_over_block_blocks(saxpy):
    timer = FakeTimer()
    result = xcuda.bench(saxpy, [1000, 1024, 1025], saxpy_args, block=128, repeat=7, warmup=2, peak=1000.0,
                         plot=False, progress=False, _timer=timer)
    assert [c["grid"] for c in timer.calls] == [8, 8, 9]
    assert {c["block"] for c in timer.calls} == {128}
    assert {(c["repeat"], c["warmup"]) for c in timer.calls} == {(7, 2)}
    assert [c["args"] for c in timer.calls] == [saxpy_args(n) for n in (1000, 1024, 1025)]
    assert result.sizes == [1000, 1024, 1025] and result.grids == [8, 8, 9] and len(result) == 3
    assert (result.kernel, result.block, result.repeat, result.warmup) == ("saxpy", 128, 7, 2)


def test_bandwidth_is_the_counted_bytes_over_the_median_time(saxpy):
    result = xcuda.bench(saxpy, SIZES, saxpy_args, peak=2000.0, plot=False, progress=False, _timer=FakeTimer())
    assert result.nbytes == [12 * n for n in SIZES]
    for n, ms, gbs, fraction in zip(SIZES, result.median_ms, result.bandwidth_gbs, result.fraction_of_peak):
        assert ms == pytest.approx(1e-3 + n / 1e6)
        assert gbs == pytest.approx(12 * n / (ms * 1e-3) / 1e9)
        assert fraction == pytest.approx(gbs / 2000.0)
    assert (result.peak_gbs, result.peak_source) == (2000.0, "given")


def test_bytes_per_element_sets_the_bytes_moved(saxpy):
    timer = FakeTimer()
    result = xcuda.bench(saxpy, [1000, 3000], saxpy_args, bytes_per_element=8, peak=1.0, plot=False,
                         progress=False, _timer=timer)
    assert [c["nbytes"] for c in timer.calls] == [8000, 24000]
    assert result.nbytes == [8000, 24000]


def test_the_table_lists_every_size_and_the_peak(saxpy):
    result = xcuda.bench(saxpy, [1024, 4096], saxpy_args, peak=3000.0, plot=False, progress=False, _timer=FakeTimer())
    text = repr(result)
    # With a GPU the header names the device too: "saxpy on NVIDIA H200, block 256, ...".
    assert re.fullmatch(r"saxpy( on .+)?, block 256, median of 20 launches", text.splitlines()[0])
    assert "GB/s" in text and "% of peak" in text
    assert "1024" in text and "4096" in text
    # With a GPU the theoretical peak follows: "...; theoretical 4814 GB/s (memory clock x bus width)".
    assert re.fullmatch(r"peak 3000 GB/s \(given\)(; theoretical \d+ GB/s \(memory clock x bus width\))?",
                        text.splitlines()[-1])
    html = result._repr_html_()
    assert "<table class=\"xcuda-table\">" in html and "<td style=\"text-align:right\">4096</td>" in html
    assert "<img" not in html  # plot=False: the table alone


# ---- the plot -------------------------------------------------------------------------------------


@pytest.fixture()
def matplotlib_installed():
    return pytest.importorskip("matplotlib", reason="matplotlib is not installed (python3-matplotlib; .ci/setup installs it)")



def test_the_plot_shows_each_size_and_the_peak_line(saxpy, matplotlib_installed):
    result = xcuda.bench(saxpy, SIZES, saxpy_args, peak=2500.0, progress=False, _timer=FakeTimer())
    figure = result.plot()
    import matplotlib.figure

    assert isinstance(figure, matplotlib.figure.Figure)
    (ax,) = figure.axes
    points, peak = ax.lines
    assert list(points.get_xdata()) == SIZES
    assert list(points.get_ydata()) == pytest.approx(result.bandwidth_gbs)
    assert points.get_marker() == "o"
    assert list(peak.get_ydata()) == [2500.0, 2500.0]
    assert peak.get_label() == "peak 2500 GB/s"
    assert ax.get_xscale() == "log"
    assert ax.get_title() == "saxpy: achieved bandwidth"
    assert ax.get_ylabel() == "achieved bandwidth (GB/s)"
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] >= 2500.0
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["saxpy (block 256)", "peak 2500 GB/s"]


def test_the_plot_draws_into_given_axes(saxpy, matplotlib_installed):
    import matplotlib.figure

    figure = matplotlib.figure.Figure()
    ax = figure.add_subplot()
    result = xcuda.bench(saxpy, [1024, 2048], saxpy_args, peak=10.0, plot=False, progress=False, _timer=FakeTimer())
    assert result.plot(ax) is figure
    assert len(ax.lines) == 2


def test_the_html_carries_the_plot_as_a_png(saxpy, matplotlib_installed):
    result = xcuda.bench(saxpy, SIZES, saxpy_args, peak=2500.0, progress=False, _timer=FakeTimer())
    html = result._repr_html_()
    assert '<img alt="saxpy bandwidth plot" src="data:image/png;base64,iVBOR' in html
    assert html.index("<table") < html.index("<img")


# ---- the progress bar -----------------------------------------------------------------------------


def test_the_progress_bar_updates_one_display_in_a_notebook(saxpy, shell, captured):
    xcuda.bench(saxpy, SIZES, saxpy_args, peak=1.0, plot=False, _timer=FakeTimer())
    texts = [output["data"]["text/plain"] for output in captured]
    # Shown after the first size, updated in place after each of the others, then the summary.
    assert len(captured) == len(SIZES) + 1
    assert captured[0]["update"] is False and all(output["update"] for output in captured[1:])
    display_ids = {output["transient"]["display_id"] for output in captured}
    assert len(display_ids) == 1
    assert texts[0].startswith("saxpy [###-") and " 1/7 sizes, n = 1024, " in texts[0]
    assert " 6/7 sizes, n = 32768, " in texts[5]
    assert texts[-1].startswith("saxpy: 7 sizes in ")
    assert '<progress value="1" max="7"' in captured[0]["data"]["text/html"]


def test_a_short_quick_sweep_shows_no_progress_bar(saxpy, shell, captured):
    xcuda.bench(saxpy, [1024, 2048, 4096], saxpy_args, peak=1.0, plot=False, _timer=FakeTimer())
    assert captured == []


def test_progress_false_shows_no_bar(saxpy, shell, captured):
    xcuda.bench(saxpy, SIZES, saxpy_args, peak=1.0, plot=False, progress=False, _timer=FakeTimer())
    assert captured == []


def test_the_progress_bar_rewrites_its_line_on_a_terminal(saxpy, terminal):
    stream = terminal()
    xcuda.bench(saxpy, SIZES, saxpy_args, peak=1.0, plot=False, _timer=FakeTimer())
    written = stream.getvalue()
    states = written.rstrip("\n").split("\r")[1:]
    assert len(states) == len(SIZES) + 1 and written.endswith("\n") and written.count("\n") == 1
    assert "1/7 sizes" in states[0] and "6/7 sizes" in states[5]
    assert states[-1].startswith("saxpy: 7 sizes in ")
    # Each state covers the one before it.
    assert all(len(b) >= len(a) for a, b in zip(states, states[1:]))


def test_an_interrupted_sweep_says_where_it_stopped(saxpy, shell, captured):
    with pytest.raises(KeyboardInterrupt):
        xcuda.bench(saxpy, SIZES, saxpy_args, peak=1.0, plot=False, _timer=FakeTimer(fail_at=SIZES[4]))
    assert captured[-1]["data"]["text/plain"] == "saxpy: stopped after 4/7 sizes (KeyboardInterrupt at n = 16384)"


# ---- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sizes, error, message",
    [
        ([], ValueError, "sizes is empty"),
        ([1024, 0], ValueError, "every size must be at least 1, got 0 at position 1"),
        ([1e6], TypeError, r"sizes must be ints, got 1000000.0 \(float\): write int"),
        ("1024", TypeError, "sizes must be an iterable of ints"),
        (1024, TypeError, "sizes must be an iterable of ints"),
    ],
)
def test_bad_sizes_are_refused_before_any_timing(saxpy, sizes, error, message):
    timer = FakeTimer()
    with pytest.raises(error, match=message):
        xcuda.bench(saxpy, sizes, saxpy_args, peak=1.0, _timer=timer)
    assert timer.calls == []


def test_numpy_and_range_sizes_are_accepted(saxpy):
    result = xcuda.bench(saxpy, np.array([1024, 2048]), saxpy_args, peak=1.0, plot=False, _timer=FakeTimer())
    assert result.sizes == [1024, 2048]
    result = xcuda.bench(saxpy, range(1000, 3001, 1000), saxpy_args, peak=1.0, plot=False, _timer=FakeTimer())
    assert result.sizes == [1000, 2000, 3000]


def test_make_args_with_the_wrong_count_names_both_counts(saxpy, shell, captured):
    timer = FakeTimer()
    with pytest.raises(TypeError, match=r"make_args\(1024\) returned 3 values; kernel saxpy\(float a, const float\* x, "
                                        r"const float\* y, float\* out, size_t n\) takes 5 arguments"):
        xcuda.bench(saxpy, SIZES, lambda n: (2.0, None, n), peak=1.0, plot=False, _timer=timer)
    assert timer.calls == [] and captured == []  # nothing half-displayed


@pytest.mark.parametrize(
    "kernel, make_args, error, message",
    [
        ("saxpy", saxpy_args, TypeError, "bench needs an xcuda.Kernel .* got str"),
        ("launcher", saxpy_args, TypeError, r"not kernel\[grid, block\]"),
        ("kernel", [1, 2], TypeError, "make_args must be a function of the size n"),
    ],
)
def test_what_is_not_a_kernel_or_a_function_is_refused(saxpy, kernel, make_args, error, message):
    kernel = {"saxpy": "saxpy", "launcher": saxpy[4, 256], "kernel": saxpy}[kernel]
    with pytest.raises(error, match=message):
        xcuda.bench(kernel, SIZES, make_args, peak=1.0, _timer=FakeTimer())


@pytest.mark.parametrize(
    "options, message",
    [
        ({"block": 0}, "block must be at least 1, got 0"),
        ({"repeat": 0}, "repeat must be at least 1"),
        ({"peak": -5.0}, "peak must be a positive bandwidth in GB/s"),
        ({"bytes_per_element": 0}, "bytes_per_element must be positive"),
    ],
)
def test_bad_options_are_refused(saxpy, options, message):
    options.setdefault("peak", 1.0)
    with pytest.raises(ValueError, match=message):
        xcuda.bench(saxpy, SIZES, saxpy_args, _timer=FakeTimer(), **options)


def test_unknown_bytes_ask_for_bytes_per_element(saxpy):
    def timer(grid, block, *args, repeat, warmup, nbytes):
        return FakeTiming(1.0, nbytes)

    with pytest.raises(ValueError, match="the bytes saxpy moves are not known .* pass bytes_per_element="):
        xcuda.bench(saxpy, SIZES, saxpy_args, peak=1.0, plot=False, _timer=timer)


@pytest.mark.nogpu
def test_a_sweep_without_a_driver_raises_cuda_unavailable(saxpy, shell, captured):
    x = np.ones(1024, np.float32)
    with pytest.raises(xcuda.CudaUnavailableError, match="no NVIDIA driver was found"):
        xcuda.bench(saxpy, SIZES, lambda n: (np.float32(2.0), x, x, x, n), peak=1.0)
    with pytest.raises(xcuda.CudaUnavailableError, match="no NVIDIA driver was found"):
        xcuda.bench(saxpy, SIZES, lambda n: (np.float32(2.0), x, x, x, n))  # measuring the peak
    with pytest.raises(xcuda.CudaUnavailableError):
        xcuda.peak_bandwidth()
    assert captured == []


# ---- %cuda_bench ----------------------------------------------------------------------------------


@pytest.fixture
def recorded(monkeypatch):
    """xcuda.bench replaced by a recorder of its arguments."""
    calls = []

    def record(*args, **kwargs):
        calls.append((args, kwargs))
        return "a BenchResult"

    monkeypatch.setattr(xcuda, "bench", record)
    return calls


def test_cuda_bench_is_a_registered_line_magic_with_its_usage(shell):
    assert "cuda_bench" in shell.magics_manager.lsmagic()["line"]
    doc = shell.find_line_magic("cuda_bench").__doc__
    for option in ("-b BLOCK", "-r REPEAT", "-w WARMUP", "--bytes-per-element", "--peak", "--no-plot", "-o"):
        assert option in doc


def test_cuda_bench_evaluates_its_expressions_in_the_user_namespace(shell, saxpy, recorded):
    shell.user_ns.update(saxpy=saxpy, saxpy_args=saxpy_args, lo=10)
    result = shell.run_line_magic("cuda_bench", "-o saxpy [2**k for k in range(lo, 13)] saxpy_args")
    assert result == "a BenchResult"
    ((args, kwargs),) = recorded
    assert args == (saxpy, [1024, 2048, 4096], saxpy_args)
    assert kwargs == {"block": 256, "bytes_per_element": None, "repeat": 20, "warmup": 3, "peak": None,
                      "plot": True, "progress": True}


def test_cuda_bench_parses_its_options(shell, saxpy, recorded):
    shell.user_ns.update(saxpy=saxpy, saxpy_args=saxpy_args)
    shell.run_line_magic("cuda_bench", "-o -b 128 -r 50 -w 1 --bytes-per-element 12 --peak 4800 --no-plot "
                                       "--no-progress saxpy range(1024, 4097, 1024) saxpy_args")
    ((args, kwargs),) = recorded
    assert args[1] == range(1024, 4097, 1024)
    assert kwargs == {"block": 128, "bytes_per_element": 12.0, "repeat": 50, "warmup": 1, "peak": 4800.0,
                      "plot": False, "progress": False}


@pytest.mark.parametrize(
    "line",
    [
        "saxpy [1024, 2048] lambda n: (a, None, None, None, n)",
        "saxpy, [1024, 2048], lambda n: (a, None, None, None, n)",
        "saxpy [1024,  2048]   lambda n : (a, None, None, None, n)",
    ],
)
def test_cuda_bench_tells_its_three_expressions_apart(shell, saxpy, recorded, line):
    shell.user_ns.update(saxpy=saxpy, a=np.float32(2))
    shell.run_line_magic("cuda_bench", "-o " + line)
    ((args, _),) = recorded
    assert args[0] is saxpy and args[1] == [1024, 2048] and args[2](8) == (2.0, None, None, None, 8)


@pytest.mark.parametrize(
    "line, message",
    [
        ("-q saxpy sizes f", "unknown option -q"),
        ("-b", "-b needs a value"),
        ("-r many saxpy sizes f", "-r needs an integer, got 'many'"),
        ("--peak -1 saxpy sizes f", "--peak needs a positive number"),
        ("saxpy sizes", "expected three expressions"),
        ("saxpy, sizes", "expected three expressions"),
        ("saxpy sizes f (", "could not read three Python expressions"),
        ("saxpy -1 -2 f", "more than one way"),
    ],
)
def test_cuda_bench_usage_errors(shell, recorded, line, message):
    with pytest.raises(UsageError, match=message):
        shell.run_line_magic("cuda_bench", line)
    assert recorded == []


def test_cuda_bench_displays_the_table_and_the_plot(shell, saxpy, captured, monkeypatch, matplotlib_installed):
    monkeypatch.setattr(xcuda, "bench", functools.partial(xcuda.bench, _timer=FakeTimer()))
    shell.user_ns.update(saxpy=saxpy, saxpy_args=saxpy_args)
    assert shell.run_line_magic("cuda_bench", "--peak 3000 --no-progress saxpy [1024, 2048] saxpy_args") is None
    (output,) = captured
    assert output["data"]["text/plain"].startswith("saxpy, block 256, median of 20 launches")
    assert "<table" in output["data"]["text/html"] and "data:image/png;base64," in output["data"]["text/html"]


def test_cuda_bench_names_an_undefined_expression(shell, recorded):
    with pytest.raises(NameError, match="no_such_kernel"):
        shell.run_line_magic("cuda_bench", "no_such_kernel [1024] f")


# ---- on a GPU -------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_a_saxpy_sweep_on_the_gpu_stays_below_the_measured_peak(saxpy):
    def make_args(n):
        x = xcuda.to_device(np.random.rand(n).astype(np.float32))
        return (np.float32(2.0), x, xcuda.zeros_like(x), xcuda.empty(n, np.float32), n)

    sizes = [2**k for k in (12, 16, 20, 24)]
    result = xcuda.bench(saxpy, sizes, make_args, repeat=10, progress=False, plot=False)
    assert result.peak_source == "measured" and result.peak_gbs > 0
    assert xcuda.peak_bandwidth() == result.peak_gbs  # measured once per session
    assert result.nbytes == [12 * n for n in sizes]
    assert all(0 < gbs < 1.2 * result.peak_gbs for gbs in result.bandwidth_gbs)
    assert result.device and result.theoretical_gbs > 0
    assert "theoretical" in repr(result)
    pytest.importorskip("matplotlib", reason="the sweep above passed; its plot needs matplotlib, not installed here")
    labels = [line.get_label() for line in result.plot().axes[0].lines]
    assert labels[1].startswith("measured peak") and labels[2].startswith("theoretical")
