#pragma once
// The size sweep of xcuda.bench and %cuda_bench: for each n, ceil(n / block) blocks, the bytes moved
// (bytes_per_element * n, or what the timing counted), the median time, the bandwidth. The sweep
// knows nothing of how a size is timed: the caller's callback makes the arguments and times them
// (the binding: make_args(n) and Kernel.time in Python), so the sweep's arithmetic, its checks and its
// table are tested without Python or a GPU.
//
// Ownership: the sweep owns the result until finish() hands it over. Threading: one thread; the
// callbacks run on it (with the GIL held, in the binding).

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench_result.hpp"
#include "cuda_session.hpp"

namespace xcuda
{
    class bench_sweep
    {
    public:
        struct settings
        {
            int block = 256;
            std::optional<double> bytes_per_element;  // default: the bytes the timing counts
            int repeat = 20;
            int warmup = 3;
            std::optional<double> peak;               // GB/s to compare with; default: measured
            bool plot = true;
            // bytes_per_element and peak as the caller wrote them ("0", "-1.5"), for the messages.
            std::string bytes_per_element_written;
            std::string peak_written;
        };
        // One size timed: the median in ms and the bytes the timing counted (none: it could not count).
        struct timing
        {
            double median_ms = 0;
            std::optional<double> nbytes;
        };
        // Times size n on grid blocks; nbytes is what to count as moved when bytes_per_element was given.
        using time_size = std::function<timing(long long n, long long grid, std::optional<long long> nbytes)>;
        // After size number done (1-based), n, was timed: an interrupt check, a progress bar.
        using after_size = std::function<void(std::size_t done, long long n)>;

        // argument_value_error for a setting out of range (block, repeat, warmup, bytes_per_element, peak).
        static void check(const settings& chosen);
        // argument_type_error for what the caller passed as the kernel (a Launcher: kernel[grid, block];
        // anything else but a Kernel), as make_args (not callable), as sizes (not an iterable of ints);
        // `type` is the Python type's name, `item` the refused size as Python writes it.
        static void check_kernel(bool is_launcher, bool is_kernel, const std::string& type);
        static void check_make_args(bool callable, const std::string& type);
        [[noreturn]] static void refuse_sizes(const std::string& type);
        [[noreturn]] static void refuse_size(const std::string& item, const std::string& type, bool is_float);
        // The ImportError's message when plot=True and matplotlib is missing.
        static const char* matplotlib_missing();
        // argument_value_error for a size below 1 (position: its index) and for no sizes at all.
        static void check_size(long long n, std::size_t position);
        static void check_not_empty(const std::vector<long long>& sizes);
        // argument_type_error when make_args(n) gave `given` values for a kernel of `parameters` (0: any);
        // signature() names the kernel in the message (asked only then).
        static void check_argument_count(long long n, std::size_t given, std::size_t parameters,
                                         const std::function<std::string()>& signature);

        // The peak is the one chosen ("given"), else measure_peak()'s ("measured"); the clock starts after it.
        bench_sweep(std::string kernel, std::vector<long long> sizes, const settings& chosen,
                    const std::function<double()>& measure_peak);

        // Times every size in order; what the callbacks throw ends the sweep and passes through.
        void run(const time_size& time, const after_size& after);

        std::size_t done() const noexcept { return m_done; }
        const std::vector<long long>& sizes() const noexcept { return m_sizes; }
        // The size being timed when the sweep stopped (the last one when it finished).
        long long stopped_at() const { return m_sizes[std::min(m_done, m_sizes.size() - 1)]; }

        // The result, with the elapsed time and, when a session is active, its device's name and
        // theoretical bandwidth.
        bench_result finish(cuda_session& session);

    private:
        std::vector<long long> m_sizes;
        std::optional<double> m_bytes_per_element;
        std::chrono::steady_clock::time_point m_start;
        std::size_t m_done = 0;
        bench_result m_result;
    };
}
