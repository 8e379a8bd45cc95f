"""Tensor cores on the simulator: wmma (the shapes of the CUDA sample cudaTensorCoreGemm, and one tile of each
other wmma shape, exact on small integers) and mma.sync fed by ldmatrix (tests/simulator/tensor_core_kernels.py),
against numpy.

f16 inputs, f32 accumulation. The simulator's products are exact and each mma's sums are rounded once to f32
(docs/simulator.md); a GPU's tensor core sums in an order and precision it does not specify. Both are held to
the same bound: |D - D_exact| <= 2 K u (|alpha| |A| |B| + |beta| |C|) + u |D_exact|, with u = 2^-24 (float32's
unit roundoff) and D_exact numpy's product in float64 of the same f16 values: K roundings of partial sums at
most, each of relative size u, plus the final rounding to f32, with a factor of two for the GPU's
truncating adders. Marked gpu, the same kernels on the GPU are held to it too.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import tensor_core_kernels as kernels  # noqa: E402
from kernel_runs import run_kernels  # noqa: E402


def check_against_numpy(out):
    v = kernels.inputs()
    a, b, c = v["a"].astype(np.float64), v["b"].astype(np.float64), v["c"].astype(np.float64)
    u, k = 2.0 ** -24, kernels.K
    for name, alpha, beta in (("simple_gemm", kernels.ALPHA, kernels.BETA), ("staged_gemm", kernels.ALPHA, kernels.BETA),
                              ("mma_gemm", 1.0, 0.0)):
        exact = alpha * (a @ b) + beta * c
        bound = 2 * k * u * (abs(alpha) * (np.abs(a) @ np.abs(b)) + abs(beta) * np.abs(c)) + u * np.abs(exact)
        error = np.abs(out[name].astype(np.float64) - exact)
        assert (error <= bound).all(), (name, float(error.max()), float(bound[np.argmax(error - bound)]))
        # and not trivially: the result is a matrix product, not zeros or C
        assert np.abs(exact).max() > 1 and np.abs(out[name]).max() > 1, name
    # The other wmma shapes, on small integers: exact on any device.
    for name in ("tall", "wide"):
        assert np.array_equal(out[name], v[name + "_a"].astype(np.float32) @ v[name + "_b"].astype(np.float32) + 1), name
    assert np.array_equal(out["bytes"], v["bytes_a"].astype(np.int64) @ v["bytes_b"].astype(np.int64))


def test_wmma_and_mma_sync_gemms_on_the_simulator_agree_with_numpy_within_the_accumulation_bound(build_dir, tmp_path):
    check_against_numpy(run_kernels(HERE / "tensor_core_kernels.py", build_dir, tmp_path / "simulator.npz", True))


@pytest.mark.gpu
def test_the_same_gemms_on_the_gpu_agree_with_numpy_within_the_same_bound(build_dir, tmp_path):
    check_against_numpy(run_kernels(HERE / "tensor_core_kernels.py", build_dir, tmp_path / "gpu.npz", False))
