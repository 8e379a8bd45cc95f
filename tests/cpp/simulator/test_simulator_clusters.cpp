// The PTX simulator's thread-block clusters (block_clusters.cpp, warp_cluster_operations.cpp): a cluster's blocks run
// together on one host thread, so barrier.cluster waits for the other blocks and distributed shared memory (mapa,
// .shared::cluster, generic addresses into another block's window) reads and writes their windows. Checked against
// host references: the CUDA Programming Guide's distributed-shared-memory histogram, a cluster reduction, the cluster
// special registers on a 3-D grid, a ring exchange through split arrive/wait, the .shared::cluster instructions; and
// the faults and hangs a GPU would not report clearly.

#include <gtest/gtest.h>

#include <vector>

#include "simulated.hpp"

namespace
{
    const char* const cluster_kernels = R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// The CUDA C++ Programming Guide's distributed shared memory histogram, as printed there.
extern "C" __global__ void clusterHist_kernel(int *bins, const int nbins, const int bins_per_block,
                                              const int *__restrict__ input, size_t array_size)
{
  extern __shared__ int smem[];
  namespace cg = cooperative_groups;
  int tid = cg::this_grid().thread_rank();
  cg::cluster_group cluster = cg::this_cluster();
  unsigned int clusterBlockRank = cluster.block_rank();
  int cluster_size = cluster.dim_blocks().x;
  for (int i = threadIdx.x; i < bins_per_block; i += blockDim.x) smem[i] = 0;
  cluster.sync();
  for (int i = tid; i < array_size; i += blockDim.x * gridDim.x)
  {
    int ldata = input[i];
    int binid = ldata;
    if (ldata < 0) binid = 0;
    else if (ldata >= nbins) binid = nbins - 1;
    int dst_block_rank = (int)(binid / bins_per_block);
    int dst_offset = binid % bins_per_block;
    int *dst_smem = cluster.map_shared_rank(smem, dst_block_rank);
    atomicAdd(dst_smem + dst_offset, 1);
  }
  cluster.sync();
  int *lbins = bins + cluster.block_rank() * bins_per_block;
  for (int i = threadIdx.x; i < bins_per_block; i += blockDim.x) atomicAdd(&lbins[i], smem[i]);
}

// Each block reduces its 128 values in shared memory; rank 0 of the cluster adds the blocks' totals, read from
// their shared memory.
extern "C" __global__ void cluster_reduce(const int* x, int* sums)
{
  __shared__ int part[128];
  cg::cluster_group cluster = cg::this_cluster();
  part[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  for (int s = 64; s > 0; s >>= 1)
  {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  cluster.sync();
  if (cluster.block_rank() == 0 && threadIdx.x == 0)
  {
    int total = 0;
    for (unsigned r = 0; r < cluster.num_blocks(); ++r) total += *cluster.map_shared_rank(&part[0], r);
    sums[blockIdx.x / cluster.num_blocks()] = total;
  }
  cluster.sync();
}

// Every cluster register, as cooperative groups and the __cluster* intrinsics read them, per block.
extern "C" __global__ void where_am_i(unsigned* out)
{
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0)
  {
    unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    dim3 index = cluster.block_index(), dims = cluster.dim_blocks(), id = __clusterIdx(), n = __clusterGridDimInClusters();
    unsigned values[12] = {cluster.block_rank(), cluster.num_blocks(), index.x, index.y, index.z, dims.x, dims.z,
                           id.x, id.y, id.z, n.x * 100 + n.y * 10 + n.z, __clusterDimIsSpecified() ? 1u : 0u};
    for (int k = 0; k < 12; ++k) out[12 * b + k] = values[k];
  }
  cluster.sync();
}

// A ring: each block writes its rank into the next block's shared memory, arrives, does its own work, waits, then
// reads what its left neighbour wrote.
extern "C" __global__ void ring(unsigned* out, unsigned* work)
{
  __shared__ unsigned from_left;
  cg::cluster_group cluster = cg::this_cluster();
  unsigned n = cluster.num_blocks(), rank = cluster.block_rank();
  cluster.sync();
  if (threadIdx.x == 0) *cluster.map_shared_rank(&from_left, (rank + 1) % n) = rank;
  cluster.barrier_arrive();
  work[blockIdx.x * blockDim.x + threadIdx.x] = threadIdx.x * 3 + 1;
  cluster.barrier_wait();
  if (threadIdx.x == 0) out[blockIdx.x] = from_left;
  cluster.sync();
}

// The .shared::cluster instructions as cuda::ptx and hand-written code use them: mapa to the next rank, ld, st,
// atom and red there, getctarank of the mapped address.
extern "C" __global__ void dsmem_instructions(unsigned* out)
{
  __shared__ unsigned s[2];
  cg::cluster_group cluster = cg::this_cluster();
  unsigned n = cluster.num_blocks(), rank = cluster.block_rank();
  if (threadIdx.x == 0) { s[0] = rank * 10; s[1] = 0; }
  cluster.sync();
  if (threadIdx.x == 0)
  {
    unsigned own = (unsigned)__cvta_generic_to_shared(&s[0]), there, v, old, owner;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(there) : "r"(own), "r"((rank + 1) % n));
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(there));
    asm volatile("st.shared::cluster.u32 [%0+4], %1;" :: "r"(there), "r"(v + 1));
    asm volatile("atom.shared::cluster.add.u32 %0, [%1], 5;" : "=r"(old) : "r"(there));
    asm volatile("red.shared::cluster.add.u32 [%0], 7;" :: "r"(there));
    asm volatile("getctarank.shared::cluster.u32 %0, %1;" : "=r"(owner) : "r"(there));
    out[4 * blockIdx.x + 0] = v;
    out[4 * blockIdx.x + 1] = old;
    out[4 * blockIdx.x + 2] = owner;
  }
  asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;");
  if (threadIdx.x == 0) out[4 * blockIdx.x + 3] = s[0] * 1000 + s[1];
  cluster.sync();
}

