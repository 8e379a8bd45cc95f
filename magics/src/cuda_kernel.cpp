#include "cuda_kernel.hpp"

#include <vector>

#include "cuda_driver.hpp"
#include "errors.hpp"

namespace xcuda
{
    cuda_kernel::cuda_kernel(std::shared_ptr<cuda_module> module, kernel_signature signature)
        : m_module(std::move(module))
        , m_signature(std::move(signature))
        , m_plan(m_signature)
    {
        m_symbol = m_module->symbol_for(m_signature);
    }

    void cuda_kernel::prepare()
    {
        cuda_session& session = cuda_session::instance();
        if (m_signature.is_template())
        {
            throw argument_type_error("kernel '" + m_signature.name +
                                      "' is a template: its parameter types are not known until it is "
                                      "instantiated (for example with a name expression 'name<float>')");
        }
        m_function = m_module->function(m_symbol);
        m_generation = session.generation();
        const cuda_driver& driver = cuda_driver::get();
        check(driver.cuFuncGetAttribute(&m_max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, m_function),
              "cuFuncGetAttribute");
        check(driver.cuFuncGetAttribute(&m_registers, CU_FUNC_ATTRIBUTE_NUM_REGS, m_function), "cuFuncGetAttribute");
        int static_shared = 0;
        check(driver.cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, m_function),
              "cuFuncGetAttribute");
        check(driver.cuFuncGetAttribute(&m_max_dynamic_shared, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        m_function),
              "cuFuncGetAttribute");
        if (driver.cuFuncGetParamInfo)
        {
            std::vector<std::size_t> sizes;
            for (std::size_t index = 0;; ++index)
            {
                std::size_t offset = 0;
                std::size_t size = 0;
                CUresult result = driver.cuFuncGetParamInfo(m_function, index, &offset, &size);
                if (result != CUDA_SUCCESS)
                {
                    break;  // CUDA_ERROR_INVALID_VALUE past the last parameter
                }
                sizes.push_back(size);
            }
            m_plan.check_driver_sizes(sizes);
        }
    }

    CUfunction cuda_kernel::function()
    {
        cuda_session& session = cuda_session::instance();
        if (!m_function || m_generation != session.generation() || !session.active())
        {
            prepare();
        }
        return m_function;
    }

    void cuda_kernel::launch(const launch_dims& dims, CUstream stream)
    {
        CUfunction f = function();
        cuda_session& session = cuda_session::instance();
        session.make_current();
        launch_plan::validate(dims, session.properties(), m_max_threads, m_max_dynamic_shared, m_signature.name);
        check(cuda_driver::get().cuLaunchKernel(f, dims.grid[0], dims.grid[1], dims.grid[2], dims.block[0],
                                                dims.block[1], dims.block[2], dims.shared_mem, stream,
                                                m_plan.argument_pointers(), nullptr),
              "cuLaunchKernel");
    }

    int cuda_kernel::max_threads_per_block()
    {
        function();
        return m_max_threads;
    }

    int cuda_kernel::registers()
    {
        function();
        return m_registers;
    }
}
