// The C++ driver-API baseline that bench_gpu.py compares xcuda and the Python CUDA libraries against.
//
// What it measures (all on device 0, its primary context, the legacy default stream):
//   launch_us       host cost of one cuLaunchKernel of SAXPY (n = 4096, block 256): 25 batches of 1000
//                   asynchronous launches, each batch timed on the host with steady_clock around the
//                   1000 calls only (the synchronize after it is outside the timed region); the median
//                   batch divided by 1000, in microseconds.
//   launch16_us     the same for `many`, a kernel of 16 float scalars and 16 pointers.
//   saxpy_kernel_us SAXPY at n = 2^24 timed with CUDA events around each launch: median of 100 after 10
//                   warm-up launches; saxpy_kernel_gbs counts x, y and out (12 bytes per element).
//   copy_us         cuMemcpyDtoDAsync of copy_bytes = 6 * n bytes, timed like the kernel; copy_gbs counts
//                   the bytes read plus the bytes written (2 * copy_bytes = the 12 * n bytes SAXPY moves):
//                   the device-to-device ceiling for a streaming kernel of that size.
//   e2e_pageable_ms the CUDA Python tutorial's SAXPY end to end at n = 2^24 (= 512 * 32768, the tutorial's
//                   size): cuMemcpyHtoD of x and y from malloc'ed (pageable) buffers, the launch, and
//                   cuMemcpyDtoH of out; host wall time, median of 20 after 3 warm-up runs. Device buffers
//                   are allocated once, outside the timed region.
//   e2e_pageable_alloc_ms  the same with cuMemAlloc / cuMemFree of the three device buffers inside the
//                   timed region (what a one-call form that allocates temporaries has to do).
//   e2e_pinned_ms   the same as e2e_pageable_ms from page-locked buffers (cuMemAllocHost).
// Each result is checked against the host computation before it is timed.
//
// `launch_baseline transfers` (tests/bench/bench_transfers.py) measures instead copies of 256 MiB, host
// wall time, median of 20 after 3 warm-up copies, in GB/s (2^28 bytes / time):
//   copy_h2d_pinned_gbs, copy_d2h_pinned_gbs          from and to cuMemAllocHost memory (the bus ceiling)
//   copy_h2d_pageable_gbs, copy_d2h_pageable_gbs      from and to malloc'ed memory (the driver's staging)
//   copy_h2d_registered_gbs, copy_d2h_registered_gbs  malloc'ed memory registered once (cuMemHostRegister)
//   register_ms, unregister_ms                        cuMemHostRegister / cuMemHostUnregister of the 256 MiB
//                                                     (median of 5): what registering for one copy costs
//
// `launch_baseline graphs` (tests/bench/bench_graphs.py) measures a chain of 100 launches of a small
// kernel (chain_step, n = 4096, grid 16, block 256, x[i] = x[i] * a + 1) on the legacy stream:
//   chain_eager_host_us  host time of issuing the 100 cuLaunchKernel calls (the synchronize after them
//                        outside the timed region), median of 200 after 10 warm-up chains
//   chain_eager_wall_us  the same with cuCtxSynchronize inside the timed region
//   chain_graph_host_us, chain_graph_wall_us  the same for one cuGraphLaunch of the chain captured
//                        (cuStreamBeginCapture on a non-blocking stream) and instantiated once
// The eager and the replayed chains' results are checked against the host computation.
//
// `launch_baseline variants` (goal 1 of issue 27: is some driver call cheaper than the loop above?) times,
// in interleaved batches in one process (25 rounds, each variant's 1000 launches a batch, median per
// launch in microseconds), SAXPY n = 4096 launched as:
//   variant_kernel_params_us        cuLaunchKernel, kernelParams, the legacy default stream (launch_us's loop)
//   variant_param_buffer_us         cuLaunchKernel with `extra` = CU_LAUNCH_PARAM_BUFFER_POINTER (one packed buffer)
//   variant_ctx_get_current_us      cuCtxGetCurrent before each cuLaunchKernel (what xcuda's launch adds)
//   variant_stream_legacy_us        the CU_STREAM_LEGACY handle instead of 0
//   variant_stream_blocking_us      a stream made with CU_STREAM_DEFAULT
//   variant_stream_non_blocking_us  a stream made with CU_STREAM_NON_BLOCKING
//   variant_stream_per_thread_us    CU_STREAM_PER_THREAD
//   variant_launch_ex_us            cuLaunchKernelEx, no attributes, the legacy default stream
// and `many` (16 scalars + 16 pointers): variant16_kernel_params_us, variant16_param_buffer_us. Each variant's
// result is checked once before it is timed (the packed buffers follow the parameters' natural alignment).
//
// Output: one `key value` line per result, for bench_gpu.py to parse. Every CUresult and nvrtcResult
// is checked; a failure prints the call, the error name and its description and exits 1.
//
// Build: nvcc -O2 -std=c++17 -o launch_baseline launch_baseline.cpp -lcuda -lnvrtc
//        (bench_gpu.py does this itself; add -Xlinker -rpath -Xlinker <toolkit>/lib64 if libnvrtc is not
//        on the loader path).

