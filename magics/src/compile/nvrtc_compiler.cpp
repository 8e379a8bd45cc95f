#include "nvrtc_compiler.hpp"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <sys/stat.h>

#include "diagnostics.hpp"
#include "errors.hpp"
#include "host_code.hpp"
#include "nvrtc_library.hpp"
#include "nvcc_prelude.hpp"
#include "standard_headers.hpp"
#include "include_folders.hpp"
#include "set_aside_rounds.hpp"

namespace xcuda
{
    namespace
    {
        bool is_directory(const std::string& path)
        {
            struct stat st;
            return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
        }

        std::string parent(const std::string& path)
        {
            auto pos = path.find_last_of('/');
            return pos == std::string::npos ? std::string(".") : path.substr(0, pos);
        }

        // NVRTC failures that are not compile errors (out of memory, bad option syntax, ...).
        void check_nvrtc(nvrtcResult result, const char* call)
        {
            if (result != NVRTC_SUCCESS)
            {
                throw nvrtc_error(call, static_cast<int>(result), nvrtc_library::get().nvrtcGetErrorString(result));
            }
        }

        struct program_deleter
        {
            void operator()(nvrtcProgram* program) const
            {
                nvrtc_library::get().nvrtcDestroyProgram(program);
                delete program;
            }
        };
        using program_ptr = std::unique_ptr<nvrtcProgram, program_deleter>;

        std::string program_log(nvrtcProgram program)
        {
                const nvrtc_library& nvrtc = nvrtc_library::get();
            std::size_t size = 0;
            if (nvrtc.nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1)
            {
                return {};
            }
            std::string log(size, '\0');
            nvrtc.nvrtcGetProgramLog(program, log.data());
            log.resize(size - 1);
            while (!log.empty() && (log.back() == '\n' || log.back() == '\0'))
            {
                log.pop_back();
            }
            return log;
        }
    }

    std::vector<std::string> compile_options::to_nvrtc_options() const
    {
        std::vector<std::string> result;
        if (!arch.empty())
        {
            result.push_back("--gpu-architecture=" + arch);
        }
        if (!std.empty())
        {
            result.push_back("--std=" + std);
        }
        for (const auto& define : defines)
        {
            result.push_back("--define-macro=" + define);
        }
        for (const auto& dir : include_dirs)
        {
            result.push_back("--include-path=" + dir);
        }
        if (lineinfo)
        {
            result.push_back("--generate-line-info");
        }
        if (fast_math)
        {
            result.push_back("--use_fast_math");
        }
        if (relocatable)
        {
            result.push_back("--relocatable-device-code=true");
        }
        result.insert(result.end(), extra.begin(), extra.end());
        return result;
    }

    compile_result nvrtc_compiler::compile(const std::string& source, const compile_options& options,
                                           const std::map<std::string, std::string>& headers)
    {
        auto start = std::chrono::steady_clock::now();
        try
        {
            return compile_once(source, options, headers, start);
        }
        catch (const compile_error& refused)
        {
            return compile_setting_aside(source, options, headers, start, refused);
        }
    }

