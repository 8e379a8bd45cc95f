"""Inside one launch on a real GPU: SAXPY profiled by ncu, an out-of-bounds write and a shared-memory
race found by compute-sanitizer on their lines, the session and its arrays untouched after each, the
replay computing what the live launch computes, and xcuda quiet under memcheck.

Marked gpu (skipped with the reason without a driver); the tests that run ncu or compute-sanitizer
skip, saying so, where the tool is missing. About 2 minutes on an H200.
"""
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

import xcuda

pytestmark = pytest.mark.gpu

SOURCE = """extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * x[i] + y[i];
}

extern "C" __global__ void oob_write(float* data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n)
        data[i] = 1.0f;
}

extern "C" __global__ void shared_race(int* out)
{
    __shared__ int cell[32];
    cell[threadIdx.x % 32] = threadIdx.x;
    out[threadIdx.x] = cell[(threadIdx.x + 1) % 32];
}

extern "C" __global__ void read_before_write(const float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] + out[i];
}
"""
# Lines as the editor counts them in the %%cuda cell (its %%cuda line is line 1): SOURCE's own line + 1.
SAXPY_LINE = 6      # out[i] = a * x[i] + y[i];
OOB_LINE = 13       # data[i] = 1.0f;
RACE_WRITE_LINE = 19
RACE_READ_LINE = 20
UNINIT_LINE = 27    # out[i] = in[i] + out[i];


def tool(name):
    try:
        return xcuda.find_tool(name)
    except xcuda.ToolNotFoundError as missing:
        pytest.skip(f"{name} is not installed here: {str(missing).splitlines()[0]}")


@pytest.fixture(scope="module")
def shell():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    shell.run_cell_magic("cuda", "--name probes", SOURCE)
    yield shell
    InteractiveShell.clear_instance()


@pytest.fixture(scope="module")
def probes(shell):
    return shell.user_ns["probes"]