#include <cuda.h>
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace
{
    const char* const k_source = R"(
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}

extern "C" __global__ void chain_step(float* x, float a, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a + 1.0f;
}

extern "C" __global__ void many(float s0, float s1, float s2, float s3, float s4, float s5, float s6, float s7,
                                float s8, float s9, float s10, float s11, float s12, float s13, float s14, float s15,
                                const float* p0, const float* p1, const float* p2, const float* p3,
                                const float* p4, const float* p5, const float* p6, const float* p7,
                                const float* p8, const float* p9, const float* p10, const float* p11,
                                const float* p12, const float* p13, const float* p14, float* p15)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < 1)
    {
        p15[i] = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8 + s9 + s10 + s11 + s12 + s13 + s14 + s15 +
                 p0[i] + p1[i] + p2[i] + p3[i] + p4[i] + p5[i] + p6[i] + p7[i] + p8[i] + p9[i] + p10[i] +
                 p11[i] + p12[i] + p13[i] + p14[i];
    }
}
)";

    [[noreturn]] void fail(const std::string& message)
    {
        std::fprintf(stderr, "launch_baseline: %s\n", message.c_str());
        std::exit(1);
    }

    void check(CUresult result, const char* call)
    {
        if (result == CUDA_SUCCESS)
        {
            return;
        }
        const char* name = nullptr;
        const char* text = nullptr;
        cuGetErrorName(result, &name);
        cuGetErrorString(result, &text);
        fail(std::string(call) + " failed: " + (name ? name : "?") + " (" + (text ? text : "no description") + ")");
    }

    void check_nvrtc(nvrtcResult result, const char* call, const std::string& log = "")
    {
        if (result != NVRTC_SUCCESS)
        {
            fail(std::string(call) + " failed: " + nvrtcGetErrorString(result) + (log.empty() ? "" : "\n" + log));
        }
    }

