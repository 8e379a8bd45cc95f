"""Inside one launch, without a GPU: %cuda_profile and %cuda_sanitize's usage and their errors, the
replay bundle's round trip, recorded ncu and compute-sanitizer output read into LaunchProfile and
SanitizerReport (tests/fixtures/, captured on an H200), and the views' hover notes.

What needs a GPU (profiling SAXPY, finding an out-of-bounds write and a race, the session alive
after) is in test_inside_launch_gpu.py.
"""
import os
import shutil
import stat
import struct
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest
from IPython.core.error import UsageError

import xcuda
from conftest import BUILD, HAS_GPU

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PROBE = (FIXTURES / "probe.cu").read_text()
REPLAY = BUILD / "python" / "xcuda" / "xcuda-replay"

SAXPY = """extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * x[i] + y[i];
}
"""


def recorded(name):
    return (FIXTURES / name).read_text()


@pytest.fixture
def ns(shell):
    shell.run_cell_magic("cuda", "", SAXPY)
    n = 1000
    shell.user_ns.update(x=np.arange(n, dtype=np.float32), y=np.ones(n, np.float32), out=np.zeros(n, np.float32), n=n)
    return shell.user_ns


def tool_installed(name):
    # A bool: pytest evaluates a string skipif condition as Python (a path there is a SyntaxError).
    return bool(shutil.which(name)) or Path(f"/usr/local/cuda/bin/{name}").exists()


# ----- the magics -----------------------------------------------------------------------------------

def test_both_magics_are_registered_and_explain_themselves(shell, capsys):
    magics = shell.magics_manager.lsmagic()["line"]
    assert "cuda_profile" in magics and "cuda_sanitize" in magics
    shell.run_line_magic("cuda_profile", "-h")
    profile_help = capsys.readouterr().out
    for fragment in ("%cuda_profile [options] kernel[grid, block](args...)", "--full", "--no-source", "--keep",
                     "DRAM throughput", "child process"):
        assert fragment in profile_help
    shell.run_line_magic("cuda_sanitize", "-h")
    sanitize_help = capsys.readouterr().out
    for fragment in ("--tool", "memcheck", "racecheck", "initcheck", "synccheck", "not the session"):
        assert fragment in sanitize_help
    assert "--tool" in shell.find_line_magic("cuda_sanitize").__doc__


def test_a_line_without_a_launch_is_a_usage_error(shell, ns):
    with pytest.raises(UsageError, match="expected a launch after the options"):
        shell.run_line_magic("cuda_profile", "--full")
    with pytest.raises(UsageError, match="is not a kernel with a launch configuration"):
        shell.run_line_magic("cuda_sanitize", "len(x)")
    with pytest.raises(UsageError, match="--tool takes memcheck, racecheck, initcheck or synccheck, not 'leakcheck'"):
        shell.run_line_magic("cuda_sanitize", "--tool leakcheck saxpy[4, 256](2.0, x, y, out, n)")
    with pytest.raises(UsageError, match="unknown option --fast"):
        shell.run_line_magic("cuda_profile", "--fast saxpy[4, 256](2.0, x, y, out, n)")


def test_an_unknown_sanitizer_tool_in_the_method_is_a_value_error(ns):
    with pytest.raises(ValueError, match="no tool 'leakcheck'.*memcheck"):
        ns["saxpy"][4, 256].sanitize(2.0, ns["x"], ns["y"], ns["out"], 1000, tool="leakcheck")
    with pytest.raises(TypeError, match="unexpected keyword 'repeat'"):
        ns["saxpy"][4, 256].profile(2.0, ns["x"], ns["y"], ns["out"], 1000, repeat=3)


def test_a_named_tool_that_is_not_there_says_where_it_looked(shell, ns, monkeypatch):
    monkeypatch.setenv("XCUDA_NCU", "/nonexistent/ncu")
    with pytest.raises(xcuda.ToolNotFoundError, match=r"needs ncu, which was not found. Looked in:\n  \$XCUDA_NCU = /nonexistent/ncu"):
        shell.run_line_magic("cuda_profile", "saxpy[4, 256](2.0, x, y, out, n)")
    monkeypatch.setenv("XCUDA_COMPUTE_SANITIZER", "/nonexistent/compute-sanitizer")
    with pytest.raises(xcuda.ToolNotFoundError, match="needs compute-sanitizer"):
        shell.run_line_magic("cuda_sanitize", "saxpy[4, 256](2.0, x, y, out, n)")
    with pytest.raises(xcuda.ToolNotFoundError, match=r"\$XCUDA_COMPUTE_SANITIZER = /nonexistent"):
        xcuda.find_tool("compute-sanitizer")