extern "C" __global__ void wrong_rank(int* out)
{
  __shared__ int s;
  cg::cluster_group cluster = cg::this_cluster();
  s = 1;
  cluster.sync();
  out[blockIdx.x] = *cluster.map_shared_rank(&s, cluster.num_blocks());
  cluster.sync();
}

// Rank 1 ends at once; rank 0 syncs (the ended block does not hold the barrier up), then reads rank 1's memory.
extern "C" __global__ void reads_an_ended_block(int* out)
{
  __shared__ int s;
  cg::cluster_group cluster = cg::this_cluster();
  if (cluster.block_rank() == 1) return;
  s = 2;
  cluster.sync();
  out[0] = *cluster.map_shared_rank(&s, 1);
}

// Warp 0 waits at the cluster barrier for warp 1, which waits at __syncthreads() for warp 0.
extern "C" __global__ void crossed_barriers(int* out)
{
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x < 32) cluster.sync();
  __syncthreads();
  if (threadIdx.x >= 32) cluster.sync();
  out[threadIdx.x] = 1;
}

extern "C" __global__ void divergent_aligned(int* out)
{
  if (threadIdx.x < 16) asm volatile("barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;");
  out[threadIdx.x] = 1;
}

// Thread 0 writes, the cluster syncs, thread 32 (another warp) reads: ordered, not a race.
extern "C" __global__ void ordered_by_the_cluster_barrier(int* out)
{
  __shared__ int s;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) s = 7 + blockIdx.x;
  cluster.sync();
  if (threadIdx.x == 32) out[blockIdx.x] = s;
}
)";

    std::vector<int> histogram_of(const std::vector<int>& values, int nbins)
    {
        std::vector<int> bins(static_cast<std::size_t>(nbins), 0);
        for (int v : values)
        {
            ++bins[static_cast<std::size_t>(std::min(std::max(v, 0), nbins - 1))];
        }
        return bins;
    }

    std::vector<int> values_for_histogram(int n, int nbins)
    {
        std::vector<int> values(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i)
        {
            values[static_cast<std::size_t>(i)] = (i * 7919 + i / 3) % (nbins + 10) - 5;  // some below 0, some past the end
        }
        return values;
    }
}

TEST(simulator_clusters, the_programming_guides_distributed_shared_memory_histogram_matches_the_host)
{
    simulated sim(cluster_kernels);
    sim.cluster = {4, 1, 1};
    const int bins_per_block = 32, nbins = 4 * bins_per_block, n = 5000;
    std::vector<int> values = values_for_histogram(n, nbins), bins(static_cast<std::size_t>(nbins), 0);
    sim.launch("clusterHist_kernel", {8, 1, 1}, {128, 1, 1}, bins_per_block * 4, sim.buffer(bins), nbins, bins_per_block,
               sim.buffer(values), static_cast<std::size_t>(n));
    EXPECT_EQ(bins, histogram_of(values, nbins));
}