def test_saxpy_is_profiled_near_the_copy_ceiling_measured_in_the_same_run(shell, probes):
    tool("ncu")
    n = 1 << 24
    x = xcuda.to_device(np.random.default_rng(1).random(n).astype(np.float32))
    y = xcuda.to_device(np.random.default_rng(2).random(n).astype(np.float32))
    out = xcuda.to_device(np.full(n, -1.0, np.float32))
    before = out.copy_to_host()
    shell.user_ns.update(x=x, y=y, out=out, n=n)
    profile = shell.run_line_magic("cuda_profile", "-o probes.saxpy[(n + 255) // 256, 256](2.0, x, y, out, n)")
    ceiling = xcuda.peak_bandwidth()  # a device-to-device copy, read and written bytes counted
    assert isinstance(profile, xcuda.LaunchProfile)
    assert profile.kernel == "saxpy" and profile.duration_us > 0
    assert profile.dram_gbs == pytest.approx(ceiling, rel=0.25), (profile.dram_gbs, ceiling, repr(profile))
    assert profile.bound == "memory" and profile.verdict.startswith("memory-bound")
    assert 0 < profile.dram_percent <= 100 and 0 < profile.sm_percent <= 100
    assert 0 < profile.achieved_occupancy <= profile.theoretical_occupancy <= 100
    assert profile.registers > 0
    # The time goes to the line that loads and stores.
    assert profile.lines, profile.lines_note
    busiest = max((line for line in profile.lines if line), key=lambda line: profile.lines[line]["samples"])
    assert busiest == SAXPY_LINE
    notes = profile.lines_view()
    assert "of stall samples" in notes.text and "of stall samples" in notes._repr_html_()
    html = probes.saxpy.lines(profile=profile)._repr_html_()
    assert "with the profile&#39;s figures" in html or "with the profile's figures" in html
    with pytest.raises(ValueError, match="this profile is of kernel 'saxpy'"):
        probes.oob_write.lines(profile=profile)
    # The session was only read: the output array was not written, the next launch works.
    np.testing.assert_array_equal(out.copy_to_host(), before)
    probes.saxpy[(n + 255) // 256, 256](2.0, x, y, out, n)
    np.testing.assert_allclose(out.copy_to_host()[:8], 2.0 * x.copy_to_host()[:8] + y.copy_to_host()[:8], rtol=1e-6)


def test_a_kept_profile_leaves_ncus_report_and_a_numpy_launch_copies_nothing_back(probes):
    tool("ncu")
    n = 1 << 16
    x, y = np.ones(n, np.float32), np.full(n, 2.0, np.float32)
    out = np.zeros(n, np.float32)
    profile = probes.saxpy[n // 256, 256].profile(3.0, x, y, out, n, keep=True, source=False)
    try:
        assert (Path(profile.folder) / "profile.ncu-rep").exists()
        assert (Path(profile.folder) / "launch").exists()
        assert profile.lines_note == "source-level figures were not asked for"
    finally:
        shutil.rmtree(profile.folder)
    assert (out == 0).all()  # the replay's result stays in the replay


def test_an_out_of_bounds_write_is_found_on_its_line_and_the_session_lives(shell, probes):
    tool("compute-sanitizer")
    data = xcuda.to_device(np.zeros(1000, np.float32))
    keep = xcuda.to_device(np.arange(10, dtype=np.float32))
    shell.user_ns.update(data=data)
    report = shell.run_line_magic("cuda_sanitize", "-o probes.oob_write[4, 256](data, 1000)")
    assert isinstance(report, xcuda.SanitizerReport) and not report.clean
    finding = report.findings[0]
    assert finding["kind"] == "memory access" and "write of size 4" in finding["title"]
    assert finding["kernel"] == "oob_write" and finding["line"] == OOB_LINE
    assert finding["thread"] == "(232,0,0)" and finding["block"] == "(3,0,0)"
    assert "data[i] = 1.0f;" in repr(report)
    # Untouched: the array the kernel would have written, another array, launches.
    assert not data.copy_to_host().any()
    np.testing.assert_array_equal(keep.copy_to_host(), np.arange(10, dtype=np.float32))
    out = xcuda.zeros(256, np.float32)
    probes.saxpy[1, 256](2.0, keep, keep, out, 10)
    np.testing.assert_array_equal(out.copy_to_host()[:10], 3 * np.arange(10, dtype=np.float32))
    assert xcuda.driver_available()


def test_a_shared_memory_race_is_found_on_both_lines(probes):
    tool("compute-sanitizer")
    out = xcuda.zeros(256, np.int32)
    report = probes.shared_race[1, 256].sanitize(out, tool="racecheck")
    races = [f for f in report.findings if f["kind"] == "race"]
    assert races, repr(report)
    lines = {location["line"] for finding in races for location in finding["locations"]}
    assert {RACE_WRITE_LINE, RACE_READ_LINE} <= lines
    assert report.errors >= 1
    assert not out.copy_to_host().any()


def test_initcheck_sees_an_out_array_as_uninitialised(probes):
    tool("compute-sanitizer")
    n = 512
    found = probes.read_before_write[2, 256].sanitize(np.ones(n, np.float32), xcuda.Out(np.zeros(n, np.float32)), n,
                                                      tool="initcheck")
    assert any(f["kind"] == "uninitialized" and f["line"] == UNINIT_LINE for f in found.findings), repr(found)
    clean = probes.read_before_write[2, 256].sanitize(np.ones(n, np.float32), np.zeros(n, np.float32), n, tool="initcheck")
    assert clean.clean, repr(clean)


def test_the_replay_computes_what_the_live_launch_computes(probes, tmp_path):
    n = 10_000
    x = xcuda.to_device(np.random.default_rng(3).random(n).astype(np.float32))
    y = np.random.default_rng(4).random(n).astype(np.float32)
    out = xcuda.to_device(np.zeros(n, np.float32))
    launcher = probes.saxpy[xcuda.grid_for(n), 256]
    folder = launcher.replay_bundle(1.5, x, y, out, n)
    try:
        replay = Path(xcuda.__file__).parent / "xcuda-replay"
        subprocess.run([str(replay), "--output", str(tmp_path), folder], check=True, capture_output=True, text=True)
    finally:
        shutil.rmtree(folder)
    launcher(1.5, x, y, out, n)
    live = out.copy_to_host()
    # Regions: the numpy argument's first (y), then the device arrays by address; out's holds the result.
    results = [np.frombuffer(p.read_bytes(), np.float32) for p in sorted(tmp_path.glob("region-*.out"))]
    assert any(r.shape == live.shape and np.array_equal(r, live) for r in results)


def test_xcuda_is_quiet_under_memcheck(tmp_path):
    sanitizer = tool("compute-sanitizer")
    script = tmp_path / "launches.py"
    script.write_text(textwrap.dedent(f"""
        import numpy as np
        import xcuda
        module = xcuda.compile({SOURCE!r}, name="quiet")
        n = 3_000_000  # above the staging threshold: numpy copies go through the page-locked buffers
        x = np.random.default_rng(0).random(n).astype(np.float32)
        out = np.zeros(n, np.float32)
        module.saxpy[xcuda.grid_for(n), 256](2.0, x, x, out, n)                  # numpy arrays
        dx, dout = xcuda.to_device(x), xcuda.empty(n, np.float32)
        module.saxpy[xcuda.grid_for(n), 256](2.0, dx, dx, dout, n)               # device arrays
        pinned = xcuda.empty_pinned(n, np.float32)
        pinned[:] = x
        module.saxpy[xcuda.grid_for(n), 256](2.0, pinned, pinned, xcuda.Out(out), n)  # page-locked arrays
        stream = xcuda.Stream()
        module.saxpy[xcuda.grid_for(n), 256, stream](2.0, dx, dx, dout, n)       # a stream
        stream.synchronize()
        assert np.allclose(dout.copy_to_host(), 3 * x)
        print("launched")
    """))
    ran = subprocess.run([sanitizer, "--tool", "memcheck", "--leak-check", "full", sys.executable, str(script)],
                         capture_output=True, text=True, env=dict(os.environ), timeout=300)
    output = ran.stdout + ran.stderr
    assert "launched" in output, output
    assert "ERROR SUMMARY: 0 errors" in output, output
    assert "Leaked" not in output, output
    # --leak-check full may print its summary even when nothing leaked.
    summary = re.search(r"LEAK SUMMARY: ([\d,]+) bytes leaked", output)
    assert summary is None or summary.group(1) == "0", output
