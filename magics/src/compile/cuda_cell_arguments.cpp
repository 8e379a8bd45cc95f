#include "cuda_cell_arguments.hpp"

#include <algorithm>
#include <cctype>

#include "errors.hpp"

namespace xcuda
{
    namespace
    {
        bool is_identifier(const std::string& text)
        {
            if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0])))
            {
                return false;
            }
            return std::all_of(text.begin(), text.end(),
                               [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
        }

        bool valid_arch(const std::string& arch)
        {
            for (const char* prefix : {"sm_", "compute_", "lto_"})
            {
                std::string p(prefix);
                if (arch.rfind(p, 0) == 0 && arch.size() > p.size())
                {
                    for (std::size_t i = p.size(); i < arch.size(); ++i)
                    {
                        char c = arch[i];
                        if (!std::isdigit(static_cast<unsigned char>(c)) && !(i + 1 == arch.size() && (c == 'a' || c == 'f')))
                        {
                            return false;
                        }
                    }
                    return true;
                }
            }
            return false;
        }

        // NVRTC 13's options (the CUDA 13.0 NVRTC guide, "Supported Compile Options"), both spellings.
        const char* const nvrtc_options[] = {
            "--gpu-architecture", "-arch", "--device-c", "-dc", "--device-w", "-dw", "--relocatable-device-code",
            "-rdc", "--extensible-whole-program", "-ewp", "--device-debug", "-G", "--generate-line-info", "-lineinfo",
            "--dopt", "-dopt", "--Ofast-compile", "-Ofc", "--ptxas-options", "-Xptxas", "--maxrregcount",
            "-maxrregcount", "--ftz", "-ftz", "--prec-sqrt", "-prec-sqrt", "--prec-div", "-prec-div", "--fmad",
            "-fmad", "--use_fast_math", "-use_fast_math", "--extra-device-vectorization", "-extra-device-vectorization",
            "--modify-stack-limit", "-modify-stack-limit", "--dlink-time-opt", "-dlto", "--gen-opt-lto", "-gen-opt-lto",
            "--optix-ir", "-optix-ir", "--jump-table-density", "-jtd", "--device-stack-protector",
            "-device-stack-protector", "--define-macro", "-D", "--undefine-macro", "-U", "--include-path", "-I",
            "--pre-include", "-include", "--no-source-include", "-no-source-include", "--std", "-std",
            "--builtin-move-forward", "-builtin-move-forward", "--builtin-initializer-list",
            "-builtin-initializer-list", "--disable-warnings", "-w", "--restrict", "-restrict",
            "--device-as-default-execution-space", "-default-device", "--device-int128", "-device-int128",
            "--optimization-info", "-opt-info", "--display-error-number", "-err-no", "--no-display-error-number",
            "-no-err-no", "--diag-error", "-diag-error", "--diag-suppress", "-diag-suppress", "--diag-warn",
            "-diag-warn", "--brief-diagnostics", "-brief-diag", "--time", "-time", "--split-compile",
            "-split-compile", "--fdevice-syntax-only", "-fdevice-syntax-only", "--minimal", "-minimal",
            "--fdevice-time-trace", "-fdevice-time-trace", "--pch", "-pch", "--create-pch", "-create-pch",
            "--use-pch", "-use-pch", "--pch-dir", "-pch-dir", "--pch-verbose", "-pch-verbose", "--pch-messages",
            "-pch-messages", "--instantiate-templates-in-pch", "-instantiate-templates-in-pch", "--frandom-seed",
            "-frandom-seed"};
    }

    bool cuda_cell_arguments::is_nvrtc_option(const std::string& word)
    {
        std::string stem = word.substr(0, word.find('='));
        return std::find_if(std::begin(nvrtc_options), std::end(nvrtc_options),
                            [&](const char* name) { return stem == name; }) != std::end(nvrtc_options);
    }

    const magic_arguments& cuda_cell_arguments::declaration()
    {
        static const magic_arguments declared = [] {
            magic_arguments a("%%cuda", "[-- NVRTC options]", R"(Compile the cell's CUDA C++ with NVRTC and make every __global__ function a
Python kernel object, bound in the namespace under its own name.

    %%cuda
    extern "C" __global__ void saxpy(float a, const float* x, const float* y,
                                     float* out, size_t n)
    { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
      if (i < n) out[i] = a * x[i] + y[i]; }

then, in a Python cell:  saxpy[grid, block](2.0, x, y, out, n))");
            a.add({{"--name"}, "NAME", "bind a module object holding the kernels to NAME\n"
                                       "(NAME.saxpy, NAME['saxpy']) instead of binding each kernel"})
                .add({{"--arch", "-arch"}, "ARCH", "target: sm_XX (CUBIN, plus PTX) or compute_XX (PTX only).\n"
                                                   "Default: the current GPU's sm_XX, or compute_75 without a GPU"})
                .add({{"-D"}, "NAME[=VALUE]", "define a macro", true, true})
                .add({{"-U"}, "NAME", "undefine a macro (after the -D options, as NVRTC reads them)", true, true})
                .add({{"-I"}, "DIR", "add an include folder", true, true})
                .add({{"--std", "-std"}, "STD", "C++ standard: c++17 (NVRTC's default), c++20, ..."})
                .add({{"--lineinfo", "-lineinfo"}, "", "keep source line information (for profilers and PTX views)"})
                .add({{"--fast-math", "--use_fast_math", "-use_fast_math"}, "", "fast, less precise float math"})
                .add({{"--instantiate"}, "EXPR", "instantiate a template kernel, e.g. --instantiate 'saxpy<float>';\n"
                                                 "reach it as module['saxpy<float>'] (with --name) or\n"
                                                 "kernel.module['saxpy<float>'], typed from its arguments",
                      true})
                .add({{"--ptx"}, "", "show the generated PTX below the cell (highlighted)"})
                .add({{"--sass"}, "", "show the SASS (machine code) for the GPU's sm_XX, or sm_NN\n"
                                      "for compute_NN; needs nvdisasm or cuobjdump"})
                .trailing_as(magic_arguments::trailing::none,
                             "options start with '-', and the CUDA source goes in the cell body below the %%cuda line")
                .pass_unknown(&cuda_cell_arguments::is_nvrtc_option, "NVRTC")
                .epilog(R"(NVRTC's own options (NVRTC 13) pass through by name, e.g. -maxrregcount=32 or
--ftz=true; everything after a bare '--' goes to NVRTC as written.

Re-running a cell replaces its kernels: the names are rebound to new kernel
objects. Kernel objects kept from an earlier run stay usable: each one keeps
its own module alive until its last reference goes.
After an sm_XX compile, one line per kernel shows its registers, spills, stack,
shared and constant memory (ptxas' report). kernel.resources, kernel.lines(),
kernel.occupancy(block) and xcuda.compare(a, b) show more.
Kernels must be extern "C" or plain C++ functions (found through NVRTC name
expressions); template kernels launch once instantiated with --instantiate.
A compile error raises xcuda.CompileError with NVRTC's log, the cell's own
line numbers and the options used.)");
            return a;
        }();
        return declared;
    }

    const std::string& cuda_cell_arguments::usage()
    {
        static const std::string text = declaration().usage();
        return text;
    }

    cuda_cell_options cuda_cell_arguments::parse(const std::string& line)
    {
        const magic_arguments& declared = declaration();
        magic_arguments::parsed p = declared.parse(line);
        cuda_cell_options result;
        result.help = p.help;
        result.name = p.value("--name");
        if (p.has("--name") && !is_identifier(result.name))
        {
            throw usage_error(declared.problem("--name needs a Python identifier, got '" + result.name + "'"));
        }
        result.compile.arch = p.value("--arch");
        if (p.has("--arch") && !valid_arch(result.compile.arch))
        {
            throw usage_error(declared.problem("--arch needs sm_XX (CUBIN and PTX) or compute_XX (PTX only), for "
                                               "example sm_90 or compute_75; got '" + result.compile.arch + "'"));
        }
        result.compile.std = p.value("--std");
        if (p.has("--std") && result.compile.std.rfind("c++", 0) != 0)
        {
            throw usage_error(declared.problem("--std needs a C++ standard such as c++17 or c++20, got '" +
                                               result.compile.std + "'"));
        }
        for (const std::string& define : p.all("-D"))
        {
            if (define.empty())
            {
                throw usage_error(declared.problem("-D needs NAME or NAME=VALUE"));
            }
            result.compile.defines.push_back(define);
        }
        for (const std::string& name : p.all("-U"))
        {
            if (name.empty() || name.find('=') != std::string::npos)
            {
                throw usage_error(declared.problem("-U needs a macro NAME"));
            }
            result.compile.extra.push_back("--undefine-macro=" + name);
        }
        for (const std::string& dir : p.all("-I"))
        {
            if (dir.empty())
            {
                throw usage_error(declared.problem("-I needs a folder"));
            }
            result.compile.include_dirs.push_back(dir);
        }
        result.compile.lineinfo = p.has("--lineinfo");
        result.compile.fast_math = p.has("--fast-math");
        for (const std::string& expression : p.all("--instantiate"))
        {
            if (expression.find('<') == std::string::npos)
            {
                throw usage_error(declared.problem("--instantiate needs a template instance such as 'saxpy<float>', got '" +
                                                   expression + "'"));
            }
            result.compile.name_expressions.push_back(expression);
        }
        result.show_ptx = p.has("--ptx");
        result.show_sass = p.has("--sass");
        result.compile.extra.insert(result.compile.extra.end(), p.passed.begin(), p.passed.end());
        return result;
    }
}