TEST(simulator_clusters, a_pool_of_host_threads_takes_whole_clusters_and_gives_the_same_histogram)
{
    simulated sim(cluster_kernels);
    sim.cluster = {2, 1, 1};
    sim.threads = 3;
    const int bins_per_block = 16, nbins = 2 * bins_per_block, n = 20000;
    std::vector<int> values = values_for_histogram(n, nbins), bins(static_cast<std::size_t>(nbins), 0);
    sim.launch("clusterHist_kernel", {32, 1, 1}, {64, 1, 1}, bins_per_block * 4, sim.buffer(bins), nbins, bins_per_block,
               sim.buffer(values), static_cast<std::size_t>(n));
    EXPECT_EQ(bins, histogram_of(values, nbins));
}

TEST(simulator_clusters, a_cluster_reduction_reads_every_blocks_shared_total)
{
    simulated sim(cluster_kernels);
    sim.cluster = {4, 1, 1};
    std::vector<int> x(16 * 128), sums(4, -1), expected(4, 0);
    for (std::size_t i = 0; i < x.size(); ++i)
    {
        x[i] = static_cast<int>(i * 37 % 101) - 50;
        expected[i / 512] += x[i];
    }
    sim.launch("cluster_reduce", {16, 1, 1}, {128, 1, 1}, 0, sim.buffer(x), sim.buffer(sums));
    EXPECT_EQ(sums, expected);
}

TEST(simulator_clusters, the_cluster_registers_on_a_three_dimensional_grid_are_the_hardwares)
{
    simulated sim(cluster_kernels);
    const unsigned grid[3] = {4, 2, 2}, dims[3] = {2, 1, 2};
    std::vector<unsigned> out(16 * 12, 0xdeadu);
    auto expected = [&](bool clustered) {
        const unsigned d[3] = {clustered ? dims[0] : 1u, clustered ? dims[1] : 1u, clustered ? dims[2] : 1u};
        std::vector<unsigned> e;
        for (unsigned z = 0; z < grid[2]; ++z)
            for (unsigned y = 0; y < grid[1]; ++y)
                for (unsigned x = 0; x < grid[0]; ++x)
                {
                    const unsigned l[3] = {x % d[0], y % d[1], z % d[2]};
                    const unsigned n[3] = {grid[0] / d[0], grid[1] / d[1], grid[2] / d[2]};
                    std::vector<unsigned> v = {l[0] + d[0] * (l[1] + d[1] * l[2]), d[0] * d[1] * d[2], l[0], l[1], l[2], d[0],
                                               d[2], x / d[0], y / d[1], z / d[2], n[0] * 100 + n[1] * 10 + n[2],
                                               clustered ? 1u : 0u};
                    e.insert(e.end(), v.begin(), v.end());
                }
        return e;
    };
    sim.cluster = {dims[0], dims[1], dims[2]};
    sim.launch("where_am_i", {grid[0], grid[1], grid[2]}, {64, 1, 1}, 0, sim.buffer(out));
    EXPECT_EQ(out, expected(true));
    // Without a cluster launch each block is a cluster of one, and cluster.sync() is the block's.
    sim.cluster = {1, 1, 1};
    sim.launch("where_am_i", {grid[0], grid[1], grid[2]}, {64, 1, 1}, 0, sim.buffer(out));
    EXPECT_EQ(out, expected(false));
}

TEST(simulator_clusters, a_split_arrive_and_wait_lets_each_block_read_what_its_neighbour_wrote)
{
    simulated sim(cluster_kernels);
    sim.cluster = {4, 1, 1};
    std::vector<unsigned> out(8, 99), work(8 * 64, 0);
    sim.launch("ring", {8, 1, 1}, {64, 1, 1}, 0, sim.buffer(out), sim.buffer(work));
    EXPECT_EQ(out, (std::vector<unsigned>{3, 0, 1, 2, 3, 0, 1, 2}));
    EXPECT_EQ(work[64 + 5], 16u);
}

