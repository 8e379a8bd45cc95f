"""TMA and mbarriers across a thread-block cluster (the kernels: tests/cpp/fixtures/tma_cluster_kernels.cu, which the
simulator's C++ tests compile too), marked gpu and run on the PTX simulator by
tests/simulator/test_tma_clusters_on_the_simulator.py, each against numpy:

- a tile multicast by cp.async.bulk.tensor...multicast::cluster through xcuda.tensor_map to the blocks a ctaMask
  names (issued by a block inside or outside its mask), and the plain bulk copy's multicast;
- a ring of mbarrier.arrive.release.cluster.shared::cluster on the next block's barrier over three phases, and a
  token passed back and forth between two blocks that wait in turn on each other's arrives;
- a cp.async.bulk and a cp.reduce.async.bulk .add.u32 from a block's shared memory into the next block's;
- mbarrier.complete_tx.shared::cluster completing on the next block's barrier exactly the bytes it expects;
- cp.reduce.async.bulk's .add.noftz/.min/.max of f16 and bf16 and .inc/.dec of u32, and the tensor reductions of an
  f16 map and a u32 map.
Every launch names cluster=(...), and every ctaMask stays inside the cluster, as a GPU of compute capability 9.0 needs.
"""
from pathlib import Path

import numpy as np
import pytest

import xcuda
from gpu_arch import needs_compute_capability

HERE = Path(__file__).resolve().parent
KERNELS = (HERE.parent / "cpp" / "fixtures" / "tma_cluster_kernels.cu").read_text()


def cluster_kernels(name):
    needs_compute_capability(9, "TMA and thread-block clusters")
    return xcuda.compile(KERNELS, name=name)