@pytest.mark.skipif(tool_installed("ncu"), reason="this machine has ncu: its absence cannot be shown")
def test_without_ncu_the_profile_lists_every_place_looked(shell, ns, monkeypatch):
    monkeypatch.delenv("XCUDA_NCU", raising=False)
    with pytest.raises(xcuda.ToolNotFoundError) as caught:
        shell.run_line_magic("cuda_profile", "saxpy[4, 256](2.0, x, y, out, n)")
    message = str(caught.value)
    for place in ("/usr/local/cuda/bin/ncu", "/usr/local/cuda/nsight-compute-*/ncu", "/opt/nvidia/nsight-compute/*/ncu",
                  "set XCUDA_NCU to its path"):
        assert place in message
    assert (ns["out"] == 0).all()


@pytest.mark.nogpu
def test_without_a_gpu_the_magics_say_so_and_the_session_keeps_working(shell, ns, monkeypatch):
    # A program stands in for each tool: the GPU is what is missing.
    monkeypatch.setenv("XCUDA_NCU", "/bin/true")
    monkeypatch.setenv("XCUDA_COMPUTE_SANITIZER", "/bin/true")
    with pytest.raises(xcuda.CudaUnavailableError, match="no NVIDIA driver"):
        shell.run_line_magic("cuda_profile", "saxpy[4, 256](2.0, x, y, out, n)")
    with pytest.raises(xcuda.CudaUnavailableError, match="no NVIDIA driver"):
        shell.run_line_magic("cuda_sanitize", "--tool racecheck saxpy[4, 256](2.0, x, y, out, n)")
    with pytest.raises(xcuda.CudaUnavailableError):
        ns["saxpy"].sanitize(4, 256, 2.0, ns["x"], ns["y"], ns["out"], 1000, tool="initcheck")
    assert (ns["out"] == 0).all()
    shell.run_cell_magic("cuda", "--name after", SAXPY.replace("saxpy", "saxpy_after"))
    assert ".entry saxpy_after" in ns["after"].ptx


# ----- the replay bundle ----------------------------------------------------------------------------

def test_a_launch_becomes_a_private_bundle_that_xcuda_replay_reads(ns):
    x, y, out = ns["x"], ns["y"], ns["out"]
    folder = Path(ns["saxpy"][(4, 1), 256].replay_bundle(2.5, x, y[::2].copy(), xcuda.Out(out), 1000))
    try:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        for name in ("launch", "module.cubin", "arguments.bin", "region-0.bin", "region-1.bin"):
            assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600, name
        assert not (folder / "region-2.bin").exists()  # xcuda.Out: the launch's device copy starts uninitialised
        assert (folder / "region-0.bin").read_bytes() == x.tobytes()
        assert (folder / "region-1.bin").read_bytes() == y[::2].tobytes()
        assert (folder / "module.cubin").read_bytes()[:4] == b"\x7fELF"
        manifest = (folder / "launch").read_text().splitlines()
        assert manifest[:7] == ["xcuda-replay 1", "kernel saxpy", "name saxpy", "device 0", "grid 4 1 1",
                                "block 256 1 1", "shared 0"]
        assert "region 2 4000 -" in manifest and "pointer 3 2 0" in manifest
        packed = (folder / "arguments.bin").read_bytes()
        assert struct.unpack_from("<f", packed, 0)[0] == 2.5
        assert struct.unpack_from("<Q", packed, 4 + 3 * 8)[0] == 1000
        described = subprocess.run([str(REPLAY), "--describe", str(folder)], capture_output=True, text=True, check=True)
        assert described.stdout.startswith("saxpy[grid=(4, 1, 1), block=(256, 1, 1)] on device 0, 3 buffers (10.0 kB)")
        assert "argument 3: 8 bytes, points into region 2 at offset 0" in described.stdout
        assert "region 2: 4000 bytes, uninitialised" in described.stdout
    finally:
        shutil.rmtree(folder)


def test_xcuda_replay_refuses_a_bundle_others_could_have_written(ns, tmp_path):
    folder = Path(ns["saxpy"][4, 256].replay_bundle(2.0, ns["x"], ns["y"], ns["out"], 1000))
    try:
        (folder / "module.cubin").chmod(0o666)
        refused = subprocess.run([str(REPLAY), str(folder)], capture_output=True, text=True)
        assert refused.returncode == 1
        assert "module.cubin is missing, or is not a private file of yours" in refused.stderr
    finally:
        shutil.rmtree(folder)
    usage = subprocess.run([str(REPLAY)], capture_output=True, text=True)
    assert usage.returncode == 1 and "usage: xcuda-replay" in usage.stderr


