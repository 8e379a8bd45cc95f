// A realistic CUDA C++ source with CCCL headers, for tests/bench/bench_compile.py: the "300-line kernel
// with CCCL headers" whose cold NVRTC compile, cache hits and CuPy compile the benchmark times.
//
// It is what a notebook user writes once a cell outgrows SAXPY: a small templated helper library on
// <cuda/std/...>, then block-wide reductions, scans and histograms on CUB's block primitives, exposed
// as extern "C" entry points so that xcuda, CuPy and bare NVRTC all find them by name. Every kernel
// runs with BLOCK threads and ITEMS items per thread (one tile = BLOCK * ITEMS elements).
//
// NVRTC compiles it with only the toolkit's include/ and include/cccl/ on the include path (no host
// headers): keep to <cub/block/...> and <cuda/std/...>.
#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>

#include <cuda/std/cstdint>
#include <cuda/std/limits>
#include <cuda/std/span>
#include <cuda/std/tuple>
#include <cuda/std/type_traits>
#include <cuda/std/utility>

namespace bench
{
    constexpr int BLOCK = 256;
    constexpr int ITEMS = 4;
    constexpr int TILE = BLOCK * ITEMS;
    constexpr int BINS = 256;

    using cuda::std::int64_t;
    using cuda::std::uint32_t;
    using cuda::std::uint8_t;

    // ---- helpers ------------------------------------------------------------------------------------

    template <class T>
    __host__ __device__ constexpr T ceil_div(T a, T b)
    {
        static_assert(cuda::std::is_integral<T>::value, "ceil_div is for integers");
        return (a + b - 1) / b;
    }

    template <class T>
    __device__ constexpr T clamp(T value, T low, T high)
    {
        return value < low ? low : (high < value ? high : value);
    }

    // Converts with saturation instead of wrap-around (e.g. float -> uint8_t pixel values).
    template <class To, class From>
    __device__ To saturate(From value)
    {
        using limits = cuda::std::numeric_limits<To>;
        if constexpr (cuda::std::is_floating_point<From>::value)
        {
            if (value != value)
            {
                return To(0);
            }
        }
        if (value <= From(limits::lowest()))
        {
            return limits::lowest();
        }
        if (value >= From(limits::max()))
        {
            return limits::max();
        }
        return static_cast<To>(value);
    }

    struct sum_op
    {
        template <class T>
        __device__ T operator()(const T& a, const T& b) const { return a + b; }
    };

    struct max_op
    {
        template <class T>
        __device__ T operator()(const T& a, const T& b) const { return a < b ? b : a; }
    };

    // (min, max, count) in one pass, combined element-wise.
    template <class T>
    using stats = cuda::std::tuple<T, T, uint32_t>;

    template <class T>
    __device__ stats<T> stats_identity()
    {
        using limits = cuda::std::numeric_limits<T>;
        return stats<T>(limits::max(), limits::lowest(), 0u);
    }

    struct stats_op
    {
        template <class T>
        __device__ stats<T> operator()(const stats<T>& a, const stats<T>& b) const
        {
            return stats<T>(cuda::std::get<0>(a) < cuda::std::get<0>(b) ? cuda::std::get<0>(a) : cuda::std::get<0>(b),
                            cuda::std::get<1>(a) < cuda::std::get<1>(b) ? cuda::std::get<1>(b) : cuda::std::get<1>(a),
                            cuda::std::get<2>(a) + cuda::std::get<2>(b));
        }
    };

    // The tile of `data` that block `block` owns, clipped at the end of the data.
    template <class T>
    __device__ cuda::std::span<T> tile_of(T* data, int64_t n, int64_t block)
    {
        int64_t begin = block * TILE;
        int64_t count = begin < n ? (n - begin < TILE ? n - begin : TILE) : 0;
        return cuda::std::span<T>(data + begin, static_cast<size_t>(count));
    }

    // Bin of `value` among `bins` equal bins over [low, high); -1 outside.
    template <class T>
    __device__ int bin_of(T value, T low, T high, int bins)
    {
        if (!(value >= low) || !(value < high))
        {
            return -1;
        }
        int bin = static_cast<int>((value - low) * bins / (high - low));
        return clamp(bin, 0, bins - 1);
    }

    // ---- block-level building blocks ------------------------------------------------------------------

    template <class T>
    using loader = cub::BlockLoad<T, BLOCK, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
    template <class T>
    using storer = cub::BlockStore<T, BLOCK, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>;
    template <class T>
    using reducer = cub::BlockReduce<T, BLOCK>;
    template <class T>
    using scanner = cub::BlockScan<T, BLOCK>;

