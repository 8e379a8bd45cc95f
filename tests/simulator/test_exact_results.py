"""The simulator's results are bit-identical to a GPU's where PTX makes them exact.

tests/simulator/exact_kernels.py runs integer arithmetic (32 and 64 bits, high halves, signed and unsigned
division, shifts, bit operations), integer atomics, f32/f64 add, sub, mul, fma, div.rn, rcp.rn and
sqrt.rn, and conversions with explicit rounding, and saves every output. Here it runs in a child process
on the simulator (XCUDA_DEVICE=simulator) and, where a GPU is, in another on the GPU, and the bytes are
compared. Without a GPU the comparison skips, saying why; the simulator's half still runs, and is checked
against numpy wherever numpy computes the same IEEE or integer operation.
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import exact_kernels  # noqa: E402


def run_exact_kernels(build_dir, tmp_path, simulator):
    env = dict(os.environ)
    for variable in ("XCUDA_LIBCUDA", "XCUDA_DEVICE", "XCUDA_SIM_MAX_STEPS"):
        env.pop(variable, None)
    if simulator:
        env["XCUDA_DEVICE"] = "simulator"
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    target = tmp_path / ("simulator.npz" if simulator else "gpu.npz")
    ran = subprocess.run([sys.executable, str(HERE / "exact_kernels.py"), str(target)], capture_output=True,
                         text=True, timeout=600, env=env)
    assert ran.returncode == 0, f"{ran.stdout[-2000:]}\n{ran.stderr[-4000:]}"
    assert ("xcuda PTX simulator" in ran.stdout) == simulator, ran.stdout
    return dict(np.load(target))


def bits(array):
    return array.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[array.dtype.itemsize])


def test_the_exact_kernels_run_on_the_simulator_and_agree_with_numpy_where_numpy_is_exact(build_dir, tmp_path):
    out = run_exact_kernels(build_dir, tmp_path, simulator=True)
    v = exact_kernels.inputs()
    n = exact_kernels.N
    x, y = v["a32"].astype(np.uint64), (v["b32"] | 1).astype(np.uint64)
    ints = out["integers"].reshape(n, 16).astype(np.uint64)
    mask = np.uint64(0xFFFFFFFF)
    s = y & np.uint64(31)
    for k, expected in {0: (x + y) & mask, 1: (x - y) & mask, 2: (x * y) & mask, 3: (x * y) >> np.uint64(32),
                        5: x // y, 6: x % y, 9: (x << s) & mask, 10: x >> s}.items():
        assert np.array_equal(ints[:, k], expected), k
    assert np.array_equal(out["bins"], np.bincount(v["a32"] % 61, minlength=61))
    assert out["total"][0] == int(v["a32"].astype(np.uint64).sum())
    fa, fb, fc = v["fa"], v["fb"], v["fc"]
    with np.errstate(over="ignore", under="ignore"):
        floats = out["floats"].reshape(n, 8)
        for k, expected in {0: fa + fb, 1: fa * fb, 3: fa / fb, 4: np.sqrt(np.abs(fa)), 5: fa - fc, 7: fc / fb}.items():
            assert np.array_equal(bits(floats[:, k].copy()), bits(expected.astype(np.float32))), k
        da, db = v["da"], v["db"]
        doubles = out["doubles"].reshape(n, 6)
        for k, expected in {0: da + db, 1: da * db, 3: da / db, 4: np.sqrt(np.abs(da))}.items():
            assert np.array_equal(bits(doubles[:, k].copy()), bits(expected)), k
    conversions = out["conversions"].reshape(n, 6)
    with np.errstate(over="ignore"):
        scaled = fa * np.float32(1000)  # the kernel's x: huge inputs overflow to infinity there too
    finite = np.abs(scaled) < 2.0 ** 31
    assert np.array_equal(conversions[finite, 1], np.trunc(scaled[finite]).astype(np.int32))
    assert np.array_equal(conversions[finite, 2], np.floor(scaled[finite]).astype(np.int32))
    assert np.array_equal(conversions[finite, 3], np.ceil(scaled[finite]).astype(np.int32))
    assert np.array_equal(conversions[finite, 0], np.rint(scaled[finite]).astype(np.int32))


@pytest.mark.gpu
def test_the_simulator_and_the_gpu_give_the_same_bytes_for_exact_kernels(build_dir, tmp_path):
    gpu = run_exact_kernels(build_dir, tmp_path, simulator=False)
    simulated = run_exact_kernels(build_dir, tmp_path, simulator=True)
    assert gpu.keys() == simulated.keys()
    differing = []
    for name in gpu:
        g, s = bits(gpu[name]), bits(simulated[name])
        if not np.array_equal(g, s):
            where = np.flatnonzero(g != s)
            differing.append(f"{name}: {where.size} of {g.size} differ, first at {where[0]}: GPU {gpu[name][where[0]]!r} "
                             f"(0x{int(g[where[0]]):x}), simulator {simulated[name][where[0]]!r} (0x{int(s[where[0]]):x})")
    assert not differing, "\n".join(differing)
