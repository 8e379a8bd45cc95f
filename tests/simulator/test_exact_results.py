"""The simulator's results are bit-identical to a GPU's where PTX makes them exact.

tests/simulator/exact_kernels.py runs integer arithmetic (32 and 64 bits, high halves, signed and unsigned
division, shifts, bit operations), integer atomics, f32/f64 add, sub, mul, fma, div.rn, rcp.rn and
sqrt.rn, conversions with explicit rounding, the integer families of round 2 (__dp4a/__dp2a,
__byte_perm, __brev/__popc/__clz/__ffs, unsigned __int128 add/sub/mul, __syncthreads_count/and/or and
named barriers), and tiled matrix products copied by cp.async / cuda::barrier / cuda::pipeline with a
producer/consumer ring of cuda::barrier, and saves every output. Here it runs in a child process
on the simulator (XCUDA_DEVICE=simulator) and, where a GPU is, in another on the GPU, and the bytes are
compared. Without a GPU the comparison skips, saying why; the simulator's half still runs, and is checked
against numpy wherever numpy computes the same IEEE or integer operation.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import exact_kernels  # noqa: E402
from kernel_runs import run_kernels  # noqa: E402


def run_exact_kernels(build_dir, tmp_path, simulator):
    target = tmp_path / ("simulator.npz" if simulator else "gpu.npz")
    return run_kernels(HERE / "exact_kernels.py", build_dir, target, simulator)


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


def test_byte_dot_products_permutes_bit_counts_128_bit_arithmetic_and_block_votes_agree_with_numpy(build_dir, tmp_path):
    out = run_exact_kernels(build_dir, tmp_path, simulator=True)
    v = exact_kernels.inputs()
    n = exact_kernels.N
    x, y, z = v["a32"], v["b32"], v["c32"]
    got = out["bit_families"].reshape(n, 9)
    wrap = lambda values: (values.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32)  # noqa: E731
    c = z.astype(np.int64)

    def lanes(values, dtype, count):
        return values.view(dtype).reshape(n, count).astype(np.int64)

    assert np.array_equal(got[:, 0], wrap((lanes(x, np.int8, 4) * lanes(y, np.int8, 4)).sum(1) + c)), "__dp4a signed"
    assert np.array_equal(got[:, 1], wrap((lanes(x, np.uint8, 4) * lanes(y, np.uint8, 4)).sum(1) + c)), "__dp4a unsigned"
    assert np.array_equal(got[:, 2], wrap((lanes(x, np.int16, 2) * lanes(y, np.int8, 4)[:, :2]).sum(1) + c)), "__dp2a_lo"
    assert np.array_equal(got[:, 3], wrap((lanes(x, np.uint16, 2) * lanes(y, np.uint8, 4)[:, 2:]).sum(1) + c)), "__dp2a_hi"
    pair = np.concatenate([x.view(np.uint8).reshape(n, 4), y.view(np.uint8).reshape(n, 4)], axis=1)
    selector = z & np.uint32(0x7777)
    permuted = np.zeros(n, np.uint32)
    for k in range(4):
        byte = pair[np.arange(n), (selector >> np.uint32(4 * k)) & np.uint32(7)].astype(np.uint32)
        permuted |= byte << np.uint32(8 * k)
    assert np.array_equal(got[:, 4], permuted), "__byte_perm"
    bit = lambda values, k: (values >> np.uint32(k)) & np.uint32(1)  # noqa: E731
    assert np.array_equal(got[:, 5], sum(bit(x, k) << np.uint32(31 - k) for k in range(32)).astype(np.uint32)), "__brev"
    assert np.array_equal(got[:, 6], sum(bit(x, k) for k in range(32))), "__popc"
    shifted = y >> (z & np.uint32(31))
    length = sum((shifted >> np.uint32(k)) != 0 for k in range(32)).astype(np.uint32)  # the bit length
    assert np.array_equal(got[:, 7], np.uint32(32) - length), "__clz"
    w = (x & (y | z)).astype(np.int64)
    lowest = w & -w
    assert np.array_equal(got[:, 8], np.where(w == 0, 0, np.log2(np.maximum(lowest, 1)).astype(np.int64) + 1)), "__ffs"

    pairs = n // 2
    a64, b64 = v["a64"], v["b64"]
    wide = out["int128"][:6 * pairs].reshape(pairs, 6)
    for i in range(pairs):
        p = int(a64[2 * i]) | int(a64[2 * i + 1]) << 64
        q = int(b64[2 * i]) | int(b64[2 * i + 1]) << 64
        for k, r in enumerate((p + q, p - q, p * q)):
            r %= 1 << 128
            assert (int(wide[i, 2 * k]), int(wide[i, 2 * k + 1])) == (r & (2 ** 64 - 1), r >> 64), (i, k)

    votes = v["votes"].reshape(n // 256, 256)
    got = out["block_votes"].reshape(n // 256, 256, 4)
    for b in range(n // 256):
        assert (got[b, :, 0] == (votes[b] > 0).sum()).all(), ("__syncthreads_count", b)
        assert (got[b, :, 1] == int((votes[b] > -90).all())).all(), ("__syncthreads_and", b)
        assert (got[b, :, 2] == int((votes[b] == 7).any())).all(), ("__syncthreads_or", b)
        t = np.arange(256)
        assert np.array_equal(got[b, :, 3], votes[b][np.where(t < 128, 127 - t, 383 - t)]), ("named barriers", b)
    assert got[1, 0, 1] == 1 and got[2, 0, 2] == 0 and got[4, 0, 2] == 1  # the blocks made to hold and not to


def test_tiled_products_copied_by_cp_async_and_a_barrier_ring_agree_with_numpy(build_dir, tmp_path):
    # globalToShmemAsyncCopy's shapes: five ways of copying tiles asynchronously, each the exact product
    # (small-integer inputs: every sum is exact in float32); the cuda::barrier ring's sums likewise.
    out = run_exact_kernels(build_dir, tmp_path, simulator=True)
    v = exact_kernels.inputs()
    expected = v["ta"].astype(np.float64) @ v["tb"].astype(np.float64)
    for kernel in ("primitives", "staged", "with_barrier", "barrier_words", "group_copy"):
        assert np.array_equal(out["tiled_" + kernel], expected.astype(np.float32)), kernel
    rounds = v["ring"].reshape(exact_kernels.RING_ROUNDS, 64).astype(np.float64)
    buffers = np.concatenate([rounds[:, :32], rounds[:, 32:] * 2], axis=1)
    t = np.arange(128)
    sums = (buffers[:, (t - 32) % 64] + buffers[:, (t * 5) % 64]).sum(axis=0) * (t >= 32)
    assert np.array_equal(out["ring"], np.tile(sums, 2).astype(np.float32))
    rounds = v["ring"].reshape(exact_kernels.RING_ROUNDS * 2, 32).astype(np.float64)
    assert not out["roles"][:32].any() and np.array_equal(out["roles"][32:], np.tile(rounds.sum(axis=0), 3).astype(np.float32))
