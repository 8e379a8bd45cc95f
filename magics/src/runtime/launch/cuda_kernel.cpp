#include "cuda_kernel.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "argument_block.hpp"
#include "cuda_driver.hpp"
#include "errors.hpp"
#include "function_attribute.hpp"
#include "launch_attributes.hpp"

namespace xcuda
{
    namespace
    {
        // XCUDA_LAUNCH_ARGUMENTS' value when it named neither way; empty when it was fine, or once a call
        // chose the way (written before main, then only cleared through the flag).
        std::string& passing_problem()
        {
            static std::string problem;
            return problem;
        }
        std::atomic<bool> g_passing_problem{false};
    }

    argument_passing cuda_kernel::initial_passing() noexcept
    {
        const char* text = std::getenv("XCUDA_LAUNCH_ARGUMENTS");
        if (!text || !*text)
        {
            return argument_passing::pointers;
        }
        try
        {
            return parse_passing(text);
        }
        catch (const std::exception& e)
        {
            passing_problem() = std::string("XCUDA_LAUNCH_ARGUMENTS: ") + e.what() +
                                "; unset it or set it to one of them and start again, or call "
                                "xcuda.launch_options(arguments='pointers')";
            g_passing_problem.store(true);
            return argument_passing::pointers;
        }
    }

    void cuda_kernel::set_passing(argument_passing mode) noexcept
    {
        s_passing.store(mode, std::memory_order_relaxed);
        g_passing_problem.store(false);
    }

    const char* cuda_kernel::passing_name(argument_passing mode) noexcept
    {
        return mode == argument_passing::buffer ? "buffer" : "pointers";
    }

    argument_passing cuda_kernel::parse_passing(const std::string& text)
    {
        for (argument_passing mode : {argument_passing::pointers, argument_passing::buffer})
        {
            if (text == passing_name(mode))
            {
                return mode;
            }
        }
        throw usage_error("'" + text.substr(0, 40) + (text.size() > 40 ? "...'" : "'") +
                          " is not a way of passing launch arguments: 'pointers' (one pointer per parameter) "
                          "or 'buffer' (the parameters packed in one buffer)");
    }

    void cuda_kernel::check_passing_setting()
    {
        if (g_passing_problem.load())
        {
            throw usage_error(passing_problem());
        }
    }

    cuda_kernel::cuda_kernel(std::shared_ptr<cuda_module> module, kernel_signature signature)
        : m_module(std::move(module))
        , m_signature(std::move(signature))
        , m_launch_name(m_signature.name)
    {
        m_symbol = m_module->symbol_for(m_signature);
        m_plans.push_back(std::make_unique<const launch_plan>(m_signature));
        m_plan.store(m_plans.back().get(), std::memory_order_release);
        m_grid_sync = m_module->entry_uses_grid_sync(m_symbol);
        m_refused = m_signature.is_template() ||
                    std::any_of(m_signature.parameters.begin(), m_signature.parameters.end(),
                                [](const kernel_parameter& p) { return !p.refusal.empty(); });
    }