#define CHECK(call) check((call), #call)
#define CHECK_NVRTC(call) check_nvrtc((call), #call)

    double median(std::vector<double> values)
    {
        std::sort(values.begin(), values.end());
        std::size_t n = values.size();
        return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
    }

    using clock_type = std::chrono::steady_clock;

    double seconds_since(clock_type::time_point start)
    {
        return std::chrono::duration<double>(clock_type::now() - start).count();
    }

    std::string compile_cubin(int major, int minor)
    {
        nvrtcProgram program = nullptr;
        CHECK_NVRTC(nvrtcCreateProgram(&program, k_source, "baseline.cu", 0, nullptr, nullptr));
        std::string arch = "--gpu-architecture=sm_" + std::to_string(major * 10 + minor);
        const char* options[] = {arch.c_str(), "--std=c++17"};
        nvrtcResult compiled = nvrtcCompileProgram(program, 2, options);
        std::size_t log_size = 0;
        CHECK_NVRTC(nvrtcGetProgramLogSize(program, &log_size));
        std::string log(log_size, '\0');
        CHECK_NVRTC(nvrtcGetProgramLog(program, log.data()));
        check_nvrtc(compiled, "nvrtcCompileProgram", log);
        std::size_t size = 0;
        CHECK_NVRTC(nvrtcGetCUBINSize(program, &size));
        std::string cubin(size, '\0');
        CHECK_NVRTC(nvrtcGetCUBIN(program, cubin.data()));
        CHECK_NVRTC(nvrtcDestroyProgram(&program));
        return cubin;
    }

    // Host cost of `launch` (1000 calls per batch), median over 25 batches, in microseconds per call.
    template <class Launch>
    double launch_cost_us(Launch launch)
    {
        constexpr int batches = 25;
        constexpr int per_batch = 1000;
        for (int i = 0; i < per_batch; ++i)  // warm-up batch, not timed
        {
            launch();
        }
        CHECK(cuCtxSynchronize());
        std::vector<double> per_launch_us;
        for (int b = 0; b < batches; ++b)
        {
            auto start = clock_type::now();
            for (int i = 0; i < per_batch; ++i)
            {
                launch();
            }
            per_launch_us.push_back(seconds_since(start) * 1e6 / per_batch);
            CHECK(cuCtxSynchronize());
        }
        return median(per_launch_us);
    }

    // Device time of `work` with CUDA events: median of 100 after 10 warm-up runs, in microseconds.
    template <class Work>
    double event_time_us(Work work)
    {
        CUevent start = nullptr;
        CUevent end = nullptr;
        CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
        CHECK(cuEventCreate(&end, CU_EVENT_DEFAULT));
        for (int i = 0; i < 10; ++i)
        {
            work();
        }
        std::vector<double> samples;
        for (int i = 0; i < 100; ++i)
        {
            CHECK(cuEventRecord(start, nullptr));
            work();
            CHECK(cuEventRecord(end, nullptr));
            CHECK(cuEventSynchronize(end));
            float ms = 0;
            CHECK(cuEventElapsedTime(&ms, start, end));
            samples.push_back(ms * 1e3);
        }
        CHECK(cuEventDestroy(start));
        CHECK(cuEventDestroy(end));
        return median(samples);
    }

    // Host wall time of `run`, median of 20 after 3 warm-up runs, in milliseconds.
    template <class Run>
    double wall_time_ms(Run run)
    {
        for (int i = 0; i < 3; ++i)
        {
            run();
        }
        std::vector<double> samples;
        for (int i = 0; i < 20; ++i)
        {
            auto start = clock_type::now();
            run();
            samples.push_back(seconds_since(start) * 1e3);
        }
        return median(samples);
    }

    void fill(float* values, std::size_t n, unsigned seed)
    {
        std::srand(seed);
        for (std::size_t i = 0; i < n; ++i)
        {
            values[i] = static_cast<float>(std::rand()) / static_cast<float>(RAND_MAX);
        }
    }

    void check_saxpy(const char* what, float a, const float* x, const float* y, const float* out, std::size_t n)
    {
        for (std::size_t i = 0; i < n; ++i)
        {
            float expected = a * x[i] + y[i];
            if (std::fabs(out[i] - expected) > 1e-5f * (1.0f + std::fabs(expected)))
            {
                fail(std::string(what) + ": wrong SAXPY result at " + std::to_string(i) + ": " +
                     std::to_string(out[i]) + " instead of " + std::to_string(expected));
            }
        }
    }

    unsigned blocks_for(std::size_t n, unsigned block)
    {
        return static_cast<unsigned>((n + block - 1) / block);
    }
}

namespace
{
    // Copies of 256 MiB from and to page-locked, pageable and registered host memory.
    void measure_transfers()
    {
        const std::size_t bytes = std::size_t(1) << 28;
        CUdeviceptr device = 0;
        CHECK(cuMemAlloc(&device, bytes));
        auto gbs = [&](double ms) { return static_cast<double>(bytes) / (ms * 1e-3) / 1e9; };
        auto both = [&](const char* name, void* host) {
            std::printf("copy_h2d_%s_gbs %.1f\n", name, gbs(wall_time_ms([&] { CHECK(cuMemcpyHtoD(device, host, bytes)); })));
            std::printf("copy_d2h_%s_gbs %.1f\n", name, gbs(wall_time_ms([&] { CHECK(cuMemcpyDtoH(host, device, bytes)); })));
        };
        void* pinned = nullptr;
        CHECK(cuMemAllocHost(&pinned, bytes));
        std::memset(pinned, 1, bytes);
        both("pinned", pinned);
        CHECK(cuMemFreeHost(pinned));

        void* pageable = std::malloc(bytes);
        if (!pageable)
        {
            fail("malloc of 256 MiB failed");
        }
        std::memset(pageable, 2, bytes);  // every page touched before timing
        both("pageable", pageable);
        std::vector<double> register_ms;
        std::vector<double> unregister_ms;
        for (int i = 0; i < 5; ++i)
        {
            auto start = clock_type::now();
            CHECK(cuMemHostRegister(pageable, bytes, 0));
            register_ms.push_back(seconds_since(start) * 1e3);
            start = clock_type::now();
            CHECK(cuMemHostUnregister(pageable));
            unregister_ms.push_back(seconds_since(start) * 1e3);
        }
        std::printf("register_ms %.3f\n", median(register_ms));
        std::printf("unregister_ms %.3f\n", median(unregister_ms));
        CHECK(cuMemHostRegister(pageable, bytes, 0));
        both("registered", pageable);
        CHECK(cuMemHostUnregister(pageable));
        std::free(pageable);
        CHECK(cuMemFree(device));
    }