TEST(simulator_clusters, the_shared_cluster_instructions_reach_the_next_blocks_memory)
{
    simulated sim(cluster_kernels);
    sim.cluster = {3, 1, 1};
    std::vector<unsigned> out(3 * 4, 0);
    sim.launch("dsmem_instructions", {3, 1, 1}, {32, 1, 1}, 0, sim.buffer(out));
    for (unsigned r = 0; r < 3; ++r)
    {
        const unsigned next = (r + 1) % 3, left = (r + 2) % 3;
        EXPECT_EQ(out[4 * r + 0], next * 10) << "ld of rank " << r;
        EXPECT_EQ(out[4 * r + 1], next * 10) << "atom's old value, rank " << r;
        EXPECT_EQ(out[4 * r + 2], next) << "getctarank, rank " << r;
        // s[0] = r*10 + 5 + 7 (the left neighbour's atom and red), s[1] = the left neighbour's store of r*10 + 1
        EXPECT_EQ(out[4 * r + 3], (r * 10 + 12) * 1000 + r * 10 + 1) << "rank " << r << " (left " << left << ")";
    }
}

TEST(simulator_clusters, a_rank_past_the_cluster_is_a_fault_naming_the_line)
{
    simulated sim(cluster_kernels);
    sim.cluster = {2, 1, 1};
    std::vector<int> out(4, 0);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("wrong_rank", {4, 1, 1}, {32, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_address);
    EXPECT_NE(message.find("block rank 2 of its cluster, which has 2 blocks (ranks 0 to 1)"), std::string::npos) << message;
    EXPECT_NE(message.find("mapa"), std::string::npos) << message;
    EXPECT_NE(message.find(", line "), std::string::npos) << message;
    EXPECT_NE(message.find("block (0,0,0)"), std::string::npos) << message;
}

TEST(simulator_clusters, reading_the_shared_memory_of_a_block_that_has_ended_is_a_fault)
{
    simulated sim(cluster_kernels);
    sim.cluster = {2, 1, 1};
    std::vector<int> out(1, 0);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("reads_an_ended_block", {2, 1, 1}, {32, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_address);
    EXPECT_NE(message.find("block rank 1 of the cluster"), std::string::npos) << message;
    EXPECT_NE(message.find("which has exited"), std::string::npos) << message;
}

TEST(simulator_clusters, a_cluster_barrier_crossed_with_a_block_barrier_is_reported_as_a_hang)
{
    simulated sim(cluster_kernels);
    sim.cluster = {2, 1, 1};
    std::vector<int> out(64, 0);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("crossed_barriers", {2, 1, 1}, {64, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::barrier_divergence);
    EXPECT_NE(message.find("a barrier that can never complete in the cluster"), std::string::npos) << message;
    EXPECT_NE(message.find("(the cluster barrier)"), std::string::npos) << message;
    EXPECT_NE(message.find("barrier 0, every thread"), std::string::npos) << message;
    EXPECT_NE(message.find("64 of the cluster's 128 threads"), std::string::npos) << message;
}

TEST(simulator_clusters, an_aligned_cluster_barrier_reached_by_part_of_a_warp_is_barrier_divergence)
{
    simulated sim(cluster_kernels);
    sim.cluster = {2, 1, 1};
    std::vector<int> out(32, 0);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("divergent_aligned", {2, 1, 1}, {32, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::barrier_divergence);
    EXPECT_NE(message.find("barrier.cluster.arrive.aligned"), std::string::npos) << message;
    EXPECT_NE(message.find("lanes 0xffff0000"), std::string::npos) << message;
}

TEST(simulator_clusters, the_cluster_barrier_orders_shared_memory_for_the_race_check)
{
    simulated sim(cluster_kernels);
    sim.cluster = {2, 1, 1};
    std::vector<int> out(4, 0);
    sim.launch("ordered_by_the_cluster_barrier", {4, 1, 1}, {64, 1, 1}, 0, sim.buffer(out));
    EXPECT_EQ(out, (std::vector<int>{7, 8, 9, 10}));
}

TEST(simulator_clusters, a_grid_that_is_not_a_multiple_of_the_cluster_is_refused)
{
    simulated sim(cluster_kernels);
    sim.cluster = {4, 1, 1};
    std::vector<int> out(64, 0);
    std::string message = error_of([&] { sim.launch("cluster_reduce", {6, 1, 1}, {128, 1, 1}, 0, sim.buffer(out), sim.buffer(out)); });
    EXPECT_NE(message.find("a grid of 6x1x1 blocks is not a multiple of its cluster of 4x1x1 blocks (axis x)"), std::string::npos)
        << message;
}