    // Host functions and host variables beside the kernels (host_code.hpp; llm.c's
    // `cublasHandle_t cublas_handle;`, which NVRTC refuses only once the functions before it are gone), in the
    // cell or in the user's own headers (user_headers.hpp): nvcc compiles them for the host; set them aside and
    // compile the rest. NVRTC stops counting errors at its limit, so a long host function (one using the host
    // library, whose names the stand-ins only declare) can hide the refusals of those after it: each compile
    // sets aside what its log refuses, a few rounds at most. An error that names code set aside and is not
    // itself in code set aside next is a kernel using it: NVRTC's first refusal (with its hint to mark the
    // function __device__) is the one that explains it.
    compile_result nvrtc_compiler::compile_setting_aside(const std::string& source, const compile_options& options,
                                                         const std::map<std::string, std::string>& headers,
                                                         std::chrono::steady_clock::time_point start,
                                                         const compile_error& refused)
    {
        std::vector<std::string> dirs = include_folders(options.include_dirs, options.extra);
        set_aside_rounds rounds{source, user_headers(dirs, headers), {}, {}};
        const compile_error* failed = &refused;
        std::unique_ptr<compile_error> last;
        std::vector<diagnostic> mentions;  // errors of the last compile naming code set aside before
        for (int round = 0; round < set_aside_rounds::max_rounds; ++round)
        {
            if (!rounds.set_aside(failed->parsed()))
            {
                break;
            }
            if (!rounds.all_blanked(mentions))
            {
                throw refused;
            }
            try
            {
                compile_result result = compile_once(rounds.cell, options, rounds.headers.headers(), start);
                result.log = rounds.warnings + result.log;
                return result;
            }
            catch (const compile_error& again)
            {
                mentions = rounds.mentioning_set_aside(again.parsed());
                last = std::make_unique<compile_error>(again);
                failed = last.get();
            }
        }
        if (failed == &refused || !mentions.empty())
        {
            throw refused;
        }
        throw compile_error(*failed);
    }

    compile_result nvrtc_compiler::compile_once(const std::string& source, const compile_options& options,
                                                const std::map<std::string, std::string>& headers,
                                                std::chrono::steady_clock::time_point start)
    {
        const nvrtc_library& nvrtc = nvrtc_library::get();

        std::vector<const char*> header_sources;
        std::vector<const char*> header_names;
        for (const auto& [name, text] : headers)
        {
            header_names.push_back(name.c_str());
            header_sources.push_back(text.c_str());
        }
        // The standard headers NVRTC lacks (standard_headers.hpp), unless a header cell or an include
        // folder of this compile has one of that name. NVRTC looks in this array before any include
        // folder, so the stand-ins also come before the toolkit's (its cuda.h declares host functions).
        std::map<std::string, std::string> stand_ins = standard_headers::for_compile(include_folders(options.include_dirs, options.extra), headers);
        // What nvcc's host headers give every .cu file (uint, M_PI, INT_MAX), less the unit's own definitions.
        stand_ins[nvcc_prelude::header_name] = nvcc_prelude::for_unit(source, headers, options.defines, options.extra);
        for (const auto& [name, text] : stand_ins)
        {
            header_names.push_back(name.c_str());
            header_sources.push_back(text.c_str());
        }

        program_ptr program(new nvrtcProgram(nullptr));
        check_nvrtc(nvrtc.nvrtcCreateProgram(program.get(), source.c_str(), diagnostics::program_name,
                                       static_cast<int>(header_names.size()), header_sources.data(),
                                       header_names.data()),
                    "nvrtcCreateProgram");
        for (const auto& expression : options.name_expressions)
        {
            check_nvrtc(nvrtc.nvrtcAddNameExpression(*program, expression.c_str()), "nvrtcAddNameExpression");
        }

        compile_result result;
        result.arch = options.arch;
        result.options = options.to_nvrtc_options();
        std::vector<std::string> all_options = result.options;
        for (const auto& dir : toolkit_include_dirs())
        {
            all_options.push_back("--include-path=" + dir);
        }
        all_options.push_back(nvcc_prelude::option());
        if (options.arch.rfind("sm_", 0) == 0)
        {
            // ptxas runs for sm_XX targets: its verbose report (registers, spills, shared memory) in the
            // log costs nothing and gives kernel.resources without a GPU.
            all_options.push_back("--ptxas-options=-v");
        }
        std::vector<const char*> option_pointers;
        for (const auto& option : all_options)
        {
            option_pointers.push_back(option.c_str());
        }

        nvrtcResult compiled = nvrtc.nvrtcCompileProgram(*program, static_cast<int>(option_pointers.size()),
                                                   option_pointers.data());
        result.log = nvcc_prelude::without_its_redefinitions(program_log(*program));
        if (compiled != NVRTC_SUCCESS)
        {
            if (compiled != NVRTC_ERROR_COMPILATION && compiled != NVRTC_ERROR_INVALID_OPTION)
            {
                check_nvrtc(compiled, "nvrtcCompileProgram");
            }
            std::vector<int> archs = supported_archs();
            throw compile_error(diagnostics::format_compile_error(source, result.log, result.options,
                                                                  nvrtc.nvrtcGetErrorString(compiled), archs, headers),
                                result.log, result.options, diagnostics::parse(source, result.log, archs, headers));
        }

        std::size_t size = 0;
        check_nvrtc(nvrtc.nvrtcGetPTXSize(*program, &size), "nvrtcGetPTXSize");
        result.ptx.resize(size);
        check_nvrtc(nvrtc.nvrtcGetPTX(*program, result.ptx.data()), "nvrtcGetPTX");
        while (!result.ptx.empty() && result.ptx.back() == '\0')
        {
            result.ptx.pop_back();
        }

        if (options.arch.rfind("sm_", 0) == 0)
        {
            check_nvrtc(nvrtc.nvrtcGetCUBINSize(*program, &size), "nvrtcGetCUBINSize");
            result.cubin.resize(size);
            check_nvrtc(nvrtc.nvrtcGetCUBIN(*program, result.cubin.data()), "nvrtcGetCUBIN");
        }

        for (const auto& expression : options.name_expressions)
        {
            const char* lowered = nullptr;
            check_nvrtc(nvrtc.nvrtcGetLoweredName(*program, expression.c_str(), &lowered), "nvrtcGetLoweredName");
            result.lowered_names[expression] = lowered;
        }

        result.milliseconds =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        return result;
    }