    // A chain of 100 small launches, eager and as a CUDA graph.
    void measure_graphs(CUfunction step)
    {
        constexpr int chain = 100;
        constexpr int samples = 200;
        unsigned n = 4096;
        unsigned block = 256;
        unsigned grid = blocks_for(n, block);
        float a = 1.0001f;
        std::vector<float> start_values(n);
        fill(start_values.data(), n, 3);
        CUdeviceptr x = 0;
        CHECK(cuMemAlloc(&x, n * sizeof(float)));
        void* args[] = {&x, &a, &n};
        auto reset = [&] { CHECK(cuMemcpyHtoD(x, start_values.data(), n * sizeof(float))); };
        auto expected_after = [&](int chains) {
            std::vector<float> v = start_values;
            for (int c = 0; c < chains * chain; ++c)
            {
                for (float& e : v)
                {
                    e = e * a + 1.0f;
                }
            }
            return v;
        };
        auto check_result = [&](const char* what, int chains) {
            std::vector<float> got(n);
            CHECK(cuMemcpyDtoH(got.data(), x, n * sizeof(float)));
            std::vector<float> want = expected_after(chains);
            for (unsigned i = 0; i < n; ++i)
            {
                if (std::fabs(got[i] - want[i]) > 1e-4f * (1.0f + std::fabs(want[i])))
                {
                    fail(std::string(what) + ": wrong chain result at " + std::to_string(i));
                }
            }
        };
        auto eager = [&] {
            for (int k = 0; k < chain; ++k)
            {
                CHECK(cuLaunchKernel(step, grid, 1, 1, block, 1, 1, 0, nullptr, args, nullptr));
            }
        };
        reset();
        eager();
        CHECK(cuCtxSynchronize());
        check_result("eager chain", 1);

        CUstream capture = nullptr;
        CHECK(cuStreamCreate(&capture, CU_STREAM_NON_BLOCKING));
        CHECK(cuStreamBeginCapture(capture, CU_STREAM_CAPTURE_MODE_RELAXED));
        for (int k = 0; k < chain; ++k)
        {
            CHECK(cuLaunchKernel(step, grid, 1, 1, block, 1, 1, 0, capture, args, nullptr));
        }
        CUgraph graph = nullptr;
        CHECK(cuStreamEndCapture(capture, &graph));
        CUgraphExec exec = nullptr;
        CHECK(cuGraphInstantiate(&exec, graph, 0));
        reset();
        CHECK(cuGraphLaunch(exec, nullptr));
        CHECK(cuCtxSynchronize());
        check_result("replayed chain", 1);

        // Host time of issuing the work, the synchronize outside; and the wall time with it inside.
        auto host_and_wall = [&](const char* name, auto issue) {
            for (int i = 0; i < 10; ++i)
            {
                issue();
            }
            CHECK(cuCtxSynchronize());
            std::vector<double> host;
            std::vector<double> wall;
            for (int i = 0; i < samples; ++i)
            {
                auto start = clock_type::now();
                issue();
                host.push_back(seconds_since(start) * 1e6);
                CHECK(cuCtxSynchronize());
                wall.push_back(seconds_since(start) * 1e6);
            }
            std::printf("chain_%s_host_us %.3f\n", name, median(host));
            std::printf("chain_%s_wall_us %.3f\n", name, median(wall));
        };
        host_and_wall("eager", eager);
        host_and_wall("graph", [&] { CHECK(cuGraphLaunch(exec, nullptr)); });
        CHECK(cuGraphExecDestroy(exec));
        CHECK(cuGraphDestroy(graph));
        CHECK(cuStreamDestroy(capture));
        CHECK(cuMemFree(x));
    }
}