    long long cuda_kernel::max_cooperative_blocks(unsigned threads, unsigned shared)
    {
        per_device d = prepared();
        if (shared > static_cast<unsigned>(d.max_dynamic_shared))
        {
            d = with_dynamic_shared(d, shared);
        }
        int per_sm = 0;
        check(cuda_driver::get().cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, d.function, static_cast<int>(threads),
                                                                             shared),
              "cuOccupancyMaxActiveBlocksPerMultiprocessor");
        return static_cast<long long>(per_sm) * m_module->session().properties().multiprocessors;
    }

    void cuda_kernel::check_cooperative_grid(const per_device& d, const launch_dims& dims)
    {
        unsigned threads = dims.block[0] * dims.block[1] * dims.block[2];
        int per_sm = 0;
        check(cuda_driver::get().cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, d.function, static_cast<int>(threads),
                                                                             dims.shared_mem),
              "cuOccupancyMaxActiveBlocksPerMultiprocessor");
        const device_properties& device = m_module->session().properties();
        long long most = static_cast<long long>(per_sm) * device.multiprocessors;
        long long blocks = static_cast<long long>(dims.grid[0]) * dims.grid[1] * dims.grid[2];
        if (blocks > most)
        {
            throw argument_value_error(
                "cooperative launch of kernel '" + m_signature.name + "' with a grid of " + std::to_string(blocks) +
                " blocks: at most " + std::to_string(most) + " blocks of " + std::to_string(threads) + " threads" +
                (dims.shared_mem ? " and " + std::to_string(dims.shared_mem) + " bytes of dynamic shared memory" : std::string()) +
                " can be resident at once on " + device.name + " (" + std::to_string(per_sm) + " per SM x " +
                std::to_string(device.multiprocessors) + " SMs), and a grid-wide sync needs every block resident; "
                "launch at most " + std::to_string(most) + " blocks (kernel.max_cooperative_blocks(block) tells it) and " +
                "cover the rest with a grid-stride loop");
        }
    }

    void cuda_kernel::refuse_if_template() const
    {
        if (!m_refused)
        {
            return;  // the launch path: decided once, the signature never changes
        }
        if (!m_signature.is_template())
        {
            for (std::size_t i = 0; i < m_signature.parameters.size(); ++i)
            {
                const kernel_parameter& p = m_signature.parameters[i];
                if (!p.refusal.empty())
                {
                    throw argument_type_error("kernel '" + m_signature.name + "', parameter " + std::to_string(i) +
                                              (p.name.empty() ? "" : " '" + p.name + "'") + " (" + p.type +
                                              "): xcuda will not pass it, " + p.refusal);
                }
            }
            return;
        }
        const std::string& name = m_signature.name;
        throw argument_type_error("kernel '" + name + "' is a template: its parameter types are not known until it "
                                  "is instantiated. Instantiate the types you launch it with: %%cuda --instantiate '" +
                                  name + "<float>' (xcuda.compile(..., instantiate=['" + name + "<float>'])), then "
                                  "launch module['" + name + "<float>']");
    }

    void cuda_kernel::prepare_if_possible() noexcept
    {
        if (!m_module->session().active() || m_signature.is_template())
        {
            return;
        }
        try
        {
            prepared();
        }
        catch (...)
        {
            // The launch prepares again and reports the error there.
        }
    }

    void cuda_kernel::check_parameter_sizes(CUfunction function)
    {
        const cuda_driver& driver = cuda_driver::get();
        if (!driver.cuFuncGetParamInfo)
        {
            return;
        }
        // The count from the PTX, then the sizes of that many parameters: asking past the last one
        // would fail, and a failing call is an error in compute-sanitizer's report of the user's
        // program. A count that differs from the declaration is the parser's mistake; the plan
        // says so (a list of that many sizes makes with_driver_sizes name both counts).
        const launch_plan& current = *m_plan.load(std::memory_order_acquire);
        int in_binary = launch_plan::ptx_parameter_count(m_module->compiled().ptx, m_symbol);
        std::size_t declared = current.arity();
        if (in_binary >= 0 && static_cast<std::size_t>(in_binary) != declared)
        {
            current.with_driver_sizes(std::vector<std::size_t>(static_cast<std::size_t>(in_binary), 0));
        }
        std::vector<std::size_t> sizes;
        std::vector<std::size_t> offsets;
        for (std::size_t index = 0; index < declared; ++index)
        {
            std::size_t offset = 0;
            std::size_t size = 0;
            if (driver.cuFuncGetParamInfo(function, index, &offset, &size) != CUDA_SUCCESS)
            {
                if (index == 0)
                {
                    // The driver tells nothing of this function's parameters (the count, if it differs,
                    // was checked against the PTX above): nothing to check, and launches pass pointers.
                    return;
                }
                break;  // fewer parameters than declared: with_driver_sizes says so
            }
            sizes.push_back(size);
            offsets.push_back(offset);
        }
        std::unique_ptr<launch_plan> refined = current.with_driver_sizes(sizes);
        if (refined)
        {
            m_plans.push_back(std::move(refined));
            m_plan.store(m_plans.back().get(), std::memory_order_release);
        }
        // The same layout on every device and generation (it is the PTX's): made once, made again only if
        // the driver ever says otherwise. None when the offsets do not fit the sizes: launches pass pointers.
        const launch_plan* packed = m_packed.load(std::memory_order_acquire);
        if (!packed || !packed->has_offsets(offsets))
        {
            if (std::unique_ptr<launch_plan> laid_out = m_plan.load(std::memory_order_acquire)->packed_at(offsets))
            {
                m_plans.push_back(std::move(laid_out));
                m_packed.store(m_plans.back().get(), std::memory_order_release);
            }
        }
    }

    cuda_kernel::per_device cuda_kernel::prepared()
    {
        return prepared_entry();
    }

    const cuda_kernel::per_device& cuda_kernel::prepare_entry()
    {
        cuda_session& session = m_module->session();
        std::size_t ordinal = static_cast<std::size_t>(std::max(0, session.device_ordinal()));
        std::uint64_t generation = session.generation();
        std::lock_guard<std::mutex> lock(m_mutex);
        if (ordinal < m_devices.size())
        {
            const per_device& d = m_devices[ordinal];
            if (d.function && d.generation == generation && d.generation != 0)
            {
                return publish(d);
            }
        }
        refuse_if_template();
        check_passing_setting();
        CUfunction function = m_module->function(m_symbol);  // creates the context if needed
        per_device d;
        d.ordinal = static_cast<int>(ordinal);
        d.function = function;
        d.generation = session.generation();
        const cuda_driver& driver = cuda_driver::get();
        for (const auto& [attribute, value] : m_attributes)
        {
            if (!driver.cuFuncSetAttribute)
            {
                throw cuda_unavailable_error("this NVIDIA driver has no cuFuncSetAttribute");
            }
            check(driver.cuFuncSetAttribute(function, attribute, value), "cuFuncSetAttribute");
        }
        check(driver.cuFuncGetAttribute(&d.static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function),
              "cuFuncGetAttribute");
        check(driver.cuFuncGetAttribute(&d.max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function),
              "cuFuncGetAttribute");
        check(driver.cuFuncGetAttribute(&d.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, function), "cuFuncGetAttribute");
        check(driver.cuFuncGetAttribute(&d.max_dynamic_shared, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        function),
              "cuFuncGetAttribute");
        check_parameter_sizes(function);
        if (m_devices.size() <= ordinal)
        {
            m_devices.resize(ordinal + 1);
        }
        m_devices[ordinal] = d;
        return publish(d);
    }

    const cuda_kernel::per_device& cuda_kernel::publish(const per_device& entry)
    {
        m_published.push_back(std::make_unique<const per_device>(entry));
        m_last.store(m_published.back().get(), std::memory_order_release);
        return *m_published.back();
    }

    CUfunction cuda_kernel::function()
    {
        return prepared().function;
    }

    void cuda_kernel::check_dynamic_shared_limit(long long bytes, int static_shared) const
    {
        const device_properties& device = m_module->session().properties();
        int optin = device.max_shared_per_block_optin > 0 ? device.max_shared_per_block_optin
                                                           : device.max_shared_per_block;
        int limit = optin - static_shared;
        if (bytes > limit)
        {
            throw argument_value_error(
                "dynamic shared memory of " + std::to_string(bytes) + " bytes exceeds the " + std::to_string(limit) +
                " bytes kernel '" + m_signature.name + "' can opt in to on " + device.name + " (the device's opt-in " +
                "maximum of " + std::to_string(optin) + " bytes per block" +
                (static_shared > 0 ? ", less the kernel's " + std::to_string(static_shared) + " bytes of static shared memory"
                                   : std::string()) +
                "); ask for less, or move part of it to global memory");
        }
    }

    cuda_kernel::per_device cuda_kernel::with_dynamic_shared(const per_device& entry, unsigned bytes)
    {
        check_dynamic_shared_limit(bytes, entry.static_shared);
        std::lock_guard<std::mutex> lock(m_mutex);
        per_device d = entry;
        std::size_t ordinal = static_cast<std::size_t>(std::max(0, d.ordinal));
        if (ordinal < m_devices.size() && m_devices[ordinal].function == d.function &&
            m_devices[ordinal].generation == d.generation && m_devices[ordinal].max_dynamic_shared >= static_cast<int>(bytes))
        {
            return m_devices[ordinal];  // another thread raised it meanwhile
        }
        const cuda_driver& driver = cuda_driver::get();
        if (!driver.cuFuncSetAttribute)
        {
            throw cuda_unavailable_error("this NVIDIA driver has no cuFuncSetAttribute, which dynamic shared memory "
                                         "above " + std::to_string(d.max_dynamic_shared) + " bytes needs");
        }
        // The size asked for, not the maximum: a larger limit than the launches need can cost L1 cache.
        check(driver.cuFuncSetAttribute(d.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        static_cast<int>(bytes)),
              "cuFuncSetAttribute");
        d.max_dynamic_shared = static_cast<int>(bytes);
        if (ordinal < m_devices.size() && m_devices[ordinal].function == d.function)
        {
            m_devices[ordinal] = d;
        }
        publish(d);
        return d;
    }

    void cuda_kernel::set_attribute(const std::string& name, int value)
    {
        const function_attribute& attribute = function_attribute::named(name, true);
        if (attribute.value == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && value < 0)
        {
            throw argument_value_error("max_dynamic_shared_size_bytes must be >= 0, got " + std::to_string(value));
        }
        if (attribute.value == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT && (value < -1 || value > 100))
        {
            throw argument_value_error("preferred_shared_memory_carveout is a percentage of the shared memory/L1 "
                                       "split (0..100, or -1 for no preference), got " + std::to_string(value));
        }
        if (attribute.value == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && m_module->session().active())
        {
            check_dynamic_shared_limit(value, prepared().static_shared);  // before the driver refuses it
        }
        std::vector<std::pair<CUfunction_attribute, int>> before;
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            before = m_attributes;
            auto it = std::find_if(m_attributes.begin(), m_attributes.end(),
                                   [&](const auto& entry) { return entry.first == attribute.value; });
            if (it != m_attributes.end())
            {
                m_attributes.erase(it);
            }
            m_attributes.emplace_back(attribute.value, value);
            // Every device prepares again (and applies the attributes) at its next use.
            for (per_device& d : m_devices)
            {
                d.function = nullptr;
            }
            m_last.store(nullptr, std::memory_order_release);
        }
        if (!m_module->session().active())
        {
            return;
        }
        try
        {
            prepared();
        }
        catch (...)
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_attributes = before;
            for (per_device& d : m_devices)
            {
                d.function = nullptr;
            }
            m_last.store(nullptr, std::memory_order_release);
            throw;
        }
    }

    int cuda_kernel::get_attribute(const std::string& name)
    {
        const function_attribute& attribute = function_attribute::named(name, false);
        per_device d = prepared();
        int value = 0;
        check(cuda_driver::get().cuFuncGetAttribute(&value, attribute.value, d.function), "cuFuncGetAttribute");
        return value;
    }

    std::vector<std::pair<std::string, int>> cuda_kernel::attributes_set() const
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        std::vector<std::pair<std::string, int>> result;
        for (const auto& [which, value] : m_attributes)
        {
            for (const function_attribute& attribute : function_attribute::all())
            {
                if (attribute.value == which)
                {
                    result.emplace_back(attribute.name, value);
                }
            }
        }
        return result;
    }

    void cuda_kernel::launch(const launch_dims& dims, CUstream stream, const argument_block& arguments,
                             std::atomic<const void*>* validated)
    {
        try
        {
            launch_unlocated(dims, stream, arguments, validated);
        }
        catch (const cuda_error& e)
        {
            // The simulator's report names the PTX's .loc line and .file path (the kernel's working folder
            // and "cell", which does not exist): said once more in the cell's own lines. A GPU's fault
            // carries no line; it comes back as it is.
            if (!e.marks().empty() || !cuda_driver::available() || !cuda_driver::get().simulated())
            {
                throw;
            }
            cell_lines lines = m_module->lines();
            cell_lines::place first;
            std::string message = lines.located_report(e.what(), &first);
            if (message == e.what())
            {
                throw;
            }
            std::vector<cuda_error::editor_mark> marks;
            if (first.own && first.line > 0 && lines.execution_count() > 0)
            {
                marks.push_back({lines.execution_count(), first.line, message.substr(0, message.find('\n'))});
            }
            throw e.relocated(message, std::move(marks));
        }
    }

    void cuda_kernel::launch_unlocated(const launch_dims& dims, CUstream stream, const argument_block& arguments,
                                       std::atomic<const void*>* validated)
    {
        // The published entry itself (immutable, kept as long as the kernel): no copy on the hot path.
        const per_device* entry = &prepared_entry();
        cuda_session& session = m_module->session();
        session.make_current();
        per_device raised;
        if (dims.shared_mem > static_cast<unsigned>(entry->max_dynamic_shared))
        {
            raised = with_dynamic_shared(*entry, dims.shared_mem);
            entry = &raised;
        }
        const per_device& d = *entry;
        // dims against this device and function: once per published entry for a caller's unchanging dims (the
        // entry is immutable and names its device and context generation, so the limits cannot differ).
        if (validated == nullptr || entry == &raised || validated->load(std::memory_order_acquire) != entry)
        {
            launch_plan::validate(dims, session.properties(), d.max_threads, d.max_dynamic_shared, m_signature.name);
            if (validated != nullptr && entry != &raised)
            {
                validated->store(entry, std::memory_order_release);
            }
        }
        if (dims.has_attributes())
        {
            launch_with_attributes(d.function, dims, stream, arguments);
            return;
        }
        if (cooperative())
        {
            const cuda_driver& driver = cuda_driver::get();
            if (!driver.cuLaunchCooperativeKernel)
            {
                throw cuda_unavailable_error("kernel '" + m_signature.name + "' needs a cooperative launch (" +
                                             (m_grid_sync ? "it syncs the whole grid" : "kernel.cooperative is True") +
                                             "), and this NVIDIA driver has no cuLaunchCooperativeKernel");
            }
            check_cooperative_grid(d, dims);
            check(driver.cuLaunchCooperativeKernel(d.function, dims.grid[0], dims.grid[1], dims.grid[2], dims.block[0],
                                                   dims.block[1], dims.block[2], dims.shared_mem, stream, arguments.pointers()),
                  "cuLaunchCooperativeKernel");
            session.record_launch(m_launch_name, dims.grid.data(), dims.block.data(), dims.shared_mem, stream);
            return;
        }
        // A packed block goes whole (CU_LAUNCH_PARAM_BUFFER_POINTER), any other as one pointer per slot.
        std::size_t bytes = arguments.bytes();
        bool whole = arguments.plan().packed() && bytes > 0;
        void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, arguments.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes,
                         CU_LAUNCH_PARAM_END};
        check(cuda_driver::get().cuLaunchKernel(d.function, dims.grid[0], dims.grid[1], dims.grid[2], dims.block[0],
                                                dims.block[1], dims.block[2], dims.shared_mem, stream,
                                                whole ? nullptr : arguments.pointers(), whole ? extra : nullptr),
              "cuLaunchKernel");
        session.record_launch(m_launch_name, dims.grid.data(), dims.block.data(), dims.shared_mem, stream);
    }

    void cuda_kernel::launch_with_attributes(CUfunction function, const launch_dims& dims, CUstream stream,
                                             const argument_block& arguments)
    {
        cuda_session& session = m_module->session();
        std::array<unsigned, 3> required = launch_attributes::required_cluster(function);
        launch_attributes::check(dims, session.properties(), required, m_signature.name);
        launch_attributes::launch(function, dims, stream, cooperative(), required, arguments, m_signature.name);
        session.record_launch(m_launch_name, dims.grid.data(), dims.block.data(), dims.shared_mem, stream);
    }

    int cuda_kernel::max_active_clusters(const launch_dims& dims)
    {
        per_device d = prepared();
        cuda_session& session = m_module->session();
        session.make_current();
        std::array<unsigned, 3> required = launch_attributes::required_cluster(d.function);
        // The grid of one cluster: the occupancy does not depend on it, and the driver wants a whole one.
        launch_dims one = dims;
        one.grid = required[0] ? required : dims.cluster[0] ? dims.cluster : dims.grid;
        launch_attributes::check(one, session.properties(), required, m_signature.name);
        return launch_attributes::max_active_clusters(d.function, one, required, m_signature.name);
    }

    CUDA_KERNEL_NODE_PARAMS cuda_kernel::node_params(const launch_dims& dims, void** arguments)
    {
        per_device d = prepared();
        cuda_session& session = m_module->session();
        session.make_current();
        if (dims.shared_mem > static_cast<unsigned>(d.max_dynamic_shared))
        {
            d = with_dynamic_shared(d, dims.shared_mem);
        }
        launch_plan::validate(dims, session.properties(), d.max_threads, d.max_dynamic_shared, m_signature.name);
        if (dims.has_attributes())
        {
            // A graph node keeps the attributes it was captured with; a new grid must still hold whole clusters.
            launch_attributes::check(dims, session.properties(), launch_attributes::required_cluster(d.function),
                                     m_signature.name);
        }
        CUDA_KERNEL_NODE_PARAMS params{};
        params.func = d.function;
        launch_attributes::set_dimensions(params, dims);
        params.kernelParams = arguments;
        return params;
    }

    int cuda_kernel::max_threads_per_block()
    {
        return prepared().max_threads;
    }

    int cuda_kernel::registers()
    {
        return prepared().registers;
    }
}