    std::pair<int, int> nvrtc_compiler::version()
    {
        int major = 0;
        int minor = 0;
        check_nvrtc(nvrtc_library::get().nvrtcVersion(&major, &minor), "nvrtcVersion");
        return {major, minor};
    }

    std::vector<int> nvrtc_compiler::supported_archs()
    {
        int count = 0;
        check_nvrtc(nvrtc_library::get().nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
        std::vector<int> archs(static_cast<std::size_t>(count));
        check_nvrtc(nvrtc_library::get().nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
        return archs;
    }

    const std::vector<std::string>& nvrtc_compiler::toolkit_include_dirs()
    {
        static const std::vector<std::string> dirs = [] {
            std::vector<std::string> roots;
            for (const char* variable : {"CUDA_HOME", "CUDA_PATH"})
            {
                const char* value = std::getenv(variable);
                if (value && *value)
                {
                    roots.emplace_back(value);
                }
            }
            if (nvrtc_library::available())
            {
                // <toolkit>/lib64/libnvrtc.so.13, <toolkit>/targets/x86_64-linux/lib/libnvrtc.so.13, or
                // the wheel's site-packages/nvidia/cu13/lib/libnvrtc.so.13 (headers in nvidia/cu13/include).
                // NVRTC 12's wheel (nvidia/cuda_nvrtc/include) has nvrtc.h alone, no crt/: the next root
                // with headers, /usr/local/cuda's, is taken.
                std::string lib_dir = parent(nvrtc_library::path());
                roots.push_back(parent(lib_dir));
                roots.push_back(parent(parent(lib_dir)));  // targets/x86_64-linux/lib -> the toolkit
            }
            roots.emplace_back("/usr/local/cuda");
            std::vector<std::string> found;
            for (const auto& root : roots)
            {
                if (is_directory(root + "/include") && is_directory(root + "/include/crt"))
                {
                    found.push_back(root + "/include");
                    if (is_directory(root + "/include/cccl"))
                    {
                        found.push_back(root + "/include/cccl");
                    }
                    break;
                }
            }
            return found;
        }();
        return dirs;
    }
}
