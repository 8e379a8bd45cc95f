#include "compiler.hpp"

#include <cstdlib>

#include "include_folders.hpp"
#include "kernel_signature.hpp"
#include "user_headers.hpp"

namespace xcuda
{
    compiler::compiler()
        : compiler(disk_cache::from_environment())
    {
    }

    compiler::compiler(disk_cache disk)
        : m_disk(std::move(disk))
        , m_nvrtc(m_disk.enabled() ? m_disk.directory() : std::string())
    {
        const char* setting = std::getenv("XCUDA_COMPILE_PROCESS");
        m_isolated = !(setting && std::string(setting) == "0");
    }

    void compiler::set_worker_program(const std::string& program)
    {
        m_worker = program.empty() ? nullptr : std::make_unique<compile_worker>(program);
    }

    void compiler::start_worker() noexcept
    {
        if (!m_isolated || !m_worker)
        {
            return;
        }
        try
        {
            nvrtc_compiler::version();  // NVRTC found here first: the worker is given its path
            m_worker->start();
        }
        catch (const std::exception&)
        {
            // No NVRTC, or the worker cannot start: the first compile says why.
        }
    }

    compiler::process_info compiler::where_compiles() const
    {
        if (!m_isolated)
        {
            return {"in-process", "", -1};
        }
        if (!m_worker)
        {
            return {"fork", "", -1};
        }
        return {"worker", m_worker->program(), static_cast<long>(m_worker->pid()), m_worker->starts()};
    }

    compiler::output compiler::compile(const compile_recipe& recipe)
    {
        const std::string& source = recipe.source;
        const compile_options& options = recipe.options;
        const std::map<std::string, std::string>& headers = recipe.headers;
        check_compile_inputs(source, headers, options.defines);  // a NUL byte, sizes: before any cache or NVRTC
        output result;
        result.key = key_for(recipe);
        result.origin = "memory";
        result.binary = m_memory.find(result.key);
        if (result.binary)
        {
            return result;
        }
        result.origin = "disk";
        result.binary = m_disk.load(result.key);
        if (!result.binary)
        {
            result.origin = "nvrtc";
            result.binary = std::make_shared<const compile_result>(
                !m_isolated ? nvrtc_compiler::compile(source, options, headers)
                : m_worker  ? (nvrtc_compiler::version(), m_worker->compile(source, options, headers, m_interrupt_check))
                            : compile_process::compile(source, options, headers, m_interrupt_check));
            m_disk.store(result.key, *result.binary);
        }
        m_memory.insert(result.key, result.binary);
        return result;
    }

    std::string compiler::key_for(const compile_recipe& recipe)
    {
        // The user's headers NVRTC reads from disk by quoted include (llmc/utils.h beside the notebook, a -I
        // folder's) are inputs too: their text is keyed beside the header cells', under names no cell can have.
        std::map<std::string, std::string> inputs = recipe.headers;
        user_headers files(include_folders(recipe.options.include_dirs, recipe.options.extra), recipe.headers);
        for (auto& [name, text] : files.reachable(recipe.source))
        {
            inputs["\n file " + name] = std::move(text);
        }
        return compile_cache::make_key(m_nvrtc.version(), recipe.source, recipe.options, inputs);
    }
}