    // Loads one tile (padding with `fill`) into `items`.
    template <class T>
    __device__ void load_tile(cuda::std::span<const T> tile, T (&items)[ITEMS], T fill,
                              typename loader<T>::TempStorage& storage)
    {
        loader<T>(storage).Load(tile.data(), items, static_cast<int>(tile.size()), fill);
    }

    template <class T, class Op>
    __device__ T reduce_tile(cuda::std::span<const T> tile, T identity, Op op)
    {
        __shared__ union
        {
            typename loader<T>::TempStorage load;
            typename reducer<T>::TempStorage reduce;
        } storage;
        T items[ITEMS];
        load_tile(tile, items, identity, storage.load);
        __syncthreads();
        return reducer<T>(storage.reduce).Reduce(items, op);
    }

    // Exclusive prefix sum of one tile into `out`; returns the tile's total (valid in every thread).
    template <class T>
    __device__ T scan_tile(cuda::std::span<const T> tile, T* out)
    {
        __shared__ union
        {
            typename loader<T>::TempStorage load;
            typename scanner<T>::TempStorage scan;
            typename storer<T>::TempStorage store;
        } storage;
        __shared__ T total;
        T items[ITEMS];
        load_tile(tile, items, T(0), storage.load);
        __syncthreads();
        T aggregate;
        scanner<T>(storage.scan).ExclusiveSum(items, items, aggregate);
        if (threadIdx.x == 0)
        {
            total = aggregate;
        }
        __syncthreads();
        storer<T>(storage.store).Store(out, items, static_cast<int>(tile.size()));
        __syncthreads();
        return total;
    }

    // A per-block histogram in shared memory, merged into `global` (BINS counters) at the end.
    template <class T, class BinOf>
    __device__ void histogram_tile(cuda::std::span<const T> tile, uint32_t* global, BinOf bin_of_value)
    {
        __shared__ uint32_t counts[BINS];
        for (int bin = threadIdx.x; bin < BINS; bin += BLOCK)
        {
            counts[bin] = 0;
        }
        __syncthreads();
        for (size_t i = threadIdx.x; i < tile.size(); i += BLOCK)
        {
            int bin = bin_of_value(tile[i]);
            if (bin >= 0)
            {
                atomicAdd(&counts[bin], 1u);
            }
        }
        __syncthreads();
        for (int bin = threadIdx.x; bin < BINS; bin += BLOCK)
        {
            if (counts[bin])
            {
                atomicAdd(&global[bin], counts[bin]);
            }
        }
    }
}

// ---- entry points (launch with bench::BLOCK = 256 threads, grid = ceil(n / 1024)) ------------------------

// out[0] += sum(x) (out zeroed by the caller).
extern "C" __global__ void block_sum_f32(const float* x, float* out, long long n)
{
    auto tile = bench::tile_of(x, n, blockIdx.x);
    float sum = bench::reduce_tile<float>(tile, 0.0f, bench::sum_op{});
    if (threadIdx.x == 0)
    {
        atomicAdd(out, sum);
    }
}

// Per-block max into partial[blockIdx.x]; a second launch with one block reduces the partials.
extern "C" __global__ void block_max_i32(const int* x, int* partial, long long n)
{
    auto tile = bench::tile_of(x, n, blockIdx.x);
    int best = bench::reduce_tile<int>(tile, cuda::std::numeric_limits<int>::lowest(), bench::max_op{});
    if (threadIdx.x == 0)
    {
        partial[blockIdx.x] = best;
    }
}

// (min, max, count) of x per block, as three arrays indexed by block.
extern "C" __global__ void block_stats_f32(const float* x, float* mins, float* maxs, unsigned* counts, long long n)
{
    using stats = bench::stats<float>;
    using reducer = cub::BlockReduce<stats, bench::BLOCK>;
    __shared__ typename reducer::TempStorage storage;
    auto tile = bench::tile_of(x, n, blockIdx.x);
    stats mine = bench::stats_identity<float>();
    for (size_t i = threadIdx.x; i < tile.size(); i += bench::BLOCK)
    {
        mine = bench::stats_op{}(mine, stats(tile[i], tile[i], 1u));
    }
    stats all = reducer(storage).Reduce(mine, bench::stats_op{});
    if (threadIdx.x == 0)
    {
        mins[blockIdx.x] = cuda::std::get<0>(all);
        maxs[blockIdx.x] = cuda::std::get<1>(all);
        counts[blockIdx.x] = cuda::std::get<2>(all);
    }
}