namespace
{
    // SAXPY's arguments at n (a = 2, x and y random on the host and copied to the device, out on the device);
    // args is what cuLaunchKernel takes (it points into the object: not copyable).
    struct saxpy_arguments
    {
        float a = 2.0f;
        std::size_t n;
        std::vector<float> hx, hy, hout;
        CUdeviceptr x = 0, y = 0, out = 0;
        void* args[5];

        explicit saxpy_arguments(std::size_t count) : n(count), hx(count), hy(count), hout(count)
        {
            std::size_t bytes = n * sizeof(float);
            fill(hx.data(), n, 1);
            fill(hy.data(), n, 2);
            CHECK(cuMemAlloc(&x, bytes));
            CHECK(cuMemAlloc(&y, bytes));
            CHECK(cuMemAlloc(&out, bytes));
            CHECK(cuMemcpyHtoD(x, hx.data(), bytes));
            CHECK(cuMemcpyHtoD(y, hy.data(), bytes));
            void* pointers[] = {&a, &x, &y, &out, &n};
            std::copy(pointers, pointers + 5, args);
        }
        saxpy_arguments(const saxpy_arguments&) = delete;
        saxpy_arguments& operator=(const saxpy_arguments&) = delete;

        // After a launch: out must hold a * x + y.
        void verify(const char* what)
        {
            CHECK(cuMemcpyDtoH(hout.data(), out, n * sizeof(float)));
            check_saxpy(what, a, hx.data(), hy.data(), hout.data(), n);
        }

        void release()
        {
            CHECK(cuMemFree(x));
            CHECK(cuMemFree(y));
            CHECK(cuMemFree(out));
        }
    };

    // The arguments of `many` (16 scalars + 16 pointers to n floats each): s_k = k + 1, p_k (k < 15) filled with
    // 100 * (k + 1), p15 the output; a launch writes p15[0] = the sum of the scalars and of p0..p14's first
    // elements. args is what cuLaunchKernel takes (it points into the object: not copyable).
    struct many_arguments
    {
        float scalars[16];
        CUdeviceptr pointers[16];
        void* args[32];
        float expected = 0;

        explicit many_arguments(std::size_t n)
        {
            std::size_t bytes = n * sizeof(float);
            for (int k = 0; k < 16; ++k)
            {
                scalars[k] = static_cast<float>(k + 1);
                expected += scalars[k];
                CHECK(cuMemAlloc(&pointers[k], bytes));
                std::vector<float> values(n, k < 15 ? 100.0f * (k + 1) : 0.0f);
                expected += k < 15 ? values[0] : 0.0f;
                CHECK(cuMemcpyHtoD(pointers[k], values.data(), bytes));
                args[k] = &scalars[k];
                args[16 + k] = &pointers[k];
            }
        }
        many_arguments(const many_arguments&) = delete;
        many_arguments& operator=(const many_arguments&) = delete;

        // After a launch: p15[0] must hold the expected sum.
        void verify(const std::string& what) const
        {
            float result = 0;
            CHECK(cuMemcpyDtoH(&result, pointers[15], sizeof result));
            if (result != expected)
            {
                fail(what + ": wrong result " + std::to_string(result) + " instead of " + std::to_string(expected));
            }
        }

        void release()
        {
            for (CUdeviceptr pointer : pointers)
            {
                CHECK(cuMemFree(pointer));
            }
        }
    };

    // Parameters packed as the kernel's parameter space lays them out: each at the next multiple of its
    // alignment (here its size), for cuLaunchKernel's CU_LAUNCH_PARAM_BUFFER_POINTER.
    struct packed_parameters
    {
        alignas(16) unsigned char bytes[256] = {};
        std::size_t size = 0;

        template <class T>
        void add(const T& value)
        {
            size = (size + alignof(T) - 1) / alignof(T) * alignof(T);
            if (size + sizeof(T) > sizeof bytes)
            {
                fail("packed_parameters: more than 256 bytes of parameters");
            }
            std::memcpy(bytes + size, &value, sizeof(T));
            size += sizeof(T);
        }
    };

