"""A third set of CUDA programs (issue 45 item 7): twelve real programs of our choosing, from sources outside
the issue's own families (llm.c, flash attention, the CUDA samples on textures, tensor cores, cooperative
groups and clusters, the TMA example, PMPP, CUB, the SGEMM tutorials).

Each source is written for these tests in the shape of the public program named in its provenance comment
(the same algorithm, constants, kernel signatures, launch shapes and host calls, with the host helpers the
file declares beside its kernels, such as an error-check function or a validation routine); it is not a copy
of that file. Sizes the originals take from their host code are smaller where the simulator runs them in CI,
and said so. Each program is its %%cuda cells and `run(ns)`: the launches its host code would make,
returning (name, got, expected) triples checked against numpy (`tolerance` per program where the device's
float arithmetic is not numpy's: contracted multiply-adds, fast intrinsics, atomics in another order).
tests/compile/test_programs3.py compiles every program without a GPU, runs each on the PTX simulator in CI,
and on a GPU in the gpu run.
"""
from collections import deque
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Program:
    name: str
    cells: list  # (magic line after %%cuda, source)
    run: object
    provenance: str = ""
    tolerance: dict = field(default_factory=dict)  # assert_allclose's rtol/atol, or mismatch: a fraction allowed


def _xcuda():
    import xcuda

    return xcuda


# ---- 1. matrix transpose through a padded shared-memory tile -----------------------------------------
# Provenance: the shape of NVIDIA-developer-blog/code-samples, series/cuda-cpp/transpose/transpose.cu
# (BSD-3-Clause; the blog post "An Efficient Matrix Transpose in CUDA C/C++"): TILE_DIM 32, BLOCK_ROWS 8,
# the naive, coalesced and bank-conflict-free kernels, a checkCuda host helper beside them, the grid
# (nx / TILE_DIM, ny / TILE_DIM) of (TILE_DIM, BLOCK_ROWS) threads. The original's 1024 x 1024: 256 here.
TRANSPOSE = r"""
#include <stdio.h>
#include <assert.h>

// Convenience function for checking CUDA runtime API results
inline cudaError_t checkCuda(cudaError_t result)
{
#if defined(DEBUG) || defined(_DEBUG)
  if (result != cudaSuccess) {
    fprintf(stderr, "CUDA Runtime Error: %s\n", cudaGetErrorString(result));
    assert(result == cudaSuccess);
  }
#endif
  return result;
}

const int TILE_DIM = 32;
const int BLOCK_ROWS = 8;

__global__ void transposeNaive(float *odata, const float *idata)
{
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  int width = gridDim.x * TILE_DIM;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    odata[x * width + (y + j)] = idata[(y + j) * width + x];
}

__global__ void transposeCoalesced(float *odata, const float *idata)
{
  __shared__ float tile[TILE_DIM][TILE_DIM];
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  int width = gridDim.x * TILE_DIM;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
  __syncthreads();
  x = blockIdx.y * TILE_DIM + threadIdx.x;  // the block's place, transposed
  y = blockIdx.x * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    odata[(y + j) * width + x] = tile[threadIdx.x][threadIdx.y + j];
}

__global__ void transposeNoBankConflicts(float *odata, const float *idata)
{
  __shared__ float tile[TILE_DIM][TILE_DIM + 1];  // one column of padding: no two rows in one bank
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  int width = gridDim.x * TILE_DIM;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
  __syncthreads();
  x = blockIdx.y * TILE_DIM + threadIdx.x;
  y = blockIdx.x * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    odata[(y + j) * width + x] = tile[threadIdx.x][threadIdx.y + j];
}
"""


