#include "launch_configuration.hpp"

#include "errors.hpp"
#include "launch_attributes.hpp"

namespace xcuda
{
    namespace
    {
        const char* const axes[3] = {"x", "y", "z"};
    }

    unsigned launch_configuration::dimension(long long value, const char* what, int axis)
    {
        if (value < 1)
        {
            throw argument_value_error(std::string(what) + " " + axes[axis] + " must be at least 1, got " +
                                       std::to_string(value));
        }
        if (value > 0xffffffffLL)
        {
            throw argument_value_error(std::string(what) + " " + axes[axis] + " = " + std::to_string(value) +
                                       " is larger than any device allows");
        }
        return static_cast<unsigned>(value);
    }

    void launch_configuration::dimension_not_int(const char* what, int axis, const std::string& type)
    {
        throw argument_type_error(std::string(what) + " " + axes[axis] + " must be an int, got " + type);
    }

    void launch_configuration::dimension_out_of_range(const char* what, int axis, const std::string& text,
                                                      bool negative)
    {
        if (negative)
        {
            throw argument_value_error(std::string(what) + " " + axes[axis] + " must be at least 1, got " + text);
        }
        throw argument_value_error(std::string(what) + " " + axes[axis] + " = " + text +
                                   " is larger than any device allows");
    }

    void launch_configuration::check_dimension_count(const char* what, std::size_t count)
    {
        if (count < 1 || count > 3)
        {
            throw argument_value_error(std::string(what) + " must be an int or a tuple of 1 to 3 ints, got " +
                                       std::to_string(count) + " values");
        }
    }

    void launch_configuration::key_not_tuple(const std::string& key_repr)
    {
        throw argument_type_error("launch as kernel[grid, block](*args), or kernel[grid, block, stream, "
                                  "shared_mem](*args); got kernel[" + key_repr + "]");
    }

    void launch_configuration::check_key_size(std::size_t size)
    {
        if (size < 2 || size > 4)
        {
            throw argument_type_error("kernel[...] takes 2 to 4 values (grid, block, stream, shared_mem), got " +
                                      std::to_string(size));
        }
    }

    unsigned launch_configuration::shared_mem(long long bytes)
    {
        if (bytes < 0 || bytes > 0xffffffffLL)
        {
            throw argument_value_error("shared_mem must be between 0 and 2**32-1 bytes, got " + std::to_string(bytes));
        }
        return static_cast<unsigned>(bytes);
    }

    void launch_configuration::shared_mem_not_int(const std::string& type)
    {
        throw argument_type_error("shared_mem must be an int (bytes), got " + type);
    }

    void launch_configuration::shared_mem_out_of_range(const std::string& text)
    {
        throw argument_value_error("shared_mem must be between 0 and 2**32-1 bytes, got " + text);
    }

    long long launch_configuration::grid_for(long long n, long long block)
    {
        if (n < 1 || block < 1)
        {
            throw argument_value_error("grid_for needs n >= 1 and block >= 1");
        }
        return (n + block - 1) / block;
    }

    long long launch_configuration::forall_grid(long long n, long long block)
    {
        if (n < 1 || block < 1)
        {
            throw argument_value_error("forall needs n >= 1 and block >= 1, got n=" + std::to_string(n) +
                                       ", block=" + std::to_string(block));
        }
        return (n + block - 1) / block;
    }

    void launch_configuration::check_timing(int repeat, int warmup)
    {
        if (repeat < 1 || warmup < 0)
        {
            throw argument_value_error("repeat must be at least 1 and warmup at least 0");
        }
    }

    void launch_configuration::unknown_timing_keyword(const std::string& key)
    {
        throw argument_type_error("time() got an unexpected keyword '" + key + "' (it takes repeat, warmup and nbytes)");
    }

    std::string launch_configuration::launcher_text(const std::string& kernel, const launch_dims& dims)
    {
        std::string text = "<xcuda.Launcher " + kernel + "[grid=" + dims_text(dims.grid) + ", block=" +
                           dims_text(dims.block);
        if (dims.shared_mem)
        {
            text += ", shared_mem=" + std::to_string(dims.shared_mem);
        }
        return text + launch_attributes::text(dims) + "]>";
    }
}
