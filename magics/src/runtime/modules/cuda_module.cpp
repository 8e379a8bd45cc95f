#include "cuda_module.hpp"

#include <algorithm>
#include <chrono>

#include "cell_builder.hpp"
#include "cuda_driver.hpp"
#include "errors.hpp"
#include "nvrtc_library.hpp"

namespace xcuda
{
    cuda_module::cuda_module(cuda_session& session, class compiler& compiler, std::string name, compile_recipe recipe,
                             std::shared_ptr<const compile_result> compiled, std::vector<kernel_signature> signatures,
                             std::string cache_key)
        : m_session(session)
        , m_compiler(compiler)
        , m_name(std::move(name))
        , m_recipe(std::move(recipe))
        , m_compiled(std::move(compiled))
        , m_signatures(std::move(signatures))
        , m_cache_key(std::move(cache_key))
    {
    }

    cuda_module::~cuda_module()
    {
        cuda_session& session = m_session;
        for (auto& loaded : m_copies)
        {
            session.resources().remove(loaded.get());
            // A destructor cannot report; a module not unloaded goes with its context at close.
            if (loaded->m_module && session.make_current_if_alive(loaded->m_device, loaded->m_generation))
            {
                cuda_driver::get().cuModuleUnload(loaded->m_module);
            }
            if (loaded->m_module && uses_printf())
            {
                session.waits().note_printf_module(-1);
            }
        }
    }

    std::string cuda_module::symbol_for(const kernel_signature& signature) const
    {
        if (signature.extern_c)
        {
            return signature.name;
        }
        auto instance = m_compiled->lowered_names.find(signature.name);  // an instantiation: "saxpy<float>"
        if (instance != m_compiled->lowered_names.end())
        {
            return instance->second;
        }
        instance = m_compiled->lowered_names.find(signature.qualified_name);  // template void f<4>(...); in the source
        if (instance != m_compiled->lowered_names.end())
        {
            return instance->second;
        }
        auto it = m_compiled->lowered_names.find("&" + signature.qualified_name);
        return it == m_compiled->lowered_names.end() ? signature.name : it->second;
    }

    std::shared_ptr<const compile_result> cuda_module::compiled_with(const compile_options& options) const
    {
        return m_compiler.compile(m_recipe.with_options(options)).binary;
    }