@pytest.mark.nogpu
def test_xcuda_replay_without_a_gpu_exits_with_status_2(ns):
    folder = Path(ns["saxpy"][4, 256].replay_bundle(2.0, ns["x"], ns["y"], ns["out"], 1000))
    try:
        ran = subprocess.run([str(REPLAY), str(folder)], capture_output=True, text=True)
        assert ran.returncode == 2 and ran.stderr.startswith("xcuda-replay: no GPU:")
    finally:
        shutil.rmtree(folder)


# ----- recorded ncu output --------------------------------------------------------------------------

def probe_profile(plot=True):
    return xcuda.LaunchProfile.from_ncu(recorded("ncu/ncu_raw.csv"), recorded("ncu/ncu_details.csv"),
                                        source_page=recorded("ncu/ncu_source_both.csv"), source=PROBE,
                                        cell_file="probe.cu", plot=plot)


def test_a_recorded_profile_gives_the_table_figures_and_verdict():
    p = probe_profile()
    assert p.kernel == "saxpy" and p.device == "NVIDIA H200"
    assert p.duration_us == pytest.approx(60.8)
    assert p.dram_gbs == pytest.approx(3110.17, abs=0.01)
    assert p.dram_percent == pytest.approx(64.66)
    assert p.sm_percent == pytest.approx(30.60)
    assert p.achieved_occupancy == pytest.approx(73.45) and p.theoretical_occupancy == 100
    assert p.registers == 16 and p.static_shared == 0
    assert p.bound == "memory"
    assert p.verdict.startswith("memory-bound: memory at 64% of its peak (DRAM 3.11 TB/s, 65%)")
    assert p.metrics["launch__grid_size"] == 65536
    assert p.metrics["device__attribute_display_name"] == "NVIDIA H200"
    assert [r["name"] for r in p.rules] == ["SOLBottleneck", "AchievedOccupancy"]
    assert p.gflops is None  # the recorded run counted no floating-point instructions
    text = repr(p)
    for fragment in ("saxpy on NVIDIA H200", "duration           60.80 us", "DRAM throughput    3.11 TB/s (65% of peak",
                     "occupancy          73% achieved, 100% theoretical", "verdict            memory-bound",
                     "ncu SOLBottleneck (OPT)"):
        assert fragment in text


def test_a_recorded_profile_says_which_line_the_time_goes_to():
    p = probe_profile()
    assert sorted(p.lines) == [7, 9, 10, 11, 12]
    busiest = max(p.lines, key=lambda line: p.lines[line]["samples"])
    assert busiest == 11
    assert p.lines[11]["top_stall"] == "long_sb" and p.lines[11]["top_stall_share"] > 0.9
    rows = [line for line in repr(p).splitlines() if line.startswith("  11 ")]
    assert rows and "86%" in rows[0] and "long scoreboard" in rows[0] and "out[i] = a * x[i] + y[i];" in rows[0]


def test_a_recorded_profile_renders_as_xml_safe_html_with_its_plot():
    pytest.importorskip("matplotlib")
    p = probe_profile()
    html = p._repr_html_()
    ElementTree.fromstring(html)  # one well-formed element
    assert "memory-bound" in html and "Where the time goes" in html and "data:image/png;base64," in html
    figure = p.plot()
    # No FLOP counts in the recorded run: each unit's percent of peak instead of a roofline.
    assert figure.axes[0].get_title() == "speed of light: saxpy (memory-bound)"
    p.show_plot = False
    assert "data:image/png" not in p._repr_html_()


def test_the_roofline_is_drawn_when_ncu_counted_the_floating_point_work():
    pytest.importorskip("matplotlib")
    # The recorded raw page with the roofline section's counts added as ncu names them: 2^24 FFMAs
    # (saxpy's one per element), the FP32 FFMA peak per cycle of 132 SMs x 128 lanes, a 1.755 GHz clock.
    lines = recorded("ncu/ncu_raw.csv").splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    names = ["sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
             "sm__cycles_elapsed.avg.per_second"]
    units = ["inst", "inst/cycle", "cycle/s"]
    values = ["16,777,216", "16,896", "1,755,000,000"]
    for offset, extra in enumerate((names, units, values)):
        lines[header + offset] += "," + ",".join(f'"{v}"' for v in extra)
    p = xcuda.LaunchProfile.from_ncu("\n".join(lines) + "\n", recorded("ncu/ncu_details.csv"), source=PROBE)
    assert p.arithmetic_intensity == pytest.approx(2 * 16777216 / (134229248 + 54868992))
    assert p.gflops == pytest.approx(2 * 16777216 / 60.8e-6 / 1e9)
    figure = p.plot()
    assert figure.axes[0].get_title() == "roofline: saxpy (memory-bound)"
    assert figure.axes[0].get_xscale() == "log"


