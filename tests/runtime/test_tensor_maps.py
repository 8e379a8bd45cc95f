"""TMA tensor maps: xcuda.tensor_map(array, box=..., ...) for a `const __grid_constant__ CUtensorMap` parameter
(issue 45 item 3, tiled maps).

- against the fake driver: every scenario of tests/runtime/tensor_map_scenarios.py in a child process (what
  reaches cuTensorMapEncodeTiled, in its order; each documented rule refused first with its message; the map
  and raw 128 bytes passed to a kernel; encodes from four threads);
- marked gpu: a tile copy through cp.async.bulk.tensor with an mbarrier, against numpy, out-of-bounds tiles
  filled with zeros.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

import xcuda

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


@pytest.mark.gpu
def test_a_tma_tile_copy_matches_numpy_on_the_gpu():
    if int(xcuda.default_arch().split("_")[1][:-1]) < 9:
        pytest.skip("TMA needs compute capability 9.0; " + xcuda.default_arch() + " has none")
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