    void measure_launch_variants(CUfunction saxpy, CUfunction many)
    {
        const unsigned block = 256;
        std::size_t n = 4096;
        unsigned grid = blocks_for(n, block);
        saxpy_arguments s(n);
        void** args = s.args;
        packed_parameters packed;
        packed.add(s.a);
        packed.add(s.x);
        packed.add(s.y);
        packed.add(s.out);
        packed.add(s.n);
        void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed.bytes, CU_LAUNCH_PARAM_BUFFER_SIZE, &packed.size,
                         CU_LAUNCH_PARAM_END};
        CUstream blocking = nullptr;
        CUstream non_blocking = nullptr;
        CHECK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
        CHECK(cuStreamCreate(&non_blocking, CU_STREAM_NON_BLOCKING));
        CUlaunchConfig config = {};
        config.gridDimX = grid;
        config.gridDimY = config.gridDimZ = 1;
        config.blockDimX = block;
        config.blockDimY = config.blockDimZ = 1;
        auto on = [&](CUstream stream) {
            CHECK(cuLaunchKernel(saxpy, grid, 1, 1, block, 1, 1, 0, stream, args, nullptr));
        };

        many_arguments m(n);
        packed_parameters many_packed;
        for (float scalar : m.scalars)
        {
            many_packed.add(scalar);
        }
        for (CUdeviceptr pointer : m.pointers)
        {
            many_packed.add(pointer);
        }
        void* many_extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, many_packed.bytes, CU_LAUNCH_PARAM_BUFFER_SIZE,
                              &many_packed.size, CU_LAUNCH_PARAM_END};

        struct variant
        {
            const char* key;
            std::function<void()> launch;
            bool is_many;
        };
        std::vector<variant> variants = {
            {"variant_kernel_params_us", [&] { on(nullptr); }, false},
            {"variant_param_buffer_us",
             [&] { CHECK(cuLaunchKernel(saxpy, grid, 1, 1, block, 1, 1, 0, nullptr, nullptr, extra)); }, false},
            {"variant_ctx_get_current_us",
             [&] {
                 CUcontext current = nullptr;
                 CHECK(cuCtxGetCurrent(&current));
                 on(nullptr);
             },
             false},
            {"variant_stream_legacy_us", [&] { on(CU_STREAM_LEGACY); }, false},
            {"variant_stream_blocking_us", [&] { on(blocking); }, false},
            {"variant_stream_non_blocking_us", [&] { on(non_blocking); }, false},
            {"variant_stream_per_thread_us", [&] { on(CU_STREAM_PER_THREAD); }, false},
            {"variant_launch_ex_us", [&] { CHECK(cuLaunchKernelEx(&config, saxpy, args, nullptr)); }, false},
            {"variant16_kernel_params_us",
             [&] { CHECK(cuLaunchKernel(many, grid, 1, 1, block, 1, 1, 0, nullptr, m.args, nullptr)); }, true},
            {"variant16_param_buffer_us",
             [&] { CHECK(cuLaunchKernel(many, grid, 1, 1, block, 1, 1, 0, nullptr, nullptr, many_extra)); }, true},
        };
        for (const variant& v : variants)  // each one's result checked, then a warm-up batch
        {
            if (v.is_many)
            {
                CHECK(cuMemsetD8(m.pointers[15], 0, sizeof(float)));
                v.launch();
                CHECK(cuCtxSynchronize());
                m.verify(v.key);
            }
            else
            {
                CHECK(cuMemsetD8(s.out, 0, n * sizeof(float)));
                v.launch();
                CHECK(cuCtxSynchronize());
                s.verify(v.key);
            }
            for (int i = 0; i < 1000; ++i)
            {
                v.launch();
            }
            CHECK(cuCtxSynchronize());
        }
        std::vector<std::vector<double>> per_launch_us(variants.size());
        for (int round = 0; round < 25; ++round)
        {
            for (std::size_t k = 0; k < variants.size(); ++k)
            {
                auto start = clock_type::now();
                for (int i = 0; i < 1000; ++i)
                {
                    variants[k].launch();
                }
                per_launch_us[k].push_back(seconds_since(start) * 1e6 / 1000);
                CHECK(cuCtxSynchronize());
            }
        }
        for (std::size_t k = 0; k < variants.size(); ++k)
        {
            std::printf("%s %.3f\n", variants[k].key, median(per_launch_us[k]));
        }
        CHECK(cuStreamDestroy(blocking));
        CHECK(cuStreamDestroy(non_blocking));
        m.release();
        s.release();
    }

    // launch_us and launch16_us: the host cost of one cuLaunchKernel of SAXPY and of the 16-argument kernel.
    void measure_launch_cost(CUfunction saxpy, CUfunction many, unsigned block)
    {
        std::size_t n = 4096;
        saxpy_arguments s(n);
        void** args = s.args;
        unsigned grid = blocks_for(n, block);
        CHECK(cuLaunchKernel(saxpy, grid, 1, 1, block, 1, 1, 0, nullptr, args, nullptr));
        s.verify("saxpy n=4096");
        std::printf("launch_us %.3f\n", launch_cost_us([&] {
                        CHECK(cuLaunchKernel(saxpy, grid, 1, 1, block, 1, 1, 0, nullptr, args, nullptr));
                    }));

        many_arguments m(n);
        CHECK(cuLaunchKernel(many, grid, 1, 1, block, 1, 1, 0, nullptr, m.args, nullptr));
        m.verify("many");
        std::printf("launch16_us %.3f\n", launch_cost_us([&] {
                        CHECK(cuLaunchKernel(many, grid, 1, 1, block, 1, 1, 0, nullptr, m.args, nullptr));
                    }));
        m.release();
        s.release();
    }

    // SAXPY at n = 2^24: kernel time, copy ceiling, tutorial end to end (pageable and pinned).
    void measure_large_saxpy(CUfunction saxpy, unsigned block)
    {
        float a = 2.0f;
        std::size_t n = std::size_t(1) << 24;
        std::size_t bytes = n * sizeof(float);
        unsigned grid = blocks_for(n, block);
        std::printf("n %zu\n", n);

        float* hx = static_cast<float*>(std::malloc(bytes));
        float* hy = static_cast<float*>(std::malloc(bytes));
        float* hout = static_cast<float*>(std::malloc(bytes));
        if (!hx || !hy || !hout)
        {
            fail("malloc of the host buffers failed");
        }
        fill(hx, n, 1);
        fill(hy, n, 2);
        std::fill(hout, hout + n, 0.0f);  // touch every page before timing

        CUdeviceptr x = 0, y = 0, out = 0;
        CHECK(cuMemAlloc(&x, bytes));
        CHECK(cuMemAlloc(&y, bytes));
        CHECK(cuMemAlloc(&out, bytes));
        void* args[] = {&a, &x, &y, &out, &n};

        auto tutorial = [&](const float* in_x, const float* in_y, float* result) {
            CHECK(cuMemcpyHtoD(x, in_x, bytes));
            CHECK(cuMemcpyHtoD(y, in_y, bytes));
            CHECK(cuLaunchKernel(saxpy, grid, 1, 1, block, 1, 1, 0, nullptr, args, nullptr));
            CHECK(cuMemcpyDtoH(result, out, bytes));
        };
        tutorial(hx, hy, hout);
        check_saxpy("saxpy n=2^24 (pageable)", a, hx, hy, hout, n);

        double kernel_us = event_time_us([&] {
            CHECK(cuLaunchKernel(saxpy, grid, 1, 1, block, 1, 1, 0, nullptr, args, nullptr));
        });
        std::printf("saxpy_kernel_us %.3f\n", kernel_us);
        std::printf("saxpy_kernel_gbs %.1f\n", 3.0 * bytes / (kernel_us * 1e-6) / 1e9);

        std::size_t copy_bytes = 6 * n;
        CUdeviceptr copy_from = 0, copy_to = 0;
        CHECK(cuMemAlloc(&copy_from, copy_bytes));
        CHECK(cuMemAlloc(&copy_to, copy_bytes));
        CHECK(cuMemsetD8(copy_from, 1, copy_bytes));
        double copy_us = event_time_us([&] { CHECK(cuMemcpyDtoDAsync(copy_to, copy_from, copy_bytes, nullptr)); });
        std::printf("copy_bytes %zu\n", copy_bytes);
        std::printf("copy_us %.3f\n", copy_us);
        std::printf("copy_gbs %.1f\n", 2.0 * copy_bytes / (copy_us * 1e-6) / 1e9);
        CHECK(cuMemFree(copy_from));
        CHECK(cuMemFree(copy_to));

        std::printf("e2e_pageable_ms %.3f\n", wall_time_ms([&] { tutorial(hx, hy, hout); }));

        CHECK(cuMemFree(x));
        CHECK(cuMemFree(y));
        CHECK(cuMemFree(out));
        std::printf("e2e_pageable_alloc_ms %.3f\n", wall_time_ms([&] {
                        CHECK(cuMemAlloc(&x, bytes));
                        CHECK(cuMemAlloc(&y, bytes));
                        CHECK(cuMemAlloc(&out, bytes));
                        tutorial(hx, hy, hout);
                        CHECK(cuMemFree(x));
                        CHECK(cuMemFree(y));
                        CHECK(cuMemFree(out));
                    }));
        CHECK(cuMemAlloc(&x, bytes));
        CHECK(cuMemAlloc(&y, bytes));
        CHECK(cuMemAlloc(&out, bytes));

        void* px = nullptr;
        void* py = nullptr;
        void* pout = nullptr;
        CHECK(cuMemAllocHost(&px, bytes));
        CHECK(cuMemAllocHost(&py, bytes));
        CHECK(cuMemAllocHost(&pout, bytes));
        std::copy(hx, hx + n, static_cast<float*>(px));
        std::copy(hy, hy + n, static_cast<float*>(py));
        tutorial(static_cast<float*>(px), static_cast<float*>(py), static_cast<float*>(pout));
        check_saxpy("saxpy n=2^24 (pinned)", a, hx, hy, static_cast<float*>(pout), n);
        std::printf("e2e_pinned_ms %.3f\n", wall_time_ms([&] {
                        tutorial(static_cast<float*>(px), static_cast<float*>(py), static_cast<float*>(pout));
                    }));
        CHECK(cuMemFreeHost(px));
        CHECK(cuMemFreeHost(py));
        CHECK(cuMemFreeHost(pout));
        CHECK(cuMemFree(x));
        CHECK(cuMemFree(y));
        CHECK(cuMemFree(out));
        std::free(hx);
        std::free(hy);
        std::free(hout);
    }
}

