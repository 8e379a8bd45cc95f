#include "bench_sweep.hpp"

#include <cmath>

#include "errors.hpp"
#include "text.hpp"

namespace xcuda
{
    void bench_sweep::check(const settings& chosen)
    {
        if (chosen.block < 1)
        {
            throw argument_value_error("block must be at least 1, got " + std::to_string(chosen.block));
        }
        if (chosen.repeat < 1 || chosen.warmup < 0)
        {
            throw argument_value_error("repeat must be at least 1 and warmup at least 0");
        }
        if (chosen.bytes_per_element && !(*chosen.bytes_per_element > 0))
        {
            throw argument_value_error("bytes_per_element must be positive, got " + chosen.bytes_per_element_written);
        }
        if (chosen.peak && !(*chosen.peak > 0))
        {
            throw argument_value_error("peak must be a positive bandwidth in GB/s, got " + chosen.peak_written);
        }
    }

    void bench_sweep::check_kernel(bool is_launcher, bool is_kernel, const std::string& type)
    {
        if (is_launcher)
        {
            throw argument_type_error("bench takes the kernel itself, not kernel[grid, block]: the grid follows each "
                                      "size as ceil(n / block); pass block= for the block size");
        }
        if (!is_kernel)
        {
            throw argument_type_error("bench needs an xcuda.Kernel (a __global__ function of a %%cuda cell), got " + type);
        }
    }

    void bench_sweep::check_make_args(bool callable, const std::string& type)
    {
        if (!callable)
        {
            throw argument_type_error("make_args must be a function of the size n that returns the kernel's arguments, "
                                      "e.g. lambda n: (a, x, y, out, n); got " + type);
        }
    }

    void bench_sweep::refuse_sizes(const std::string& type)
    {
        throw argument_type_error("sizes must be an iterable of ints (a list, a range, a numpy array), got " + type);
    }

    void bench_sweep::refuse_size(const std::string& item, const std::string& type, bool is_float)
    {
        throw argument_type_error("sizes must be ints, got " + item + " (" + type + ")" +
                                  (is_float ? ": write int(...) or 2**k" : ""));
    }

    const char* bench_sweep::matplotlib_missing()
    {
        return "bench(plot=True) needs matplotlib (Debian: apt-get install python3-matplotlib); "
               "pass plot=False (%cuda_bench --no-plot) for the table alone";
    }

    void bench_sweep::check_size(long long n, std::size_t position)
    {
        if (n < 1)
        {
            throw argument_value_error("every size must be at least 1, got " + std::to_string(n) + " at position " +
                                       std::to_string(position));
        }
    }

    void bench_sweep::check_not_empty(const std::vector<long long>& sizes)
    {
        if (sizes.empty())
        {
            throw argument_value_error("sizes is empty: give the problem sizes to sweep, e.g. [2**k for k in range(10, 27)]");
        }
    }

    void bench_sweep::check_argument_count(long long n, std::size_t given, std::size_t parameters,
                                           const std::function<std::string()>& signature)
    {
        if (parameters && given != parameters)
        {
            throw argument_type_error("make_args(" + std::to_string(n) + ") returned " + std::to_string(given) + " value" +
                                      (given == 1 ? "" : "s") + "; kernel " + signature() + " takes " +
                                      std::to_string(parameters) + " argument" + (parameters == 1 ? "" : "s"));
        }
    }

    bench_sweep::bench_sweep(std::string kernel, std::vector<long long> sizes, const settings& chosen,
                             const std::function<double()>& measure_peak)
        : m_sizes(std::move(sizes)), m_bytes_per_element(chosen.bytes_per_element)
    {
        m_result.kernel = std::move(kernel);
        m_result.block = chosen.block;
        m_result.repeat = chosen.repeat;
        m_result.warmup = chosen.warmup;
        m_result.show_plot = chosen.plot;
        m_result.peak_gbs = chosen.peak ? *chosen.peak : measure_peak();
        m_result.peak_source = chosen.peak ? "given" : "measured";
        m_start = std::chrono::steady_clock::now();
    }

    void bench_sweep::run(const time_size& time, const after_size& after)
    {
        long long block = m_result.block;
        for (long long n : m_sizes)
        {
            long long grid = (n + block - 1) / block;
            std::optional<long long> nbytes;
            if (m_bytes_per_element)
            {
                nbytes = std::llround(*m_bytes_per_element * static_cast<double>(n));
            }
            timing timed = time(n, grid, nbytes);
            if (!timed.nbytes)
            {
                throw argument_value_error("the bytes " + m_result.kernel + " moves are not known (none of its arguments "
                                           "is an array): pass bytes_per_element= (%cuda_bench --bytes-per-element)");
            }
            double moved = *timed.nbytes;
            double median = timed.median_ms;
            m_result.sizes.push_back(n);
            m_result.grids.push_back(grid);
            m_result.nbytes.push_back(static_cast<long long>(moved));
            m_result.median_ms.push_back(median);
            m_result.bandwidth_gbs.push_back(median > 0 ? moved / (median * 1e-3) / 1e9 : std::nan(""));
            ++m_done;
            after(m_done, n);
        }
    }

    bench_result bench_sweep::finish(cuda_session& session)
    {
        m_result.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
        if (session.active())
        {
            m_result.device = session.properties().name;
            double peak = session.properties().theoretical_bandwidth_gbs();
            if (peak > 0)
            {
                m_result.theoretical_gbs = peak;
            }
        }
        return std::move(m_result);
    }
}
