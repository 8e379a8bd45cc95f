#pragma once
// A compiled cell: its source, options, PTX/CUBIN, the signatures of its kernels, and (once a launch
// on a device needs it) a CUmodule loaded on that device.
//
// Several devices: the binary is compiled once per arch (the cell's own, and again through the
// compile caches for a device of another arch) and loaded lazily on each device where one of its
// kernels launches; each load is a session_resource of its device.
//
// Ownership: kernels hold their module through std::shared_ptr, so a kernel object from an earlier
// run of a cell keeps working until its last reference goes. The CUmodules are unloaded in the
// destructor, or freed with their context when the session closes; a load from an earlier session
// generation is made again from the binary on next use.
//
// Threading: loading, function look-ups and the other compiles (inspection, line information, another
// arch) may be asked for from several threads at once (kernels of one module launched on several
// threads): a mutex guards them. The fallback note and the stale mark are set and read with the GIL.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include <cuda.h>

#include "compiler.hpp"
#include "cell_lines.hpp"
#include "cuda_session.hpp"
#include "kernel_signature.hpp"
#include "nvrtc_compiler.hpp"

namespace xcuda
{
    class cuda_module
    {
    public:
        // The session it loads into and the compiler its other binaries come from (inspection, another
        // device's arch, the PTX fallback) must outlive it.
        // recipe: what made `compiled`; every later compile of this module starts from it.
        cuda_module(cuda_session& session, class compiler& compiler, std::string name, compile_recipe recipe,
                    std::shared_ptr<const compile_result> compiled, std::vector<kernel_signature> signatures,
                    std::string cache_key);
        ~cuda_module();
        cuda_module(const cuda_module&) = delete;
        cuda_module& operator=(const cuda_module&) = delete;

        cuda_session& session() const noexcept { return m_session; }
        const std::string& name() const noexcept { return m_name; }
        const compile_recipe& recipe() const noexcept { return m_recipe; }
        const std::string& source() const noexcept { return m_recipe.source; }
        const compile_options& options() const noexcept { return m_recipe.options; }
        const compile_result& compiled() const noexcept { return *m_compiled; }
        const std::vector<kernel_signature>& signatures() const noexcept { return m_signatures; }
        const std::string& cache_key() const noexcept { return m_cache_key; }
        // The header cells this module was compiled with, and whether one has changed since.
        const std::map<std::string, std::string>& headers() const noexcept { return m_recipe.headers; }
        bool stale() const noexcept { return !m_stale_because.empty(); }
        const std::string& stale_because() const noexcept { return m_stale_because; }
        void mark_stale(const std::string& header) { m_stale_because = header; }

        // Where the binary came from: "nvrtc" (compiled for this module), "memory" or "disk" (caches).
        const std::string& origin() const noexcept { return m_origin; }
        void set_origin(std::string origin) { m_origin = std::move(origin); }
        // Where its source sits in the notebook (the %%cuda cell that built it last, In[N], and its header
        // cells), through which every message and view names a line; "the source" for xcuda.compile().
        // A copy under the module's mutex: a launch on another thread reads it for a fault's text.
        cell_lines lines() const;
        void set_lines(cell_lines lines);

        // The symbol the binary exports for a kernel: its own name when extern "C", else the
        // lowered (mangled) name NVRTC gave its name expression.
        std::string symbol_for(const kernel_signature& signature) const;

        // The module compiled for inspection views: an sm_XX target (its own, or sm_NN for compute_NN),
        // with line information and ptxas' resource report. The module's own binary when it already
        // is that; otherwise compiled once (through the compile caches) and kept.
        std::shared_ptr<const compile_result> inspection();

        // The module compiled for device_arch (an sm_XX) with line information: what a replay of one of
        // its launches loads (replay_bundle), so that ncu and compute-sanitizer can name source lines.
        // The module's own binary when it already is that, else compiled once per arch through the
        // compile caches (with the module's header cells) and kept.
        std::shared_ptr<const compile_result> with_line_info(const std::string& device_arch);

        // Loads the module on the current device if needed (making its context current) and returns
        // the function; raises cuda_unavailable_error without a GPU, cuda_error when loading fails.
        CUfunction function(const std::string& symbol);
        // Whether it is loaded on the current device.
        bool loaded() const noexcept;
        // Loads the module on the current device now (the driver loads each function at its first use).
        void ensure_loaded();
        // The devices it is loaded on now.
        std::vector<int> loaded_devices() const;
        // Whether the .entry `symbol` syncs the whole grid (grid_sync_entries below), read from the
        // PTX once per module: a hit of an unchanged cell wraps every kernel again and must not rescan it.
        bool entry_uses_grid_sync(const std::string& symbol);
        // The .entry names of a PTX whose bodies read %envreg1/%envreg2 (what this_grid().sync() compiles to).
        static std::set<std::string> grid_sync_entries(const std::string& ptx);
        // Whether its kernels call printf (their output is then captured at waits).
        bool uses_printf() const noexcept;
        // Milliseconds the driver took for the last load (cuModuleLoadDataEx); negative before any.
        double load_ms() const noexcept { return m_load_ms; }