namespace xcuda
{
    resource_usage cuda_kernel::ptxas_resources()
    {
        std::shared_ptr<const compile_result> compiled = m_module->inspection();
        auto all = resource_usage::parse_ptxas_log(compiled->log);
        auto it = all.find(m_symbol);
        if (it == all.end())
        {
            throw tool_error("ptxas reported no resources for kernel '" + m_signature.name + "' (" + m_symbol +
                                     ") in its " + compiled->arch + " compile");
        }
        resource_usage usage = it->second;
        usage.arch = compiled->arch;
        return usage;
    }

    resource_usage cuda_kernel::resources()
    {
        if (!m_module->session().try_ensure())
        {
            return ptxas_resources();
        }
        CUfunction f = function();
        const cuda_driver& driver = cuda_driver::get();
        auto attribute = [&](CUfunction_attribute which) {
            int value = 0;
            check(driver.cuFuncGetAttribute(&value, which, f), "cuFuncGetAttribute");
            return value;
        };
        resource_usage usage;
        usage.source = "driver";
        usage.arch = m_module->session().properties().arch();
        usage.registers = attribute(CU_FUNC_ATTRIBUTE_NUM_REGS);
        usage.stack_frame = attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
        usage.static_shared = attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
        usage.constant = attribute(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
        usage.max_threads_per_block = attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
        // The driver does not report spills; the module's own ptxas report does when it has one.
        auto reported = resource_usage::parse_ptxas_log(m_module->compiled().log);
        auto it = reported.find(m_symbol);
        if (it != reported.end())
        {
            usage.spill_stores = it->second.spill_stores;
            usage.spill_loads = it->second.spill_loads;
            usage.barriers = it->second.barriers;
        }
        return usage;
    }

    occupancy_report cuda_kernel::occupancy(int block, int dynamic_shared)
    {
        if (block < 1 || dynamic_shared < 0)
        {
            throw argument_value_error("occupancy needs block >= 1 and shared_mem >= 0");
        }
        per_device prepared_here = prepared();
        if (dynamic_shared > prepared_here.max_dynamic_shared)
        {
            prepared_here = with_dynamic_shared(prepared_here, static_cast<unsigned>(dynamic_shared));
        }
        CUfunction f = prepared_here.function;
        cuda_session& session = m_module->session();
        const device_properties& p = session.properties();
        if (block > prepared_here.max_threads)
        {
            throw argument_value_error("block of " + std::to_string(block) + " threads exceeds the " +
                                       std::to_string(prepared_here.max_threads) + " that kernel '" + m_signature.name +
                                       "' can launch with");
        }
        const cuda_driver& driver = cuda_driver::get();
        occupancy_report report;
        report.block = block;
        report.dynamic_shared = dynamic_shared;
        check(driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(&report.active_blocks_per_sm, f, block,
                                                                 static_cast<std::size_t>(dynamic_shared)),
              "cuOccupancyMaxActiveBlocksPerMultiprocessor");
        int warps_per_block = (block + p.warp_size - 1) / p.warp_size;
        report.max_warps_per_sm = p.max_threads_per_sm / p.warp_size;
        report.active_warps_per_sm = report.active_blocks_per_sm * warps_per_block;
        report.occupancy = report.max_warps_per_sm ? static_cast<double>(report.active_warps_per_sm) /
                                                         report.max_warps_per_sm
                                                   : 0.0;
        check(driver.cuOccupancyMaxPotentialBlockSize(&report.suggested_min_grid, &report.suggested_block, f, nullptr,
                                                      static_cast<std::size_t>(dynamic_shared), 0),
              "cuOccupancyMaxPotentialBlockSize");

        // Which resource stops more blocks from fitting: each limit in blocks per SM, the smallest wins.
        // (An estimate of the hardware's allocation rules; the driver's count above is exact.)
        const int unlimited = 1 << 30;
        int by_threads = report.max_warps_per_sm / warps_per_block;
        int by_blocks = p.max_blocks_per_sm;
        int regs = registers();
        int by_registers = unlimited;
        if (regs > 0)
        {
            int regs_per_warp = (regs * p.warp_size + 255) / 256 * 256;
            by_registers = (p.max_registers_per_sm / regs_per_warp) / warps_per_block;
        }
        int static_shared = 0;
        check(driver.cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f), "cuFuncGetAttribute");
        int by_shared = unlimited;
        if (static_shared + dynamic_shared > 0)
        {
            by_shared = p.max_shared_per_sm / (static_shared + dynamic_shared + p.reserved_shared_per_block);
        }
        std::pair<int, const char*> limits[] = {{by_threads, "threads per SM"},
                                                {by_blocks, "blocks per SM"},
                                                {by_registers, "registers"},
                                                {by_shared, "shared memory"}};
        int smallest = unlimited;
        for (const auto& limit : limits)
        {
            smallest = std::min(smallest, limit.first);
        }
        for (const auto& limit : limits)
        {
            if (limit.first == smallest)
            {
                report.limiter += (report.limiter.empty() ? "" : " and ") + std::string(limit.second);
            }
        }
        return report;
    }
}