def test_a_profile_read_from_recorded_output_has_no_kernel_to_show_lines_for(ns):
    p = probe_profile(plot=False)
    with pytest.raises(ValueError, match="recorded ncu output"):
        p.lines_view()
    with pytest.raises(TypeError, match="takes an xcuda.LaunchProfile"):
        ns["saxpy"].lines(profile="not a profile")
    with pytest.raises(ValueError, match="this profile is of recorded ncu output, not of this kernel"):
        ns["saxpy"].lines(profile=p)


# ----- recorded compute-sanitizer output ------------------------------------------------------------

def test_a_recorded_out_of_bounds_write_is_mapped_to_its_line_thread_and_block():
    r = xcuda.SanitizerReport.from_output(recorded("sanitizer/memcheck.txt"), "memcheck", PROBE, "probe.cu")
    assert not r.clean and r.errors == 2 and r.kernel_findings == 1
    first = r.findings[0]
    assert first["title"] == "Invalid __global__ write of size 4 bytes" and first["kind"] == "memory access"
    assert first["kernel"] == "oob_write" and first["line"] == 18
    assert first["thread"] == "(232,0,0)" and first["block"] == "(3,0,0)"
    assert r.findings[1]["kind"] == "api"
    assert "at line 18 (oob_write+0xc0): data[i] = 1.0f;" in repr(r)
    html = r._repr_html_()
    ElementTree.fromstring(html)
    assert "<code>data[i] = 1.0f;</code>" in html


def test_a_recorded_race_names_both_lines():
    r = xcuda.SanitizerReport.from_output(recorded("sanitizer/racecheck.txt"), "racecheck", PROBE, "probe.cu")
    assert r.errors == 1 and r.warnings == 0
    (race,) = r.findings
    assert race["kind"] == "race" and race["line"] == 24
    assert [(l["access"], l["line"]) for l in race["locations"]] == [("Write", 24), ("Write", 24), ("Read", 25)]
    assert "Read at line 25 (shared_race+0xb0), 640 hazards: out[threadIdx.x] = cell[(threadIdx.x + 1) % 32];" in repr(r)


def test_a_recorded_clean_run_is_clean():
    r = xcuda.SanitizerReport.from_output(recorded("sanitizer/initcheck.txt"), "initcheck", PROBE)
    assert r.clean and r.errors == 0 and r.findings == []
    assert repr(r).startswith("compute-sanitizer --tool initcheck: no errors")
    assert "saxpy: no error" in r.program_output


# ----- the views' hover notes ------------------------------------------------------------------------

def test_ptx_and_sass_views_explain_opcodes_on_hover(ns):
    html = ns["saxpy"].lines()._repr_html_()
    assert 'class="op" title="ld: load from memory into a register. .global: global (device) memory.' in html
    assert 'title="setp: compares and sets a predicate register.' in html
    ptx_html = ns["saxpy"].ptx._repr_html_()
    assert 'title="fma: fused multiply-add: a * b + c with one rounding.' in ptx_html
    ElementTree.fromstring(ptx_html)


# ----- quiet at exit ---------------------------------------------------------------------------------

def test_importing_xcuda_closes_the_session_at_exit_once():
    # CPython's count of atexit registrations (it never goes down): importing xcuda adds one, %load_ext
    # none; running the exit handlers empties the module registry, as xcuda._shutdown does.
    code = (
        "import atexit\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        "before = atexit._ncallbacks()\n"
        "import xcuda\n"
        "imported = atexit._ncallbacks()\n"
        "shell.run_line_magic('load_ext', 'xcuda')\n"
        "loaded = atexit._ncallbacks()\n"
        "xcuda.compile('extern \"C\" __global__ void k(int* p) { *p = 1; }', name='exit_test')\n"
        "print(imported - before, loaded - imported, 'exit_test' in repr(xcuda.status({})))\n"
        "atexit._run_exitfuncs()\n"
        "print('exit_test' in repr(xcuda.status({})))\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["1", "0", "True", "False"], ran.stdout + ran.stderr