        // The cell's namespace-scope __constant__/__device__/__managed__ variables, read from the recipe's
        // source on first use (parse_module_variables); the one named `name` (or qualified name), or null.
        const std::vector<module_variable>& variables();
        const module_variable* variable(const std::string& name);
        // A variable's memory on the current device (cuModuleGetGlobal), loading the module there if needed;
        // raises signature_error when the compiled size differs from the declaration's.
        struct global_region
        {
            CUdeviceptr pointer = 0;
            std::size_t bytes = 0;
        };
        global_region global(const module_variable& v);
        // The variable's symbol in the binary (its name as the PTX spells it), for cuModuleGetGlobal.
        std::string symbol_in_binary(const module_variable& v) const;
        // Writes `bytes` (the variable's size) into the variable on every device the module is loaded on
        // (loading it on the current device first), and remembers them: a later load (another device, a
        // new session generation) writes them again. Synchronous.
        void write_global(const module_variable& v, const void* data, std::size_t bytes);
        // The values the host wrote (symbol -> bytes), and the same taken back in a new process (%cuda_recover):
        // remembered only, written at the next load of the module on each device.
        std::map<std::string, std::string> global_values() const;
        void remember_global_values(const std::map<std::string, std::string>& values);
        // Reads the variable on the current device (after the work queued there). Synchronous.
        void read_global(const module_variable& v, void* data, std::size_t bytes);

        std::string describe() const;
        // Set when the module had to be loaded another way than compiled (PTX newer than the driver):
        // says what happened and what to change. The launch path shows it once as a warning.
        const std::string& fallback_note() const noexcept { return m_fallback_note; }
        void clear_fallback_note() { m_fallback_note.clear(); }

    private:
        // The module loaded on one device.
        class device_copy : public session_resource
        {
        public:
            device_copy(const cuda_module& owner, int device) : m_owner(owner), m_device(device) {}
            void release() noexcept override;
            void abandon() noexcept override;
            std::string describe() const override;
            const char* kind() const noexcept override { return "module"; }
            int device() const noexcept override { return m_device; }

            const cuda_module& m_owner;
            int m_device;
            std::uint64_t m_generation = 0;
            CUmodule m_module = nullptr;
            std::map<std::string, CUfunction> m_functions;
            std::map<std::string, global_region> m_globals;  // by symbol
        };
        // cuModuleGetGlobal of v in `loaded`, cached there (m_mutex held).
        global_region global_in(device_copy& loaded, const module_variable& v);

        device_copy& load();
        // This module's recipe compiled with other options, through the memory and disk caches.
        std::shared_ptr<const compile_result> compiled_with(const compile_options& options) const;
        // PTX newer than the driver: compile a CUBIN for the device with NVRTC and load that instead.
        CUresult load_cubin_instead(CUmodule& module, const std::string& device_arch);
        // The binary for a device: the module's own when the device can run it, else compiled for it.
        const compile_result& binary_for(const std::string& device_arch);

        cuda_session& m_session;
        class compiler& m_compiler;
        std::string m_name;
        compile_recipe m_recipe;
        std::shared_ptr<const compile_result> m_compiled;
        std::vector<kernel_signature> m_signatures;
        std::string m_cache_key;
        std::string m_origin = "nvrtc";
        std::string m_stale_because;

        std::vector<std::unique_ptr<device_copy>> m_copies;  // at most one per device
        std::map<std::string, std::shared_ptr<const compile_result>> m_other_arches;
        std::shared_ptr<const compile_result> m_inspection;
        std::map<std::string, std::shared_ptr<const compile_result>> m_line_info;  // by arch
        std::string m_fallback_note;
        double m_load_ms = -1;
        std::optional<std::set<std::string>> m_grid_sync_entries;
        bool m_variables_read = false;
        std::vector<module_variable> m_variables;
        std::map<std::string, std::string> m_global_values;  // symbol -> bytes the host wrote last
        cell_lines m_lines;  // m_mutex held
        mutable std::recursive_mutex m_mutex;  // m_copies, the compiles kept by arch, m_load_ms
    };
}
