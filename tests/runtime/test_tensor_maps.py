"""TMA tensor maps: xcuda.tensor_map(array, box=..., ...) for a `const __grid_constant__ CUtensorMap` parameter
(issue 45 item 3, tiled maps).

- against the fake driver: every scenario of tests/runtime/tensor_map_scenarios.py in a child process (what
  reaches cuTensorMapEncodeTiled, in its order; each documented rule refused first with its message; the map
  and raw 128 bytes passed to a kernel; encodes from four threads);
- marked gpu (tests/simulator/test_tensor_maps_on_the_simulator.py runs them on the PTX simulator too): a tile copy
  through cp.async.bulk.tensor with an mbarrier, tiles past the edge filled with zeros (NaN with oob_fill='nan');
  the Programming Guide's example (a tile loaded, changed, stored back); each swizzle mode read back through the
  inverse pattern in numpy; an im2col load against numpy's padded im2col.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

import xcuda
from gpu_arch import needs_compute_capability

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "tensor_map_scenarios.py"
sys.path.insert(0, str(HERE))
import tensor_map_scenarios  # noqa: E402
sys.path.insert(0, str(HERE.parent))
from fake_scenario_runs import run_against_the_fake_driver  # noqa: E402


@pytest.mark.parametrize("name", sorted(tensor_map_scenarios.SCENARIOS))
def test_scenario_against_the_fake_driver(name, build_dir):
    run_against_the_fake_driver(SCRIPT, name, build_dir)


# One 8 x 32 float tile per block, copied by TMA into shared memory (an mbarrier counts its bytes), then written
# out by the block's threads; tiles past the array's edge come back zero-filled.
TILE_COPY = r"""
#include <cuda.h>
extern "C" __global__ void tile_copy(const __grid_constant__ CUtensorMap map, float* out, int out_cols)
{
  __shared__ alignas(128) float tile[8][32];
  __shared__ alignas(8) unsigned long long bar;
  int x0 = blockIdx.x * 32, y0 = blockIdx.y * 8;
  unsigned bar_addr = (unsigned)__cvta_generic_to_shared(&bar);
  unsigned tile_addr = (unsigned)__cvta_generic_to_shared(&tile[0][0]);
  if (threadIdx.x == 0)
  {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_addr));
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0)
  {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar_addr), "r"(8 * 32 * 4) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(tile_addr), "l"(&map), "r"(x0), "r"(y0), "r"(bar_addr) : "memory");
  }
  asm volatile("{\n .reg .pred done;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n @!done bra WAIT_%=;\n}"
               :: "r"(bar_addr) : "memory");
  for (int i = threadIdx.x; i < 8 * 32; i += blockDim.x)
    out[(y0 + i / 32) * out_cols + x0 + i % 32] = tile[i / 32][i % 32];
}
"""


def needs_tma():
    needs_compute_capability(9, "TMA")


@pytest.mark.gpu
def test_a_tma_tile_copy_matches_numpy_on_the_gpu():
    needs_tma()
    m = xcuda.compile(TILE_COPY, name="tma_tile_copy")
    a = np.arange(10 * 40, dtype=np.float32).reshape(10, 40) + 1  # rows of 160 bytes: a multiple of 16
    d = xcuda.to_device(a)
    tm = xcuda.tensor_map(d, box=(8, 32))
    out = np.full((16, 64), -1, np.float32)
    m.tile_copy[(2, 2), 128](tm, out, 64)
    expected = np.zeros((16, 64), np.float32)
    expected[:10, :40] = a
    assert np.array_equal(out, expected)
    # Raw bytes of the same map work the same.
    out2 = np.full((16, 64), -1, np.float32)
    m.tile_copy[(2, 2), 128](bytes(tm), out2, 64)
    assert np.array_equal(out2, expected)
    # With oob_fill='nan' the elements past the edge are NaN.
    out3 = np.full((16, 64), -1, np.float32)
    m.tile_copy[(2, 2), 128](xcuda.tensor_map(d, box=(8, 32), oob_fill="nan"), out3, 64)
    assert np.array_equal(out3[:10, :40], a) and np.isnan(out3[10:, :]).all() and np.isnan(out3[:, 40:]).all()


# The kernels tests/cpp/simulator/test_simulator_tma.cpp runs too: the Guide-style load-change-store (2 x + 1),
# raw_tile (one box, its shared bytes as they lie), im2col (a column from pixel (n, h, w) with a filter tap).
TMA_KERNELS = (HERE.parent / "cpp" / "fixtures" / "tma_kernels.cu").read_text()


@pytest.fixture(scope="module")
def tma():
    return xcuda.compile(TMA_KERNELS, name="tma_kernels")


@pytest.mark.gpu
def test_the_programming_guides_tma_example_changes_every_tile_in_place(tma):
    needs_tma()
    a = (np.arange(20 * 72, dtype=np.float32).reshape(20, 72) % 97) - 40  # 3 x 3 tiles of 8 x 32 pass both edges
    d = xcuda.to_device(a)
    tma.tile_add[(3, 3), 64](xcuda.tensor_map(d, box=(8, 32)))
    assert np.array_equal(d.copy_to_host(), 2 * a + 1)


def unswizzle(raw, span):
    """numpy's inverse of the swizzle: in 128-byte row r of shared memory, the 16-byte chunk j of each span holds
    the box's chunk j ^ (r % (span / 16)); gather the chunks back to where they lie without swizzle."""
    chunks = raw.view(np.uint8).reshape(-1, 16)
    address = np.arange(chunks.shape[0]) * 16
    j = (address >> 4) & (span // 16 - 1)
    row = (address >> 7) % (span // 16)
    source = (address & ~((span // 16 - 1) << 4)) | ((j ^ row) << 4)
    return chunks[source // 16].reshape(-1)


@pytest.mark.gpu
@pytest.mark.parametrize("swizzle", ["32B", "64B", "128B"])
def test_a_swizzled_tile_reads_back_through_the_inverse_pattern(tma, swizzle):
    needs_tma()
    span = int(swizzle[:-1])
    a = (np.arange(16 * 64, dtype=np.uint32) * 2654435761 % 65521).astype(np.float16).reshape(16, 64)
    box = (16, span // 2)  # rows of `span` bytes of halves
    tm = xcuda.tensor_map(xcuda.to_device(a), box=box, swizzle=swizzle)
    out = np.zeros(16 * span // 4, np.uint32)
    tma.raw_tile[1, 64](tm, 0, 0, 16 * span, out)
    plain = a[:, :span // 2].copy()
    assert not np.array_equal(out.view(np.float16).reshape(plain.shape), plain)  # it did move chunks
    assert np.array_equal(unswizzle(out, span).view(np.float16).reshape(plain.shape), plain)


@pytest.mark.gpu
def test_an_im2col_load_matches_numpys_padded_im2col(tma):
    needs_tma()
    N, H, W, C = 2, 5, 6, 16
    x = ((np.arange(N * H * W * C) % 251) + 0.5).astype(np.float32).reshape(N, H, W, C)
    tm = xcuda.tensor_map(xcuda.to_device(x), lower_corner=(-1, -1), upper_corner=(-1, -1), channels_per_pixel=C,
                          pixels_per_column=32)
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    for r in range(3):
        for s in range(3):
            out = np.full(32 * C, -7, np.float32)
            tma.im2col[1, 64](tm, -1, -1, 0, s, r, 32 * C * 4, out)
            # output pixel (n, oh, ow), in order, reads the padded input at (oh + r, ow + s)
            want = padded[:, r:r + H, s:s + W, :].reshape(N * H * W, C)[:32]
            assert np.array_equal(out.reshape(32, C), want), (r, s)


# The CUDA C++ Programming Guide's TMA example as published (section "Using TMA to transfer multi-dimensional
# arrays"): cuda::barrier, cde::cp_async_bulk_tensor_2d_global_to_shared / shared_to_global, the bulk group.
GUIDE_EXAMPLE = r"""
#include <cuda.h>
#include <cuda/barrier>
using barrier = cuda::barrier<cuda::thread_scope_block>;
namespace cde = cuda::device::experimental;

__global__ void kernel(const __grid_constant__ CUtensorMap tensor_map, int x, int y) {
  __shared__ alignas(128) int smem_buffer[32][32];
  #pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ barrier bar;
  if (threadIdx.x == 0) {
    init(&bar, blockDim.x);
    cde::fence_proxy_async_shared_cta();
  }
  __syncthreads();
  barrier::arrival_token token;
  if (threadIdx.x == 0) {
    cde::cp_async_bulk_tensor_2d_global_to_shared(&smem_buffer, &tensor_map, x, y, bar);
    token = cuda::device::barrier_arrive_tx(bar, 1, sizeof(smem_buffer));
  } else {
    token = bar.arrive();
  }
  bar.wait(std::move(token));
  smem_buffer[0][threadIdx.x] += threadIdx.x;
  cde::fence_proxy_async_shared_cta();
  __syncthreads();
  if (threadIdx.x == 0) {
    cde::cp_async_bulk_tensor_2d_shared_to_global(&tensor_map, x, y, &smem_buffer);
    cde::cp_async_bulk_commit_group();
    cde::cp_async_bulk_wait_group_read<0>();
  }
  if (threadIdx.x == 0) {
    (&bar)->~barrier();
  }
}
"""


@pytest.mark.gpu
def test_the_programming_guides_tma_example_as_published_matches_numpy():
    needs_tma()
    m = xcuda.compile(GUIDE_EXAMPLE, name="guide_tma_example")
    a = np.arange(64 * 64, dtype=np.int32).reshape(64, 64)
    d = xcuda.to_device(a)
    m.kernel[1, 32](xcuda.tensor_map(d, box=(32, 32)), 32, 16)  # the tile at column 32, row 16
    want = a.copy()
    want[16, 32:64] += np.arange(32)  # row 0 of the tile gets threadIdx.x added
    assert np.array_equal(d.copy_to_host(), want)
