#include "cuda_module.hpp"

#include "compile_cache.hpp"
#include "cuda_driver.hpp"
#include "disk_cache.hpp"
#include "errors.hpp"

namespace xcuda
{
    cuda_module::cuda_module(std::string name, std::string source, compile_options options,
                             std::shared_ptr<const compile_result> compiled,
                             std::vector<kernel_signature> signatures, std::string cache_key)
        : m_name(std::move(name))
        , m_source(std::move(source))
        , m_options(std::move(options))
        , m_compiled(std::move(compiled))
        , m_signatures(std::move(signatures))
        , m_cache_key(std::move(cache_key))
    {
    }

    cuda_module::~cuda_module()
    {
        cuda_session& session = cuda_session::instance();
        if (m_module)
        {
            session.unregister_resource(this);
            if (session.active() && session.generation() == m_generation)
            {
                try
                {
                    session.make_current();
                    cuda_driver::get().cuModuleUnload(m_module);
                }
                catch (const std::exception&)
                {
                    // A destructor cannot report; the module goes with the context at close.
                }
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
        auto it = m_compiled->lowered_names.find("&" + signature.qualified_name);
        return it == m_compiled->lowered_names.end() ? signature.name : it->second;
    }

    std::shared_ptr<const compile_result> cuda_module::inspection()
    {
        if (m_inspection)
        {
            return m_inspection;
        }
        compile_options options = m_options;
        if (options.arch.rfind("compute_", 0) == 0)
        {
            options.arch = "sm_" + options.arch.substr(8);
        }
        options.lineinfo = true;
        if (options.arch == m_options.arch && m_options.lineinfo)
        {
            m_inspection = m_compiled;
            return m_inspection;
        }
        std::string key = compile_cache::make_key(m_source, options, {});
        m_inspection = compile_cache::instance().find(key);
        if (!m_inspection)
        {
            m_inspection = disk_cache::instance().load(key);
        }
        if (!m_inspection)
        {
            m_inspection = std::make_shared<const compile_result>(nvrtc_compiler::compile(m_source, options));
            disk_cache::instance().store(key, *m_inspection);
        }
        compile_cache::instance().insert(key, m_inspection);
        return m_inspection;
    }

    bool cuda_module::loaded() const noexcept
    {
        return m_module != nullptr && cuda_session::instance().generation() == m_generation &&
               cuda_session::instance().active();
    }

    void cuda_module::load()
    {
        cuda_session& session = cuda_session::instance();
        session.make_current();
        if (m_module && m_generation != session.generation())
        {
            // Loaded in a session that has since closed: the handle died with its context.
            m_module = nullptr;
            m_functions.clear();
        }
        if (m_module)
        {
            return;
        }
        const std::string& image = m_compiled->cubin.empty() ? m_compiled->ptx : m_compiled->cubin;
        CUmodule module = nullptr;
        CUresult result = cuda_driver::get().cuModuleLoadDataEx(&module, image.c_str(), 0, nullptr, nullptr);
        if (result == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || result == CUDA_ERROR_NO_BINARY_FOR_GPU ||
            result == CUDA_ERROR_INVALID_PTX)
        {
            throw cuda_error("cuModuleLoadData", result, cuda_error_name(result),
                             cuda_error_description(result) + " (module '" + m_name + "' was compiled for " +
                                 m_compiled->arch + ", the GPU is " + session.properties().arch() +
                                 "; recompile the cell without --arch, or with --arch=" +
                                 session.properties().arch() + ")");
        }
        check(result, "cuModuleLoadData");
        m_module = module;
        m_generation = session.generation();
        session.register_resource(this);
    }

    void cuda_module::ensure_loaded()
    {
        if (!loaded())
        {
            load();
        }
    }

    CUfunction cuda_module::function(const std::string& symbol)
    {
        if (!loaded())
        {
            load();
        }
        auto it = m_functions.find(symbol);
        if (it != m_functions.end())
        {
            return it->second;
        }
        CUfunction function = nullptr;
        CUresult result = cuda_driver::get().cuModuleGetFunction(&function, m_module, symbol.c_str());
        if (result == CUDA_ERROR_NOT_FOUND)
        {
            throw cuda_error("cuModuleGetFunction", result, cuda_error_name(result),
                             "kernel '" + symbol + "' is not in module '" + m_name +
                                 "'; declare it extern \"C\", or instantiate templates with --instantiate");
        }
        check(result, "cuModuleGetFunction");
        m_functions.emplace(symbol, function);
        return function;
    }

    void cuda_module::release() noexcept
    {
        if (m_module)
        {
            cuda_driver::get().cuModuleUnload(m_module);
        }
        m_module = nullptr;
        m_functions.clear();
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
