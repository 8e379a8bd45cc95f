#pragma once
// A compiled cell: its source, options, PTX/CUBIN, the signatures of its kernels, and (once a GPU
// operation needs it) the CUmodule loaded into the session.
//
// Ownership: kernels hold their module through std::shared_ptr, so a kernel object from an earlier
// run of a cell keeps working until its last reference goes. The CUmodule is unloaded in the
// destructor, or freed with the context when the session closes; a module from an earlier session
// generation is loaded again from its binary on next use. GIL held for all calls.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

#include "cuda_session.hpp"
#include "kernel_signature.hpp"
#include "nvrtc_compiler.hpp"

namespace xcuda
{
    class cuda_module : public session_resource
    {
    public:
        cuda_module(std::string name, std::string source, compile_options options,
                    std::shared_ptr<const compile_result> compiled, std::vector<kernel_signature> signatures,
                    std::string cache_key);
        ~cuda_module() override;
        cuda_module(const cuda_module&) = delete;
        cuda_module& operator=(const cuda_module&) = delete;

        const std::string& name() const noexcept { return m_name; }
        const std::string& source() const noexcept { return m_source; }
        const compile_options& options() const noexcept { return m_options; }
        const compile_result& compiled() const noexcept { return *m_compiled; }
        const std::vector<kernel_signature>& signatures() const noexcept { return m_signatures; }
        const std::string& cache_key() const noexcept { return m_cache_key; }
        // The header cells this module was compiled with, and whether one has changed since.
        const std::map<std::string, std::string>& headers() const noexcept { return m_headers; }
        void set_headers(std::map<std::string, std::string> headers) { m_headers = std::move(headers); }
        bool stale() const noexcept { return !m_stale_because.empty(); }
        const std::string& stale_because() const noexcept { return m_stale_because; }
        void mark_stale(const std::string& header) { m_stale_because = header; }

        // Where the binary came from: "nvrtc" (compiled for this module), "memory" or "disk" (caches).
        const std::string& origin() const noexcept { return m_origin; }
        void set_origin(std::string origin) { m_origin = std::move(origin); }

        // The symbol the binary exports for a kernel: its own name when extern "C", else the
        // lowered (mangled) name NVRTC gave its name expression.
        std::string symbol_for(const kernel_signature& signature) const;

        // The module compiled for inspection views: an sm_XX target (its own, or sm_NN for compute_NN),
        // with line information and ptxas' resource report. The module's own binary when it already
        // is that; otherwise compiled once (through the compile caches) and kept.
        std::shared_ptr<const compile_result> inspection();

        // Loads the module into the session if needed (making the context current) and returns
        // the function; raises cuda_unavailable_error without a GPU, cuda_error when loading fails.
        CUfunction function(const std::string& symbol);
        bool loaded() const noexcept;
        // Loads the module into the session now (the driver loads each function at its first use).
        void ensure_loaded();
        std::uint64_t load_generation() const noexcept { return m_generation; }

        void release() noexcept override;
        std::string describe() const override;
        const char* kind() const noexcept override { return "module"; }

    private:
        void load();

        std::string m_name;
        std::string m_source;
        compile_options m_options;
        std::shared_ptr<const compile_result> m_compiled;
        std::vector<kernel_signature> m_signatures;
        std::string m_cache_key;
        std::string m_origin = "nvrtc";
        std::map<std::string, std::string> m_headers;
        std::string m_stale_because;

        CUmodule m_module = nullptr;
        std::uint64_t m_generation = 0;
        std::map<std::string, CUfunction> m_functions;
        std::shared_ptr<const compile_result> m_inspection;
    };
}