    std::shared_ptr<const compile_result> cuda_module::inspection()
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        if (m_inspection)
        {
            return m_inspection;
        }
        compile_options options = m_recipe.options;
        if (options.arch.rfind("compute_", 0) == 0)
        {
            options.arch = "sm_" + options.arch.substr(8);
        }
        options.lineinfo = true;
        if (options.arch == m_recipe.options.arch && m_recipe.options.lineinfo)
        {
            m_inspection = m_compiled;
            return m_inspection;
        }
        m_inspection = compiled_with(options);
        return m_inspection;
    }

    std::shared_ptr<const compile_result> cuda_module::with_line_info(const std::string& device_arch)
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        if (m_recipe.options.lineinfo && m_compiled->arch == device_arch && !m_compiled->cubin.empty())
        {
            return m_compiled;
        }
        auto found = m_line_info.find(device_arch);
        if (found != m_line_info.end())
        {
            return found->second;
        }
        compile_options options = m_recipe.options;
        options.arch = device_arch;
        options.lineinfo = true;
        std::shared_ptr<const compile_result> compiled = compiled_with(options);
        m_line_info.emplace(device_arch, compiled);
        return compiled;
    }

    bool cuda_module::loaded() const noexcept
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        cuda_session& session = m_session;
        int ordinal = session.device_ordinal();
        for (const auto& loaded : m_copies)
        {
            if (loaded->m_device == ordinal)
            {
                return loaded->m_module && session.alive(ordinal, loaded->m_generation);
            }
        }
        return false;
    }

    std::vector<int> cuda_module::loaded_devices() const
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        cuda_session& session = m_session;
        std::vector<int> devices;
        for (const auto& loaded : m_copies)
        {
            if (loaded->m_module && session.alive(loaded->m_device, loaded->m_generation))
            {
                devices.push_back(loaded->m_device);
            }
        }
        return devices;
    }

    bool cuda_module::uses_printf() const noexcept
    {
        return m_compiled->ptx.find("vprintf") != std::string::npos;
    }

    const compile_result& cuda_module::binary_for(const std::string& device_arch)
    {
        cuda_session& session = m_session;
        // A device of another arch than the cell was compiled for gets its own compile (once per arch).
        if (session.can_run(m_compiled->arch))
        {
            return *m_compiled;
        }
        auto found = m_other_arches.find(device_arch);
        if (found != m_other_arches.end())
        {
            return *found->second;
        }
        compile_options options = m_recipe.options;
        options.arch = device_arch;
        std::shared_ptr<const compile_result> compiled = compiled_with(options);
        m_other_arches.emplace(device_arch, compiled);
        return *compiled;
    }

    cuda_module::device_copy& cuda_module::load()
    {
        cuda_session& session = m_session;
        session.make_current();
        int ordinal = session.device_ordinal();
        device_copy* slot = nullptr;
        for (auto& loaded : m_copies)
        {
            if (loaded->m_device == ordinal)
            {
                slot = loaded.get();
            }
        }
        if (!slot)
        {
            m_copies.emplace_back(new device_copy(*this, ordinal));
            slot = m_copies.back().get();
        }
        if (slot->m_module && session.alive(ordinal, slot->m_generation))
        {
            return *slot;
        }
        if (slot->m_module)
        {
            // Loaded in a session that has since closed: the handle died with its context.
            slot->m_module = nullptr;
            slot->m_functions.clear();
            slot->m_globals.clear();
            if (uses_printf())
            {
                session.waits().note_printf_module(-1);
            }
        }
        std::string device_arch = session.properties().arch();
        // The PTX simulator runs PTX only, with line information so that its errors name the cell line
        // (docs/simulator.md).
        const bool simulated = cuda_driver::get().simulated();
        const compile_result& binary = simulated ? *with_line_info(device_arch) : binary_for(device_arch);
        const std::string& image = binary.cubin.empty() || simulated ? binary.ptx : binary.cubin;
        CUmodule module = nullptr;
        auto started = std::chrono::steady_clock::now();
        CUresult result = cuda_driver::get().cuModuleLoadDataEx(&module, image.c_str(), 0, nullptr, nullptr);
        m_load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
        if ((result == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || result == CUDA_ERROR_INVALID_PTX) && binary.cubin.empty())
        {
            // PTX newer than this driver can compile (an older driver says "unsupported", or "invalid"
            // for directives it does not know): NVRTC's own ptxas makes a CUBIN that needs no JIT.
            result = load_cubin_instead(module, device_arch);
        }
        if (result == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || result == CUDA_ERROR_NO_BINARY_FOR_GPU ||
            result == CUDA_ERROR_INVALID_PTX || result == CUDA_ERROR_INVALID_IMAGE)
        {
            if (!nvrtc_library::driver_note().empty())
            {
                // Known since NVRTC was chosen: the one line saying what to install, not the load error.
                throw cuda_error("cuModuleLoadData", result, cuda_error_name(result),
                                 "module '" + m_name + "': " + nvrtc_library::driver_note());
            }
            int driver = session.driver_version();
            auto [major, minor] = nvrtc_compiler::version();
            throw cuda_error("cuModuleLoadData", result, cuda_error_name(result),
                             cuda_error_description(result) + " (module '" + m_name + "' was compiled for " +
                                 binary.arch + " by NVRTC " + std::to_string(major) + "." + std::to_string(minor) +
                                 "; device " + std::to_string(ordinal) + " is " + device_arch +
                                 " and its driver supports CUDA " + std::to_string(driver / 1000) + "." +
                                 std::to_string(driver % 1000 / 10) + "; recompile the cell without --arch, or with --arch=" +
                                 device_arch + ", or update the driver to one for CUDA " + std::to_string(major) + "." +
                                 std::to_string(minor) + " or newer)");
        }
        check(result, "cuModuleLoadData");
        slot->m_module = module;
        slot->m_generation = session.generation();
        slot->m_globals.clear();
        session.resources().add(slot);
        // What the host wrote into its variables before this load (another device, an earlier generation).
        for (const auto& [symbol, bytes] : m_global_values)
        {
            for (const module_variable& v : variables())
            {
                if (v.symbol == symbol)
                {
                    global_region region = global_in(*slot, v);
                    check(cuda_driver::get().cuMemcpyHtoD(region.pointer, bytes.data(), bytes.size()), "cuMemcpyHtoD");
                }
            }
        }
        if (uses_printf())
        {
            session.waits().note_printf_module(+1);
        }
        return *slot;
    }

    CUresult cuda_module::load_cubin_instead(CUmodule& module, const std::string& device_arch)
    {
        compile_options options = m_recipe.options;
        options.arch = device_arch;
        std::shared_ptr<const compile_result> compiled = compiled_with(options);
        CUresult result = cuda_driver::get().cuModuleLoadDataEx(&module, compiled->cubin.c_str(), 0, nullptr, nullptr);
        if (result == CUDA_SUCCESS)
        {
            m_other_arches[device_arch] = compiled;
            m_fallback_note = "the driver cannot compile PTX from NVRTC " + std::to_string(nvrtc_compiler::version().first) +
                              "." + std::to_string(nvrtc_compiler::version().second) + " (" + m_compiled->arch +
                              "), so module '" + m_name + "' was loaded as a CUBIN compiled by NVRTC for " +
                              device_arch + "; pass --arch=" + device_arch + " to compile it that way directly";
        }
        return result;
    }

    void cuda_module::ensure_loaded()
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        load();
    }

    CUfunction cuda_module::function(const std::string& symbol)
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        device_copy& loaded = load();
        auto it = loaded.m_functions.find(symbol);
        if (it != loaded.m_functions.end())
        {
            return it->second;
        }
        CUfunction function = nullptr;
        CUresult result = cuda_driver::get().cuModuleGetFunction(&function, loaded.m_module, symbol.c_str());
        if (result == CUDA_ERROR_NOT_FOUND)
        {
            throw cuda_error("cuModuleGetFunction", result, cuda_error_name(result),
                             "kernel '" + symbol + "' is not in module '" + m_name +
                                 "'; declare it extern \"C\", or instantiate templates with --instantiate");
        }
        check(result, "cuModuleGetFunction");
        loaded.m_functions.emplace(symbol, function);
        return function;
    }

    std::set<std::string> cuda_module::grid_sync_entries(const std::string& ptx)
    {
        // One pass over the PTX: each .entry's body runs from the brace after its parameters to the
        // brace that closes it; those that read %envreg1/%envreg2 are what this_grid().sync() compiles to.
        std::set<std::string> entries;
        const std::string marker = ".entry ";
        std::size_t at = 0;
        while ((at = ptx.find(marker, at)) != std::string::npos)
        {
            std::size_t name_begin = at + marker.size();
            std::size_t name_end = ptx.find_first_of("( \t\r\n", name_begin);
            std::size_t open = name_end == std::string::npos ? std::string::npos : ptx.find('{', name_end);
            if (open == std::string::npos)
            {
                break;
            }
            int depth = 0;
            std::size_t end = open;
            for (; end < ptx.size(); ++end)
            {
                if (ptx[end] == '{')
                    ++depth;
                else if (ptx[end] == '}' && --depth == 0)
                    break;
            }
            auto body_has = [&](const std::string& text) {  // inside [open, end) only
                return std::search(ptx.begin() + open, ptx.begin() + end, text.begin(), text.end()) != ptx.begin() + end;
            };
            if (body_has("%envreg1") || body_has("%envreg2"))
            {
                entries.insert(ptx.substr(name_begin, name_end - name_begin));
            }
            at = end;
        }
        return entries;
    }

    bool cuda_module::entry_uses_grid_sync(const std::string& symbol)
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        if (!m_grid_sync_entries)
        {
            m_grid_sync_entries = grid_sync_entries(m_compiled->ptx);
        }
        return m_grid_sync_entries->count(symbol) != 0;
    }

    const std::vector<module_variable>& cuda_module::variables()
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        if (!m_variables_read)
        {
            std::pair<int, int> nvrtc_version{0, 0};
            try
            {
                nvrtc_version = nvrtc_compiler::version();
            }
            catch (const std::exception&)
            {
            }
            m_variables = parse_module_variables(m_recipe.source, parse_context_of(m_recipe, nvrtc_version));
            m_variables_read = true;
        }
        return m_variables;
    }

    const module_variable* cuda_module::variable(const std::string& name)
    {
        for (const module_variable& v : variables())
        {
            if (v.name == name || v.qualified_name == name)
            {
                return &v;
            }
        }
        return nullptr;
    }

    namespace
    {
        // The name the binary gives v: its symbol when the PTX declares it; else, for a static variable in a
        // namespace (mangled with a unit-specific _INTERNAL_ prefix: _ZN28_INTERNAL_..._cell2ns3nsxE), the
        // .global/.const name that ends with v's own nested name.
        std::string symbol_in_ptx(const std::string& ptx, const module_variable& v)
        {
            if (v.symbol.rfind("_ZN", 0) != 0)
            {
                return v.symbol;
            }
            std::string nested = v.symbol.substr(3);  // "2ns3nsxE"
            std::string found;
            std::size_t line = 0;
            while (line < ptx.size())
            {
                std::size_t end = ptx.find('\n', line);
                if (end == std::string::npos)
                    end = ptx.size();
                std::string text = ptx.substr(line, end - line);
                line = end + 1;
                if (text.find(".global") == std::string::npos && text.find(".const") == std::string::npos)
                    continue;
                // `.global .align 4 .u32 name[3] = {...};`: the word before the first [ ; or =.
                std::size_t stop = text.find_first_of("[;=");
                if (stop == std::string::npos)
                    continue;
                while (stop > 0 && (text[stop - 1] == ' ' || text[stop - 1] == '\t'))
                    --stop;
                std::size_t start = text.find_last_of(" \t", stop == 0 ? 0 : stop - 1);
                start = start == std::string::npos ? 0 : start + 1;
                std::string name = text.substr(start, stop - start);
                if (name == v.symbol)
                {
                    return name;
                }
                if (name.size() > nested.size() && name.rfind("_ZN", 0) == 0 &&
                    name.compare(name.size() - nested.size(), nested.size(), nested) == 0 &&
                    name.find("_INTERNAL_") != std::string::npos)
                {
                    found = name;
                }
            }
            return found.empty() ? v.symbol : found;
        }
    }

    cuda_module::global_region cuda_module::global_in(device_copy& loaded, const module_variable& v)
    {
        auto found = loaded.m_globals.find(v.symbol);
        if (found != loaded.m_globals.end())
        {
            return found->second;
        }
        const cuda_driver& driver = cuda_driver::get();
        if (!driver.cuModuleGetGlobal)
        {
            throw cuda_unavailable_error("this NVIDIA driver has no cuModuleGetGlobal, which module variables need");
        }
        global_region region;
        std::string symbol = symbol_in_ptx(m_compiled->ptx, v);
        CUresult result = driver.cuModuleGetGlobal(&region.pointer, &region.bytes, loaded.m_module, symbol.c_str());
        if (result == CUDA_ERROR_NOT_FOUND)
        {
            throw cuda_error("cuModuleGetGlobal", result, cuda_error_name(result),
                             v.space + " variable '" + v.qualified_name + "' (symbol " + v.symbol + ") is not in module '" +
                                 m_name + "': the compiler dropped it (a static variable no kernel uses?) or named "
                                 "it otherwise");
        }
        check(result, "cuModuleGetGlobal");
        if (v.size() != 0 && region.bytes != v.size())
        {
            throw signature_error(v.line, v.space + " variable '" + v.qualified_name + "' is " +
                                              std::to_string(v.size()) + " bytes as the signature reader reads its "
                                              "declaration, but " + std::to_string(region.bytes) +
                                              " bytes in the compiled module; its type is not the one the compiler saw");
        }
        loaded.m_globals.emplace(v.symbol, region);
        return region;
    }

    std::string cuda_module::symbol_in_binary(const module_variable& v) const
    {
        return symbol_in_ptx(m_compiled->ptx, v);
    }

    cuda_module::global_region cuda_module::global(const module_variable& v)
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        return global_in(load(), v);
    }

    void cuda_module::write_global(const module_variable& v, const void* data, std::size_t bytes)
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        cuda_session& session = m_session;
        int current = session.device_ordinal();
        global_region here = global_in(load(), v);
        if (bytes != here.bytes)
        {
            throw argument_value_error(v.space + " variable '" + v.qualified_name + "' is " +
                                       std::to_string(here.bytes) + " bytes; " + std::to_string(bytes) +
                                       " bytes were given");
        }
        m_global_values[v.symbol] = std::string(static_cast<const char*>(data), bytes);
        for (auto& loaded : m_copies)
        {
            if (!loaded->m_module || !session.alive(loaded->m_device, loaded->m_generation))
            {
                continue;
            }
            session.make_current(loaded->m_device);
            global_region region = global_in(*loaded, v);
            check(cuda_driver::get().cuMemcpyHtoD(region.pointer, data, bytes), "cuMemcpyHtoD");
        }
        session.make_current(current);
    }

    std::map<std::string, std::string> cuda_module::global_values() const
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        return m_global_values;
    }

    void cuda_module::remember_global_values(const std::map<std::string, std::string>& values)
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        for (const auto& [symbol, bytes] : values)
        {
            m_global_values[symbol] = bytes;
        }
    }

    void cuda_module::read_global(const module_variable& v, void* data, std::size_t bytes)
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        global_region region = global_in(load(), v);
        if (bytes != region.bytes)
        {
            throw argument_value_error(v.space + " variable '" + v.qualified_name + "' is " +
                                       std::to_string(region.bytes) + " bytes; a buffer of " + std::to_string(bytes) +
                                       " bytes was given to read it into");
        }
        // After every kernel queued on the device (on any stream) that may write it.
        check(cuda_driver::get().cuCtxSynchronize(), "cuCtxSynchronize");
        check(cuda_driver::get().cuMemcpyDtoH(data, region.pointer, bytes), "cuMemcpyDtoH");
    }

    void cuda_module::device_copy::release() noexcept
    {
        if (m_module)
        {
            cuda_driver::get().cuModuleUnload(m_module);
            if (m_owner.uses_printf())
            {
                m_owner.m_session.waits().note_printf_module(-1);
            }
        }
        m_module = nullptr;
        m_functions.clear();
        m_globals.clear();
    }

    void cuda_module::device_copy::abandon() noexcept
    {
        if (m_module && m_owner.uses_printf())
        {
            m_owner.m_session.waits().note_printf_module(-1);
        }
        m_module = nullptr;
        m_functions.clear();
        m_globals.clear();
    }

    std::string cuda_module::device_copy::describe() const
    {
        return m_owner.describe() + " on device " + std::to_string(m_device);
    }

    cell_lines cuda_module::lines() const
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        return m_lines;
    }

    void cuda_module::set_lines(cell_lines lines)
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        m_lines = std::move(lines);
    }

    std::string cuda_module::describe() const
    {
        std::string text = "module " + m_name + " [";
        for (std::size_t i = 0; i < m_signatures.size(); ++i)
        {
            text += (i ? ", " : "") + m_signatures[i].name;
        }
        return text + "]";
    }
}