// Exclusive prefix sum within each tile; totals[blockIdx.x] receives the tile's sum.
extern "C" __global__ void tile_scan_u32(const unsigned* x, unsigned* out, unsigned* totals, long long n)
{
    auto tile = bench::tile_of(x, n, blockIdx.x);
    unsigned total = bench::scan_tile<unsigned>(tile, out + blockIdx.x * (long long)bench::TILE);
    if (threadIdx.x == 0)
    {
        totals[blockIdx.x] = total;
    }
}

// Second pass of the scan: adds the (scanned) tile offsets, making out a global exclusive sum.
extern "C" __global__ void add_tile_offsets_u32(unsigned* out, const unsigned* offsets, long long n)
{
    auto tile = bench::tile_of(out, n, blockIdx.x);
    unsigned offset = offsets[blockIdx.x];
    for (size_t i = threadIdx.x; i < tile.size(); i += bench::BLOCK)
    {
        tile[i] += offset;
    }
}

// Keeps the positive values of x in order: out[count] receives them, *kept their number. Tiles are
// compacted independently and appended with one atomic per block (order kept within a tile).
extern "C" __global__ void compact_positive_f32(const float* x, float* out, unsigned* kept, long long n)
{
    using scanner = cub::BlockScan<unsigned, bench::BLOCK>;
    __shared__ typename scanner::TempStorage storage;
    __shared__ unsigned base;
    auto tile = bench::tile_of(x, n, blockIdx.x);
    float values[bench::ITEMS];
    unsigned flags[bench::ITEMS];
    for (int k = 0; k < bench::ITEMS; ++k)
    {
        size_t i = threadIdx.x * bench::ITEMS + k;
        values[k] = i < tile.size() ? tile[i] : 0.0f;
        flags[k] = values[k] > 0.0f ? 1u : 0u;
    }
    unsigned total;
    scanner(storage).ExclusiveSum(flags, flags, total);
    if (threadIdx.x == 0)
    {
        base = atomicAdd(kept, total);
    }
    __syncthreads();
    for (int k = 0; k < bench::ITEMS; ++k)
    {
        if (values[k] > 0.0f)
        {
            out[base + flags[k]] = values[k];
        }
    }
}

// 256-bin histogram of bytes (hist zeroed by the caller).
extern "C" __global__ void histogram_u8(const unsigned char* x, unsigned* hist, long long n)
{
    auto tile = bench::tile_of(x, n, blockIdx.x);
    bench::histogram_tile(cuda::std::span<const unsigned char>(tile), hist,
                          [](unsigned char value) { return static_cast<int>(value); });
}

// 256 equal bins over [low, high) of floats; values outside are not counted.
extern "C" __global__ void histogram_f32(const float* x, unsigned* hist, float low, float high, long long n)
{
    auto tile = bench::tile_of(x, n, blockIdx.x);
    bench::histogram_tile(cuda::std::span<const float>(tile), hist,
                          [low, high](float value) { return bench::bin_of(value, low, high, bench::BINS); });
}

// Maps floats in [low, high] to saturated 8-bit values (out-of-range values clip, NaN becomes 0).
extern "C" __global__ void quantize_u8(const float* x, unsigned char* out, float low, float high, long long n)
{
    float scale = 255.0f / (high - low);
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    {
        out[i] = bench::saturate<cuda::std::uint8_t>((x[i] - low) * scale + 0.5f);
    }
}

// Normalises each row of a rows x cols matrix to unit sum (one block per row).
extern "C" __global__ void normalize_rows_f32(float* matrix, int rows, int cols)
{
    using reducer = cub::BlockReduce<float, bench::BLOCK>;
    __shared__ typename reducer::TempStorage storage;
    __shared__ float total;
    if (blockIdx.x >= rows)
    {
        return;
    }
    cuda::std::span<float> row(matrix + (long long)blockIdx.x * cols, static_cast<size_t>(cols));
    float sum = 0.0f;
    for (size_t i = threadIdx.x; i < row.size(); i += bench::BLOCK)
    {
        sum += row[i];
    }
    float all = reducer(storage).Sum(sum);
    if (threadIdx.x == 0)
    {
        total = all;
    }
    __syncthreads();
    if (total > cuda::std::numeric_limits<float>::min())
    {
        for (size_t i = threadIdx.x; i < row.size(); i += bench::BLOCK)
        {
            row[i] /= total;
        }
    }
}