def bf16_to_float(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def float_to_bf16(x):
    """float32 to bfloat16 bits, rounded to nearest even (no NaN among the values here)."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


@pytest.mark.gpu
def test_a_tile_multicast_reaches_exactly_the_blocks_of_its_mask_on_the_gpu():
    m = cluster_kernels("tma_multicast_tile")
    a = (np.arange(8 * 64, dtype=np.float32).reshape(8, 64) * 0.25 - 31).astype(np.float32)
    tm = xcuda.tensor_map(xcuda.to_device(a), box=(8, 32))
    for mask, issuer in [(0b1011, 0), (0b0110, 1), (0b0101, 3), (0b1111, 2)]:
        out = np.full(8 * 256, -1, np.float32)
        m.multicast_tile.configure(8, 64, cluster=(4, 1, 1))(tm, out, mask, issuer)
        expected = np.full((8, 256), -1, np.float32)
        for block in range(8):
            if (mask >> (block % 4)) & 1:
                expected[block] = a[:, (block // 4) * 32:(block // 4) * 32 + 32].reshape(-1)
        assert np.array_equal(out.reshape(8, 256), expected), (mask, issuer)


@pytest.mark.gpu
def test_a_bulk_multicast_lands_the_same_bytes_in_each_named_block_on_the_gpu():
    m = cluster_kernels("tma_multicast_bytes")
    source = (np.arange(128, dtype=np.int32) * 7 - 300).astype(np.int32)
    for mask in (0b11, 0b10):
        out = np.full(4 * 64, 7777, np.int32)
        m.multicast_bytes.configure(4, 32, cluster=2)(source, out, mask, 0)
        expected = np.full((4, 64), 7777, np.int32)
        for block in range(4):
            if (mask >> (block % 2)) & 1:
                expected[block] = source[(block // 2) * 64:(block // 2) * 64 + 64]
        assert np.array_equal(out.reshape(4, 64), expected), mask


@pytest.mark.gpu
def test_arrives_on_the_next_blocks_mbarrier_complete_its_phases_on_the_gpu():
    m = cluster_kernels("tma_remote_arrive")
    rounds, blocks, threads, cluster = 3, 8, 64, 4
    out = np.full(rounds * blocks * threads, -1, np.int32)
    m.remote_arrive_ring.configure(blocks, threads, cluster=cluster)(out, rounds)
    block = np.arange(blocks)
    previous = block // cluster * cluster + (block % cluster + cluster - 1) % cluster
    expected = (previous[None, :, None] * 1000 + np.arange(rounds)[:, None, None] * 100 + np.arange(threads)[None, None, :])
    assert np.array_equal(out.reshape(rounds, blocks, threads), expected)


@pytest.mark.gpu
def test_two_blocks_pass_a_token_through_each_others_mbarriers_on_the_gpu():
    m = cluster_kernels("tma_ping_pong")
    rounds = 4
    out = np.full(2 * 64, -1, np.int32)
    m.ping_pong.configure(4, 64, cluster=2)(out, rounds)
    assert np.array_equal(out, np.tile(np.arange(64) * 1000 + 2 * rounds, 2))


@pytest.mark.gpu
def test_a_copy_and_a_reduction_into_the_next_blocks_shared_memory_on_the_gpu():
    m = cluster_kernels("tma_to_next_block")
    block = np.arange(6)
    previous = block // 3 * 3 + (block % 3 + 2) % 3
    sent = previous[:, None] * 100 + np.arange(32)[None, :]
    for reduce in (0, 1):
        out = np.full(6 * 32, -1, np.int32)
        m.to_next_block.configure(6, 32, cluster=3)(out, reduce)
        own = (block % 3)[:, None] * 7 + np.arange(32)[None, :]
        assert np.array_equal(out.reshape(6, 32), sent + (own if reduce else 0)), reduce


@pytest.mark.gpu
def test_complete_tx_on_the_next_blocks_mbarrier_completes_its_phase_on_the_gpu():
    m = cluster_kernels("tma_remote_complete_tx")
    out = np.full(8 * 16, -2, np.int32)
    m.remote_complete_tx.configure(8, 32, cluster=4)(out)
    block = np.arange(8)
    rank, previous = block % 4, block // 4 * 4 + (block % 4 + 3) % 4
    i = np.arange(16)[None, :]
    expected = np.where(i < 4 * (rank[:, None] + 1), previous[:, None] * 100 + i, -1)
    assert np.array_equal(out.reshape(8, 16), expected)


def half_reference(op, old, new):
    """What cp.reduce.async.bulk's op 0..5 leaves in global memory (f16 ops 0-2 on float16, bf16 ops 3-5 on bits)."""
    if op < 3:
        a, b = old.astype(np.float64), new.astype(np.float64)
        return [(a + b).astype(np.float16), np.minimum(old, new), np.maximum(old, new)][op]
    a, b = bf16_to_float(old), bf16_to_float(new)
    return float_to_bf16([a + b, np.minimum(a, b), np.maximum(a, b)][op - 3])  # sums of these are exact in float32


@pytest.mark.gpu
def test_the_f16_bf16_inc_and_dec_bulk_reductions_match_numpy_on_the_gpu():
    m = cluster_kernels("tma_bulk_reductions")
    rng = np.random.default_rng(90)
    for op in range(6):
        if op < 3:
            old, new = (rng.uniform(-100, 100, 32).astype(np.float16) for _ in range(2))
        else:
            old, new = (float_to_bf16(rng.uniform(-100, 100, 32)) for _ in range(2))
        out = old.copy()
        m.bulk_reduce[1, 32](out, new.view(np.uint32), op)
        assert np.array_equal(out.view(np.uint16), half_reference(op, old, new).view(np.uint16)), op
    old, new = rng.integers(0, 12, 16).astype(np.uint32), rng.integers(0, 12, 16).astype(np.uint32)
    for op, expected in [(6, np.where(old >= new, 0, old + 1)), (7, np.where((old == 0) | (old > new), new, old - 1))]:
        out = old.copy()
        m.bulk_reduce[1, 32](out, new, op)
        assert np.array_equal(out, expected.astype(np.uint32)), op


@pytest.mark.gpu
def test_tensor_reductions_of_f16_and_u32_maps_match_numpy_on_the_gpu():
    m = cluster_kernels("tma_tensor_reductions")
    rng = np.random.default_rng(91)
    old = rng.uniform(-50, 50, (8, 32)).astype(np.float16)
    tile = rng.uniform(-50, 50, (8, 32)).astype(np.float16)
    for op, expected in [(0, (old.astype(np.float64) + tile.astype(np.float64)).astype(np.float16)),
                         (1, np.minimum(old, tile)), (2, np.maximum(old, tile))]:
        d = xcuda.to_device(old)
        m.tensor_reduce[1, 32](xcuda.tensor_map(d, box=(8, 32)), tile.view(np.uint32), 512, op)
        assert np.array_equal(d.copy_to_host().view(np.uint16), expected.view(np.uint16)), op
    counters, limits = rng.integers(0, 9, (8, 32)).astype(np.uint32), rng.integers(0, 9, (8, 32)).astype(np.uint32)
    for op, expected in [(3, np.where(counters >= limits, 0, counters + 1)),
                         (4, np.where((counters == 0) | (counters > limits), limits, counters - 1))]:
        d = xcuda.to_device(counters)
        m.tensor_reduce[1, 32](xcuda.tensor_map(d, box=(8, 32)), limits, 1024, op)
        assert np.array_equal(d.copy_to_host(), expected.astype(np.uint32)), op