def run_transpose(ns):
    xcuda = _xcuda()
    nx = ny = 256
    h_idata = np.arange(nx * ny, dtype=np.float32).reshape(ny, nx)
    d_idata = xcuda.to_device(h_idata)
    found = []
    for name in ("transposeNaive", "transposeCoalesced", "transposeNoBankConflicts"):
        d_tdata = xcuda.zeros((nx, ny), np.float32)
        ns[name][(nx // 32, ny // 32), (32, 8)](d_tdata, d_idata)
        found.append((name, d_tdata.copy_to_host(), h_idata.T))
    return found


# ---- 2. an x derivative by an eighth-order finite difference on a periodic grid ---------------------
# Provenance: the shape of NVIDIA-developer-blog/code-samples, series/cuda-cpp/finite-difference/
# finite-difference.cu (BSD-3-Clause; "Finite Difference Methods in CUDA C/C++"): the coefficients in
# __constant__ memory set by cudaMemcpyToSymbol, mx = my = mz = 64, sPencils = 4, a shared tile with a
# 4-wide halo filled with the periodic images, the grid (my / sPencils, mz) of (mx, sPencils) threads.
FINITE_DIFFERENCE = r"""
__constant__ float c_ax, c_bx, c_cx, c_dx;

const int mx = 64, my = 64, mz = 64;
const int sPencils = 4;  // small number of pencils

__global__ void derivative_x(float *f, float *df)
{
  __shared__ float s_f[sPencils][mx + 8];  // 4-wide halo

  int i  = threadIdx.x;
  int j  = blockIdx.x * blockDim.y + threadIdx.y;
  int k  = blockIdx.y;
  int si = i + 4;        // local i for shared memory access + halo offset
  int sj = threadIdx.y;  // local j for shared memory access

  int globalIdx = k * mx * my + j * mx + i;

  s_f[sj][si] = f[globalIdx];

  __syncthreads();

  // fill in periodic images in shared memory array
  if (i < 4) {
    s_f[sj][si - 4]  = s_f[sj][si + mx - 5];
    s_f[sj][si + mx] = s_f[sj][si + 1];
  }

  __syncthreads();

  df[globalIdx] =
    ( c_ax * ( s_f[sj][si + 1] - s_f[sj][si - 1] )
    + c_bx * ( s_f[sj][si + 2] - s_f[sj][si - 2] )
    + c_cx * ( s_f[sj][si + 3] - s_f[sj][si - 3] )
    + c_dx * ( s_f[sj][si + 4] - s_f[sj][si - 4] ) );
}
"""


def run_finite_difference(ns):
    xcuda = _xcuda()
    m = ns["fd"]
    mx = my = mz = 64
    dsinv = np.float32(mx - 1)  # the grid spacing's inverse on [0, 1] with both ends
    coefficients = {"c_ax": 4.0 / 5, "c_bx": -1.0 / 5, "c_cx": 4.0 / 105, "c_dx": -1.0 / 280}
    for name, value in coefficients.items():
        m.get_global(name).set(np.float32(value * dsinv))
    x = np.arange(mx) / (mx - 1.0)
    fx = 2.0
    line = np.cos(fx * 2 * np.pi * x)
    f = np.broadcast_to(line, (mz, my, mx)).astype(np.float32)
    d_f = xcuda.to_device(np.ascontiguousarray(f))
    d_df = xcuda.zeros((mz, my, mx), np.float32)
    m.derivative_x[(my // 4, mz), (mx, 4)](d_f, d_df)
    period = mx - 1  # f[mx - 1] is f[0] again
    values = line.astype(np.float32).astype(np.float64)
    expected_line = np.zeros(mx)
    for i in range(mx):
        for d, name in zip(range(1, 5), coefficients):
            c = float(np.float32(coefficients[name] * dsinv))
            expected_line[i] += c * (values[(i + d) % period] - values[(i - d) % period])
    return [("df/dx", d_df.copy_to_host(), np.broadcast_to(expected_line, (mz, my, mx))),
            ("against the analytic derivative", d_df.copy_to_host()[0, 0],
             -fx * 2 * np.pi * np.sin(fx * 2 * np.pi * x))]


# ---- 3. a one-dimensional stencil with halo cells --------------------------------------------------
# Provenance: the shape of olcf/cuda-training-series, exercises/hw2 stencil_1d.cu (the OLCF/NERSC CUDA
# Training Series): N 4096, RADIUS 3, BLOCK_SIZE 16, the halo loaded by the first RADIUS threads, and the
# host's launch on the arrays offset by RADIUS (d_in + RADIUS, d_out + RADIUS).
STENCIL = r"""
#include <stdio.h>
#include <algorithm>

using namespace std;

#define N 4096
#define RADIUS 3
#define BLOCK_SIZE 16

__global__ void stencil_1d(int *in, int *out) {
    __shared__ int temp[BLOCK_SIZE + 2 * RADIUS];
    int gindex = threadIdx.x + blockIdx.x * blockDim.x;
    int lindex = threadIdx.x + RADIUS;

    // Read input elements into shared memory
    temp[lindex] = in[gindex];
    if (threadIdx.x < RADIUS) {
      temp[lindex - RADIUS] = in[gindex - RADIUS];
      temp[lindex + BLOCK_SIZE] = in[gindex + BLOCK_SIZE];
    }

    // Synchronize (ensure all the data is available)
    __syncthreads();

    // Apply the stencil
    int result = 0;
    for (int offset = -RADIUS; offset <= RADIUS; offset++)
      result += temp[lindex + offset];

    // Store the result
    out[gindex] = result;
}

void fill_ints(int *x, int n) {
  fill_n(x, n, 1);
}
"""


def run_stencil(ns):
    xcuda = _xcuda()
    n, radius, block = 4096, 3, 16
    rng = np.random.default_rng(3)
    h_in = rng.integers(-100, 100, n + 2 * radius, dtype=np.int32)
    d_in = xcuda.to_device(h_in)
    d_out = xcuda.zeros(n + 2 * radius, np.int32)
    ns["stencil_1d"][n // block, block](d_in[radius:], d_out[radius:])  # d_in + RADIUS, d_out + RADIUS
    windows = np.lib.stride_tricks.sliding_window_view(h_in, 2 * radius + 1).sum(axis=1)
    expected = np.zeros(n + 2 * radius, np.int32)
    expected[radius:radius + n] = windows
    return [("stencil", d_out.copy_to_host(), expected)]


# ---- 4. row and column sums of a matrix ------------------------------------------------------------
# Provenance: the shape of olcf/cuda-training-series, exercises/hw4 matrix_sums.cu: one thread per row
# (strided reads) and one per column (coalesced reads), block_size 256, the grid (DSIZE + 255) / 256, and
# the host's validate() beside the kernels. The original's DSIZE 16384: 512 here.
MATRIX_SUMS = r"""
#include <stdio.h>

// error checking macro
#define cudaCheckErrors(msg) \
    do { \
        cudaError_t __err = cudaGetLastError(); \
        if (__err != cudaSuccess) { \
            fprintf(stderr, "Fatal error: %s (%s at %s:%d)\n", \
                msg, cudaGetErrorString(__err), \
                __FILE__, __LINE__); \
            fprintf(stderr, "*** FAILED - ABORTING\n"); \
            exit(1); \
        } \
    } while (0)

const size_t DSIZE = 16384;  // matrix side dimension
const int block_size = 256;  // CUDA maximum is 1024

// matrix row-sum kernel
__global__ void row_sums(const float *A, float *sums, size_t ds){
  int idx = threadIdx.x + blockDim.x * blockIdx.x;
  if (idx < ds){
    float sum = 0.0f;
    for (size_t i = 0; i < ds; i++)
      sum += A[idx * ds + i];
    sums[idx] = sum;
  }
}

// matrix column-sum kernel
__global__ void column_sums(const float *A, float *sums, size_t ds){
  int idx = threadIdx.x + blockDim.x * blockIdx.x;
  if (idx < ds){
    float sum = 0.0f;
    for (size_t i = 0; i < ds; i++)
      sum += A[idx + ds * i];
    sums[idx] = sum;
  }
}

bool validate(float *data, size_t sz){
  for (size_t i = 0; i < sz; i++)
    if (data[i] != (float)sz) {printf("results mismatch at %lu, was: %f, should be: %f\n", i, data[i], (float)sz); return false;}
  return true;
}
"""


def run_matrix_sums(ns):
    xcuda = _xcuda()
    ds = 512
    rng = np.random.default_rng(4)
    h_a = rng.random((ds, ds), dtype=np.float32)
    d_a = xcuda.to_device(h_a)
    d_sums = xcuda.zeros(ds, np.float32)
    grid = (ds + 255) // 256
    ns["row_sums"][grid, 256](d_a, d_sums, ds)
    rows = d_sums.copy_to_host()
    ns["column_sums"][grid, 256](d_a, d_sums, ds)
    return [("row sums", rows, h_a.astype(np.float64).sum(axis=1)),
            ("column sums", d_sums.copy_to_host(), h_a.astype(np.float64).sum(axis=0))]


# ---- 5. three reductions: atomics, a shared-memory sweep, warp shuffles ------------------------------
# Provenance: the shape of olcf/cuda-training-series, exercises/hw5 reductions.cu: atomic_red (one atomicAdd
# per element), reduce_a (a grid-stride load, a shared-memory sweep, one atomicAdd per block), reduce_ws
# (two warp-shuffle stages through 32 shared partials), BLOCK_SIZE 256 and 640 blocks for the two last. The
# original's N of 8 Mi elements: 1 Mi here.
REDUCTIONS = r"""
const size_t N = 1ULL * 1024ULL * 1024ULL;  // data size
const int BLOCK_SIZE = 256;  // CUDA maximum is 1024

__global__ void atomic_red(const float *gdata, float *out){
  size_t idx = threadIdx.x + blockDim.x * blockIdx.x;
  if (idx < N) atomicAdd(out, gdata[idx]);
}

__global__ void reduce_a(float *gdata, float *out){
  __shared__ float sdata[BLOCK_SIZE];
  int tid = threadIdx.x;
  sdata[tid] = 0.0f;
  size_t idx = threadIdx.x + blockDim.x * blockIdx.x;

  while (idx < N) {  // grid stride loop to load data
    sdata[tid] += gdata[idx];
    idx += gridDim.x * blockDim.x;
  }

  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    __syncthreads();
    if (tid < s)  // parallel sweep reduction
      sdata[tid] += sdata[tid + s];
  }
  if (tid == 0) atomicAdd(out, sdata[0]);
}

__global__ void reduce_ws(float *gdata, float *out){
  __shared__ float sdata[32];
  int tid = threadIdx.x;
  int idx = threadIdx.x + blockDim.x * blockIdx.x;
  float val = 0.0f;
  unsigned mask = 0xFFFFFFFFU;
  int lane = threadIdx.x % warpSize;
  int warpID = threadIdx.x / warpSize;
  while (idx < N) {  // grid stride loop to load
    val += gdata[idx];
    idx += gridDim.x * blockDim.x;
  }

  // 1st warp-shuffle reduction
  for (int offset = warpSize / 2; offset > 0; offset >>= 1)
    val += __shfl_down_sync(mask, val, offset);
  if (lane == 0) sdata[warpID] = val;
  __syncthreads();  // put warp results in shared mem

  // hereafter, just warp 0
  if (warpID == 0){
    // reload val from shared mem if warp existed
    val = (tid < blockDim.x / warpSize) ? sdata[lane] : 0;

    // final warp-shuffle reduction
    for (int offset = warpSize / 2; offset > 0; offset >>= 1)
      val += __shfl_down_sync(mask, val, offset);

    if (tid == 0) atomicAdd(out, val);
  }
}
"""


def run_reductions(ns):
    xcuda = _xcuda()
    n = 1 << 20
    rng = np.random.default_rng(5)
    h_a = rng.random(n, dtype=np.float32)
    expected = h_a.astype(np.float64).sum()
    d_a = xcuda.to_device(h_a)
    found = []
    for name, grid in (("atomic_red", n // 256), ("reduce_a", 640), ("reduce_ws", 640)):
        d_sum = xcuda.zeros(1, np.float32)
        ns[name][grid, 256](d_a, d_sum)
        found.append((name, d_sum.copy_to_host(), np.array([expected])))
    return found


# ---- 6. a dynamic-programming path through a grid, several rows per launch -------------------------
# Provenance: the shape of the Rodinia benchmark suite 3.1, cuda/pathfinder/pathfinder.cu (University of
# Virginia): BLOCK_SIZE 256, HALO 1, the IN_RANGE and MIN macros, dynproc_kernel computing `iteration` rows
# per launch in a pyramid of shrinking valid ranges, and calc_path's host loop swapping the two result
# buffers every pyramid_height rows.
PATHFINDER = r"""
#include <stdio.h>
#include <stdlib.h>

#define BLOCK_SIZE 256
#define STR_SIZE 256
#define DEVICE 0
#define HALO 1  // halo width along one direction when advancing to the next iteration

#define IN_RANGE(x, min, max)   ((x) >= (min) && (x) <= (max))
#define CLAMP_RANGE(x, min, max) x = (x < (min)) ? min : ((x > (max)) ? max : x)
#define MIN(a, b) ((a) <= (b) ? (a) : (b))

__global__ void dynproc_kernel(
                int iteration,
                int *gpuWall,
                int *gpuSrc,
                int *gpuResults,
                int cols,
                int rows,
                int startStep,
                int border)
{
    __shared__ int prev[BLOCK_SIZE];
    __shared__ int result[BLOCK_SIZE];

    int bx = blockIdx.x;
    int tx = threadIdx.x;

    // each block finally computes result for a small block after N iterations;
    // the small blocks do not overlap and cover all the input data
    int small_block_cols = BLOCK_SIZE - iteration * HALO * 2;

    // the boundary of the block, from the boundary of its small block
    int blkX = small_block_cols * bx - border;
    int blkXmax = blkX + BLOCK_SIZE - 1;

    // the global thread coordinate
    int xidx = blkX + tx;

    // the effective range within this block that falls within the valid range of the input data
    int validXmin = (blkX < 0) ? -blkX : 0;
    int validXmax = (blkXmax > cols - 1) ? BLOCK_SIZE - 1 - (blkXmax - cols + 1) : BLOCK_SIZE - 1;

    int W = tx - 1;
    int E = tx + 1;

    W = (W < validXmin) ? validXmin : W;
    E = (E > validXmax) ? validXmax : E;

    bool isValid = IN_RANGE(tx, validXmin, validXmax);

    if (IN_RANGE(xidx, 0, cols - 1)) {
        prev[tx] = gpuSrc[xidx];
    }
    __syncthreads();
    bool computed;
    for (int i = 0; i < iteration; i++) {
        computed = false;
        if (IN_RANGE(tx, i + 1, BLOCK_SIZE - i - 2) && isValid) {
            computed = true;
            int left = prev[W];
            int up = prev[tx];
            int right = prev[E];
            int shortest = MIN(left, up);
            shortest = MIN(shortest, right);
            int index = cols * (startStep + i) + xidx;
            result[tx] = shortest + gpuWall[index];
        }
        __syncthreads();
        if (i == iteration - 1)
            break;
        if (computed)  // assign the computation range
            prev[tx] = result[tx];
        __syncthreads();
    }

    // update the global memory: after the last iteration only the threads of the small block computed
    if (computed) {
        gpuResults[xidx] = result[tx];
    }
}
"""


def run_pathfinder(ns):
    xcuda = _xcuda()
    rows, cols, pyramid_height = 100, 1000, 20
    rng = np.random.default_rng(6)
    data = rng.integers(0, 10, (rows, cols), dtype=np.int32)
    border = pyramid_height  # pyramid_height * HALO
    small_block_col = 256 - pyramid_height * 2
    block_cols = cols // small_block_col + (0 if cols % small_block_col == 0 else 1)
    gpu_wall = xcuda.to_device(data[1:])
    gpu_result = [xcuda.to_device(data[0].copy()), xcuda.zeros(cols, np.int32)]
    src, dst = 1, 0
    for t in range(0, rows - 1, pyramid_height):
        src, dst = dst, src
        ns["dynproc_kernel"][block_cols, 256](min(pyramid_height, rows - t - 1), gpu_wall, gpu_result[src],
                                              gpu_result[dst], cols, rows, t, border)
    expected = data[0].astype(np.int64)
    for r in range(1, rows):
        left = np.concatenate(([expected[0]], expected[:-1]))
        right = np.concatenate((expected[1:], [expected[-1]]))
        expected = data[r] + np.minimum(np.minimum(left, expected), right)
    return [("shortest paths", gpu_result[dst].copy_to_host(), expected.astype(np.int32))]


# ---- 7. breadth-first search over a graph of nodes and edge lists ----------------------------------
# Provenance: the shape of the Rodinia benchmark suite 3.1, cuda/bfs (kernel.cu, kernel2.cu, bfs.cu):
# MAX_THREADS_PER_BLOCK 512, struct Node { int starting; int no_of_edges; }, Kernel expanding the frontier
# mask and Kernel2 folding the updating mask in and raising *g_over, the host looping until nothing changed.
BFS = r"""
#define MAX_THREADS_PER_BLOCK 512

// Structure to hold a node information
struct Node
{
    int starting;
    int no_of_edges;
};

__global__ void
Kernel(Node* g_graph_nodes, int* g_graph_edges, bool* g_graph_mask, bool* g_updating_graph_mask,
       bool *g_graph_visited, int* g_cost, int no_of_nodes)
{
    int tid = blockIdx.x * MAX_THREADS_PER_BLOCK + threadIdx.x;
    if (tid < no_of_nodes && g_graph_mask[tid])
    {
        g_graph_mask[tid] = false;
        for (int i = g_graph_nodes[tid].starting; i < (g_graph_nodes[tid].no_of_edges + g_graph_nodes[tid].starting); i++)
        {
            int id = g_graph_edges[i];
            if (!g_graph_visited[id])
            {
                g_cost[id] = g_cost[tid] + 1;
                g_updating_graph_mask[id] = true;
            }
        }
    }
}

__global__ void
Kernel2(bool* g_graph_mask, bool *g_updating_graph_mask, bool* g_graph_visited, bool *g_over, int no_of_nodes)
{
    int tid = blockIdx.x * MAX_THREADS_PER_BLOCK + threadIdx.x;
    if (tid < no_of_nodes && g_updating_graph_mask[tid])
    {
        g_graph_mask[tid] = true;
        g_graph_visited[tid] = true;
        *g_over = true;
        g_updating_graph_mask[tid] = false;
    }
}
"""


def run_bfs(ns):
    xcuda = _xcuda()
    nodes, degree = 3000, 3
    rng = np.random.default_rng(7)
    edges = [rng.integers(0, nodes, rng.integers(1, degree + 1)) for _ in range(nodes)]
    counts = np.array([e.size for e in edges], np.int32)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int32)
    node_type = np.dtype([("starting", np.int32), ("no_of_edges", np.int32)])
    h_nodes = np.zeros(nodes, node_type)
    h_nodes["starting"], h_nodes["no_of_edges"] = starts, counts
    source = 0
    mask = np.zeros(nodes, np.bool_)
    visited = np.zeros(nodes, np.bool_)
    mask[source] = visited[source] = True
    cost = np.full(nodes, -1, np.int32)
    cost[source] = 0
    d_nodes, d_edges = xcuda.to_device(h_nodes), xcuda.to_device(np.concatenate(edges).astype(np.int32))
    d_mask, d_updating = xcuda.to_device(mask), xcuda.zeros(nodes, np.bool_)
    d_visited, d_cost = xcuda.to_device(visited), xcuda.to_device(cost)
    d_over = xcuda.zeros(1, np.bool_)
    blocks, threads = (nodes + 511) // 512, min(nodes, 512)
    levels = 0
    while True:
        d_over.copy_from(np.zeros(1, np.bool_))
        ns["Kernel"][blocks, threads](d_nodes, d_edges, d_mask, d_updating, d_visited, d_cost, nodes)
        ns["Kernel2"][blocks, threads](d_mask, d_updating, d_visited, d_over, nodes)
        levels += 1
        if not d_over.copy_to_host()[0] or levels > nodes:
            break
    expected = np.full(nodes, -1, np.int32)
    expected[source] = 0
    queue = deque([source])
    while queue:
        node = queue.popleft()
        for neighbour in edges[node]:
            if expected[neighbour] < 0:
                expected[neighbour] = expected[node] + 1
                queue.append(neighbour)
    return [("costs", d_cost.copy_to_host(), expected)]


# ---- 8. a Julia set, one block per pixel, with a complex-number struct -----------------------------
# Provenance: the shape of the Julia set of "CUDA by Example" (Sanders and Kandrot, chapter 4,
# julia_gpu.cu): struct cuComplex with __device__ constructor, magnitude2 and operators, julia(x, y) with
# scale 1.5, c = -0.8 + 0.156i and 200 iterations, kernel(unsigned char *ptr) writing RGBA, the grid
# (DIM, DIM) of one thread. The original's DIM 1000: 128 here.
JULIA = r"""
#define DIM 128

struct cuComplex {
    float   r;
    float   i;
    __device__ cuComplex( float a, float b ) : r(a), i(b)  {}
    __device__ float magnitude2( void ) {
        return r * r + i * i;
    }
    __device__ cuComplex operator*(const cuComplex& a) {
        return cuComplex(r*a.r - i*a.i, i*a.r + r*a.i);
    }
    __device__ cuComplex operator+(const cuComplex& a) {
        return cuComplex(r+a.r, i+a.i);
    }
};

__device__ int julia( int x, int y ) {
    const float scale = 1.5;
    float jx = scale * (float)(DIM/2 - x)/(DIM/2);
    float jy = scale * (float)(DIM/2 - y)/(DIM/2);

    cuComplex c(-0.8, 0.156);
    cuComplex a(jx, jy);

    int i = 0;
    for (i=0; i<200; i++) {
        a = a * a + c;
        if (a.magnitude2() > 1000)
            return 0;
    }

    return 1;
}

__global__ void kernel( unsigned char *ptr ) {
    // map from blockIdx to pixel position
    int x = blockIdx.x;
    int y = blockIdx.y;
    int offset = x + y * gridDim.x;

    // now calculate the value at that position
    int juliaValue = julia( x, y );
    ptr[offset*4 + 0] = 255 * juliaValue;
    ptr[offset*4 + 1] = 0;
    ptr[offset*4 + 2] = 0;
    ptr[offset*4 + 3] = 255;
}
"""


def run_julia(ns):
    xcuda = _xcuda()
    dim = 128
    d_bitmap = xcuda.zeros(dim * dim * 4, np.uint8)
    ns["kernel"][(dim, dim), 1](d_bitmap)
    half = dim // 2
    y, x = np.mgrid[0:dim, 0:dim]
    jx = (np.float32(1.5) * ((half - x).astype(np.float32) / np.float32(half))).astype(np.float32)
    jy = (np.float32(1.5) * ((half - y).astype(np.float32) / np.float32(half))).astype(np.float32)
    ar, ai = jx, jy
    inside = np.ones((dim, dim), bool)
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(200):
            ar, ai = (ar * ar - ai * ai + np.float32(-0.8)).astype(np.float32), \
                     (ai * ar + ar * ai + np.float32(0.156)).astype(np.float32)
            inside &= ~(ar * ar + ai * ai > 1000)
    expected = np.zeros((dim * dim, 4), np.uint8)
    expected[:, 0] = 255 * inside.ravel()
    expected[:, 3] = 255
    return [("RGBA", d_bitmap.copy_to_host(), expected.ravel())]


# ---- 9. a dot product with per-block partial sums -------------------------------------------------
# Provenance: the shape of "CUDA by Example" (Sanders and Kandrot, chapter 5, dot.cu): N 33 * 1024,
# threadsPerBlock 256, blocksPerGrid imin(32, ...), a shared cache reduced by halving, one partial sum per
# block finished on the host, and the sum_squares check.
DOT = r"""
#define imin(a,b) (a<b?a:b)
#define sum_squares(x)  (x*(x+1)*(2*x+1)/6)

const int N = 33 * 1024;
const int threadsPerBlock = 256;
const int blocksPerGrid =
            imin( 32, (N+threadsPerBlock-1) / threadsPerBlock );

__global__ void dot( float *a, float *b, float *c ) {
    __shared__ float cache[threadsPerBlock];
    int tid = threadIdx.x + blockIdx.x * blockDim.x;
    int cacheIndex = threadIdx.x;

    float   temp = 0;
    while (tid < N) {
        temp += a[tid] * b[tid];
        tid += blockDim.x * gridDim.x;
    }

    // set the cache values
    cache[cacheIndex] = temp;

    // synchronize threads in this block
    __syncthreads();

    // for reductions, threadsPerBlock must be a power of 2
    int i = blockDim.x/2;
    while (i != 0) {
        if (cacheIndex < i)
            cache[cacheIndex] += cache[cacheIndex + i];
        __syncthreads();
        i /= 2;
    }

    if (cacheIndex == 0)
        c[blockIdx.x] = cache[0];
}
"""


def run_dot(ns):
    xcuda = _xcuda()
    n = 33 * 1024
    a = np.arange(n, dtype=np.float32)
    b = (np.arange(n) * 2).astype(np.float32)
    d_partial = xcuda.zeros(32, np.float32)
    ns["dot"][32, 256](xcuda.to_device(a), xcuda.to_device(b), d_partial)
    total = d_partial.copy_to_host().astype(np.float64).sum()
    x = n - 1
    return [("dot", np.array([total]), np.array([2.0 * (x * (x + 1) * (2 * x + 1) / 6)]))]


# ---- 10. a byte histogram with shared-memory atomics -----------------------------------------------
# Provenance: the shape of "CUDA by Example" (Sanders and Kandrot, chapter 9, hist_gpu_shmem_atomics.cu):
# SIZE (100 * 1024 * 1024), histo_kernel(unsigned char *buffer, long size, unsigned int *histo) with a
# 256-bin shared histogram, a grid-stride loop of atomicAdd, and the host's blocks = 2 x the SM count
# launched with blocks * 2 blocks of 256 threads. The run's buffer: 1 MiB.
HISTOGRAM = r"""
#define SIZE    (100*1024*1024)

__global__ void histo_kernel( unsigned char *buffer,
                              long size,
                              unsigned int *histo ) {
    __shared__  unsigned int temp[256];
    temp[threadIdx.x] = 0;
    __syncthreads();

    int i = threadIdx.x + blockIdx.x * blockDim.x;
    int offset = blockDim.x * gridDim.x;
    while (i < size) {
        atomicAdd( &temp[buffer[i]], 1 );
        i += offset;
    }
    __syncthreads();

    atomicAdd( &(histo[threadIdx.x]), temp[threadIdx.x] );
}
"""


def run_histogram(ns):
    xcuda = _xcuda()
    size = 1 << 20
    rng = np.random.default_rng(10)
    buffer = rng.integers(0, 256, size, dtype=np.uint8)
    d_histo = xcuda.zeros(256, np.uint32)
    blocks = 2 * 4  # the host's 2 x multiProcessorCount, for a 4-SM part
    ns["histo_kernel"][blocks * 2, 256](xcuda.to_device(buffer), size, d_histo)
    return [("histogram", d_histo.copy_to_host(), np.bincount(buffer, minlength=256).astype(np.uint32))]


# ---- 11. Black-Scholes option pricing, two options per thread in float2 --------------------------------
# Provenance: the shape of NVIDIA/cuda-samples, Samples/5_Domain_Specific/BlackScholes (BlackScholes_kernel.cuh,
# BlackScholes_gold.cpp; BSD-3-Clause): the polynomial cumulative normal with fast intrinsics (__fdividef,
# __expf, __logf, rsqrtf), BlackScholesBodyGPU by reference, BlackScholesGPU over float2 arrays with
# __launch_bounds__(128), RISKFREE 0.02, VOLATILITY 0.30, the grid DIV_UP(OPT_N / 2, 128). The original's
# OPT_N of 4 million: 8192 here.
BLACK_SCHOLES = r"""
///////////////////////////////////////////////////////////////////////////////
// Polynomial approximation of cumulative normal distribution function
///////////////////////////////////////////////////////////////////////////////
__device__ inline float cndGPU(float d) {
  const float A1 = 0.31938153f;
  const float A2 = -0.356563782f;
  const float A3 = 1.781477937f;
  const float A4 = -1.821255978f;
  const float A5 = 1.330274429f;
  const float RSQRT2PI = 0.39894228040143267793994605993438f;

  float K = __fdividef(1.0f, (1.0f + 0.2316419f * fabsf(d)));

  float cnd = RSQRT2PI * __expf(-0.5f * d * d) *
              (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));

  if (d > 0) cnd = 1.0f - cnd;

  return cnd;
}

///////////////////////////////////////////////////////////////////////////////
// Black-Scholes formula for both call and put
///////////////////////////////////////////////////////////////////////////////
__device__ inline void BlackScholesBodyGPU(float &CallResult, float &PutResult,
                                           float S,  // Stock price
                                           float X,  // Option strike
                                           float T,  // Option years
                                           float R,  // Riskless rate
                                           float V   // Volatility rate
) {
  float sqrtT, expRT;
  float d1, d2, CNDD1, CNDD2;

  sqrtT = __fdividef(1.0F, rsqrtf(T));
  d1 = __fdividef(__logf(S / X) + (R + 0.5f * V * V) * T, V * sqrtT);
  d2 = d1 - V * sqrtT;

  CNDD1 = cndGPU(d1);
  CNDD2 = cndGPU(d2);

  // Calculate Call and Put simultaneously
  expRT = __expf(-R * T);
  CallResult = S * CNDD1 - X * expRT * CNDD2;
  PutResult = X * expRT * (1.0f - CNDD2) - S * (1.0f - CNDD1);
}

////////////////////////////////////////////////////////////////////////////////
// Process an array of optN options on GPU
////////////////////////////////////////////////////////////////////////////////
__launch_bounds__(128) __global__ void BlackScholesGPU(
    float2 *__restrict d_CallResult, float2 *__restrict d_PutResult,
    float2 *__restrict d_StockPrice, float2 *__restrict d_OptionStrike,
    float2 *__restrict d_OptionYears, float Riskfree, float Volatility,
    int optN) {
  ////Thread index
  // const int      tid = blockDim.x * blockIdx.x + threadIdx.x;
  ////Total number of threads in execution grid
  // const int THREAD_N = blockDim.x * gridDim.x;

  const int opt = blockDim.x * blockIdx.x + threadIdx.x;

  // Calculating 2 options per thread to increase ILP (instruction level
  // parallelism)
  if (opt < (optN / 2)) {
    float callResult1, callResult2;
    float putResult1, putResult2;
    BlackScholesBodyGPU(callResult1, putResult1, d_StockPrice[opt].x,
                        d_OptionStrike[opt].x, d_OptionYears[opt].x, Riskfree,
                        Volatility);
    BlackScholesBodyGPU(callResult2, putResult2, d_StockPrice[opt].y,
                        d_OptionStrike[opt].y, d_OptionYears[opt].y, Riskfree,
                        Volatility);
    d_CallResult[opt] = make_float2(callResult1, callResult2);
    d_PutResult[opt] = make_float2(putResult1, putResult2);
  }
}
"""


def black_scholes_gold(s, x, t, r, v):
    """BlackScholes_gold.cpp's reference in double: the same polynomial CND."""
    def cnd(d):
        a1, a2, a3, a4, a5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
        k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
        c = 0.39894228040143267793994605993438 * np.exp(-0.5 * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))))
        return np.where(d > 0, 1.0 - c, c)

    sqrt_t = np.sqrt(t)
    d1 = (np.log(s / x) + (r + 0.5 * v * v) * t) / (v * sqrt_t)
    d2 = d1 - v * sqrt_t
    exp_rt = np.exp(-r * t)
    return s * cnd(d1) - x * exp_rt * cnd(d2), x * exp_rt * (1.0 - cnd(d2)) - s * (1.0 - cnd(d1))


def run_black_scholes(ns):
    xcuda = _xcuda()
    opt_n = 8192
    rng = np.random.default_rng(11)
    pair = np.dtype([("x", np.float32), ("y", np.float32)])

    def pairs(low, high):
        values = rng.uniform(low, high, opt_n).astype(np.float32)
        return values, values.view(pair)

    price, h_price = pairs(5.0, 30.0)
    strike, h_strike = pairs(1.0, 100.0)
    years, h_years = pairs(0.25, 10.0)
    d_call, d_put = xcuda.zeros(opt_n // 2, pair), xcuda.zeros(opt_n // 2, pair)
    ns["BlackScholesGPU"][(opt_n // 2 + 127) // 128, 128](
        d_call, d_put, xcuda.to_device(h_price), xcuda.to_device(h_strike), xcuda.to_device(h_years),
        np.float32(0.02), np.float32(0.30), opt_n)
    call, put = black_scholes_gold(price.astype(np.float64), strike.astype(np.float64), years.astype(np.float64),
                                   0.02, 0.30)
    got_call = d_call.copy_to_host().view(np.float32)
    got_put = d_put.copy_to_host().view(np.float32)
    return [("call", got_call, call), ("put", got_put, put)]


# ---- 12. a bitonic sort, one compare-and-swap step per launch --------------------------------------
# Provenance: the shape of the widely shared bitonic sort example for CUDA (bitonic_sort.cu, "bitonic_sort_step"
# with its `exchange(i, ixj)` comments): THREADS 512 and BLOCKS 32768 in the original (256 and 16 here), a
# kernel comparing element i with i ^ j ascending or descending by i & k, and the host's two nested loops
# over k and j.
BITONIC = r"""
#include <stdlib.h>
#include <stdio.h>
#include <time.h>

/* Every thread gets exactly one value in the unsorted array. */
#define THREADS 256
#define BLOCKS 16
#define NUM_VALS THREADS*BLOCKS

__global__ void bitonic_sort_step(float *dev_values, int j, int k)
{
  unsigned int i, ixj; /* Sorting partners: i and ixj */
  i = threadIdx.x + blockDim.x * blockIdx.x;
  ixj = i^j;

  /* The threads with the lowest ids sort the array. */
  if ((ixj)>i) {
    if ((i&k)==0) {
      /* Sort ascending */
      if (dev_values[i]>dev_values[ixj]) {
        /* exchange(i,ixj); */
        float temp = dev_values[i];
        dev_values[i] = dev_values[ixj];
        dev_values[ixj] = temp;
      }
    }
    if ((i&k)!=0) {
      /* Sort descending */
      if (dev_values[i]<dev_values[ixj]) {
        /* exchange(i,ixj); */
        float temp = dev_values[i];
        dev_values[i] = dev_values[ixj];
        dev_values[ixj] = temp;
      }
    }
  }
}

float random_float()
{
  return (float)rand()/(float)RAND_MAX;
}
"""


def run_bitonic(ns):
    xcuda = _xcuda()
    threads, blocks = 256, 16
    n = threads * blocks
    values = np.random.default_rng(12).random(n, dtype=np.float32)
    d_values = xcuda.to_device(values)
    k = 2
    while k <= n:
        j = k >> 1
        while j > 0:
            ns["bitonic_sort_step"][blocks, threads](d_values, j, k)
            j >>= 1
        k <<= 1
    return [("sorted", d_values.copy_to_host(), np.sort(values))]


PROGRAMS = [
    Program("transpose_shared_tile", [("", TRANSPOSE)], run_transpose,
            "NVIDIA-developer-blog/code-samples transpose.cu (BSD-3-Clause)"),
    Program("finite_difference_constant_coefficients", [("--name fd", FINITE_DIFFERENCE)], run_finite_difference,
            "NVIDIA-developer-blog/code-samples finite-difference.cu (BSD-3-Clause)",
            {"rtol": 1e-4, "atol": 2e-3}),
    Program("stencil_1d_offset_arrays", [("", STENCIL)], run_stencil, "olcf/cuda-training-series hw2 stencil_1d.cu"),
    Program("matrix_row_and_column_sums", [("", MATRIX_SUMS)], run_matrix_sums,
            "olcf/cuda-training-series hw4 matrix_sums.cu", {"rtol": 1e-5, "atol": 1e-3}),
    # atomic_red adds 2^20 floats of about 0.5 into one float32 in whatever order the GPU's atomics take: each
    # add rounds by up to 2^-5 near the sum's 2^19, a random walk of about 20 (4e-5 of the sum) that the
    # simulator's block order happens to keep smaller; it failed rtol 1e-5 on an H200 (2026-12-07).
    Program("reductions_atomic_shared_shuffle", [("", REDUCTIONS)], run_reductions,
            "olcf/cuda-training-series hw5 reductions.cu", {"rtol": 2e-4, "atol": 0.0}),
    Program("pathfinder_dynamic_programming", [("", PATHFINDER)], run_pathfinder, "Rodinia 3.1 cuda/pathfinder"),
    Program("bfs_struct_nodes_bool_masks", [("", BFS)], run_bfs, "Rodinia 3.1 cuda/bfs"),
    # A pixel on the set's edge may escape one iteration sooner or later under contracted multiply-adds
    # (NVRTC's default --fmad=true) than under numpy's separate roundings: a few in 16384 may differ.
    Program("julia_set_complex_struct", [("", JULIA)], run_julia, "CUDA by Example, chapter 4, julia_gpu.cu",
            {"mismatch": 0.01}),
    Program("dot_product_partial_sums", [("", DOT)], run_dot, "CUDA by Example, chapter 5, dot.cu",
            {"rtol": 1e-5, "atol": 0.0}),
    Program("histogram_shared_atomics", [("", HISTOGRAM)], run_histogram,
            "CUDA by Example, chapter 9, hist_gpu_shmem_atomics.cu"),
    Program("black_scholes_float2", [("", BLACK_SCHOLES)], run_black_scholes,
            "NVIDIA/cuda-samples BlackScholes (BSD-3-Clause)", {"rtol": 1e-4, "atol": 2e-4}),
    Program("bitonic_sort_steps", [("", BITONIC)], run_bitonic, "the common bitonic_sort.cu example"),
]