int main(int argc, char** argv)
{
    std::string mode = argc > 1 ? argv[1] : "";
    if (!mode.empty() && mode != "transfers" && mode != "graphs" && mode != "variants")
    {
        fail("unknown mode '" + mode + "' (none, transfers, graphs or variants)");
    }
    CHECK(cuInit(0));
    CUdevice device = 0;
    CHECK(cuDeviceGet(&device, 0));
    char name[256] = {};
    CHECK(cuDeviceGetName(name, sizeof name, device));
    int major = 0;
    int minor = 0;
    CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
    CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
    int driver_version = 0;
    CHECK(cuDriverGetVersion(&driver_version));
    CUcontext context = nullptr;
    CHECK(cuDevicePrimaryCtxRetain(&context, device));
    CHECK(cuCtxSetCurrent(context));
    std::printf("device %s\n", name);
    std::printf("arch sm_%d\n", major * 10 + minor);
    std::printf("driver_version %d\n", driver_version);

    std::string cubin = compile_cubin(major, minor);
    CUmodule module = nullptr;
    CHECK(cuModuleLoadData(&module, cubin.data()));
    CUfunction saxpy = nullptr;
    CUfunction many = nullptr;
    CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
    CHECK(cuModuleGetFunction(&many, module, "many"));
    if (mode == "transfers" || mode == "graphs" || mode == "variants")
    {
        if (mode == "transfers")
        {
            measure_transfers();
        }
        else if (mode == "variants")
        {
            measure_launch_variants(saxpy, many);
        }
        else
        {
            CUfunction step = nullptr;
            CHECK(cuModuleGetFunction(&step, module, "chain_step"));
            measure_graphs(step);
        }
        CHECK(cuModuleUnload(module));
        CHECK(cuDevicePrimaryCtxRelease(device));
        return 0;
    }

    const unsigned block = 256;
    measure_launch_cost(saxpy, many, block);
    measure_large_saxpy(saxpy, block);

    CHECK(cuModuleUnload(module));
    CHECK(cuDevicePrimaryCtxRelease(device));
    return 0;
}
