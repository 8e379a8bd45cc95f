#include "magic_arguments.hpp"

#include "errors.hpp"

#include <cctype>

namespace xcuda
{
    std::vector<std::string> magic_arguments::split(const std::string& line)
    {
        std::vector<std::string> words;
        std::string word;
        bool in_word = false;
        char quote = 0;
        for (std::size_t i = 0; i < line.size(); ++i)
        {
            char c = line[i];
            if (quote)
            {
                if (c == quote)
                {
                    quote = 0;
                }
                else if (c == '\\' && quote == '"' && i + 1 < line.size())
                {
                    word += line[++i];
                }
                else
                {
                    word += c;
                }
            }
            else if (c == '\'' || c == '"')
            {
                quote = c;
                in_word = true;
            }
            else if (c == '\\' && i + 1 < line.size())
            {
                word += line[++i];
                in_word = true;
            }
            else if (std::isspace(static_cast<unsigned char>(c)))
            {
                if (in_word)
                {
                    words.push_back(word);
                    word.clear();
                    in_word = false;
                }
            }
            else
            {
                word += c;
                in_word = true;
            }
        }
        if (quote)
        {
            throw usage_error(std::string("unterminated ") + quote + " quote in the %%cuda line");
        }
        if (in_word)
        {
            words.push_back(word);
        }
        return words;
    }

    namespace
    {
        bool is_identifier(const std::string& text)
        {
            if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0])))
            {
                return false;
            }
            for (char c : text)
            {
                if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
                {
                    return false;
                }
            }
            return true;
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
    }

    cuda_magic_options magic_arguments::parse_cuda(const std::string& line)
    {
        cuda_magic_options result;
        std::vector<std::string> words = split(line);
        for (std::size_t i = 0; i < words.size(); ++i)
        {
            const std::string& word = words[i];
            // Options take their value as the next word or after '=' (--arch sm_90, --arch=sm_90);
            // -D and -I also glued (-DN=4, -I/path).
            auto value_of = [&](const std::string& option) -> std::string {
                if (word.size() > option.size() && word[option.size()] == '=')
                {
                    return word.substr(option.size() + 1);
                }
                if (word.size() > option.size() && option.size() == 2)
                {
                    return word.substr(2);
                }
                if (i + 1 >= words.size())
                {
                    throw usage_error("option " + option + " needs a value (see %%cuda --help)");
                }
                return words[++i];
            };
            auto is = [&](const std::string& option) {
                return word == option || word.rfind(option + "=", 0) == 0 ||
                       (option.size() == 2 && word.rfind(option, 0) == 0);
            };
            if (word == "--")
            {
                result.compile.extra.insert(result.compile.extra.end(), words.begin() + static_cast<long>(i) + 1,
                                            words.end());
                break;
            }
            else if (word == "-h" || word == "--help")
            {
                result.help = true;
            }
            else if (is("--name"))
            {
                result.name = value_of("--name");
                if (!is_identifier(result.name))
                {
                    throw usage_error("--name needs a Python identifier, got '" + result.name + "'");
                }
            }
            else if (is("--arch") || word.rfind("-arch", 0) == 0)
            {
                result.compile.arch = word.rfind("-arch", 0) == 0 ? value_of("-arch") : value_of("--arch");
                if (!valid_arch(result.compile.arch))
                {
                    throw usage_error("--arch needs sm_XX (CUBIN and PTX) or compute_XX (PTX only), "
                                                "for example sm_90 or compute_75; got '" +
                                                result.compile.arch + "'");
                }
            }
            else if (is("--std") || is("-std"))
            {
                std::string value = word.rfind("--std", 0) == 0 ? value_of("--std") : value_of("-std");
                if (value.rfind("c++", 0) != 0)
                {
                    throw usage_error("--std needs a C++ standard such as c++17 or c++20, got '" + value +
                                                "'");
                }
                result.compile.std = value;
            }
            else if (is("-D"))
            {
                std::string value = value_of("-D");
                if (value.empty())
                {
                    throw usage_error("-D needs NAME or NAME=VALUE");
                }
                result.compile.defines.push_back(value);
            }
            else if (is("-I"))
            {
                std::string value = value_of("-I");
                if (value.empty())
                {
                    throw usage_error("-I needs a folder");
                }
                result.compile.include_dirs.push_back(value);
            }
            else if (word == "--lineinfo" || word == "-lineinfo")
            {
                result.compile.lineinfo = true;
            }
            else if (word == "--fast-math" || word == "--use_fast_math" || word == "-use_fast_math")
            {
                result.compile.fast_math = true;
            }
            else if (is("--instantiate"))
            {
                std::string value = value_of("--instantiate");
                if (value.find('<') == std::string::npos)
                {
                    throw usage_error("--instantiate needs a template instance such as 'saxpy<float>', got '" +
                                                value + "'");
                }
                result.compile.name_expressions.push_back(value);
            }
            else if (word == "--ptx")
            {
                result.show_ptx = true;
            }
            else if (word == "--sass")
            {
                result.show_sass = true;
            }
            else if (!word.empty() && word[0] == '-')
            {
                result.compile.extra.push_back(word);  // an NVRTC option, as written
            }
            else
            {
                throw usage_error("unexpected word '" + word +
                                            "' in the %%cuda line: options start with '-', and the CUDA "
                                            "source goes in the cell body below the %%cuda line");
            }
        }
        return result;
    }

    const std::string& magic_arguments::cuda_usage()
    {
        static const std::string usage = R"(%%cuda [options] [-- NVRTC options]

Compile the cell's CUDA C++ with NVRTC and make every __global__ function a
Python kernel object, bound in the namespace under its own name.

    %%cuda
    extern "C" __global__ void saxpy(float a, const float* x, const float* y,
                                     float* out, size_t n)
    { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
      if (i < n) out[i] = a * x[i] + y[i]; }

then, in a Python cell:  saxpy[grid, block](2.0, x, y, out, n)

Options:
  --name NAME        bind a module object holding the kernels to NAME
                     (NAME.saxpy, NAME['saxpy']) instead of binding each kernel
  --arch ARCH        target: sm_XX (CUBIN, plus PTX) or compute_XX (PTX only).
                     Default: the current GPU's sm_XX, or compute_75 without a GPU
  -D NAME[=VALUE]    define a macro (repeatable)
  -I DIR             add an include folder (repeatable)
  --std STD          C++ standard: c++17 (NVRTC's default), c++20, ...
  --lineinfo         keep source line information (for profilers and PTX views)
  --fast-math        --use_fast_math: fast, less precise float math
  --instantiate EXPR instantiate a template kernel, e.g. --instantiate 'saxpy<float>'
                     (repeatable); reach it as module['saxpy<float>'] (with --name)
                     or kernel.module['saxpy<float>'], typed from its arguments
  --ptx              show the generated PTX below the cell (highlighted)
  --sass             show the SASS (machine code) for the GPU's sm_XX, or sm_NN
                     for compute_NN; needs nvdisasm or cuobjdump
  -h, --help         show this help
  Any other option that starts with '-', and everything after a bare '--',
  goes to NVRTC unchanged (for example -maxrregcount=32).

Re-running a cell replaces its kernels: the names are rebound to new kernel
objects. Kernel objects kept from an earlier run stay usable: each one keeps
its own module alive until its last reference goes.
After an sm_XX compile, one line per kernel shows its registers, spills, stack,
shared and constant memory (ptxas' report). kernel.resources, kernel.lines(),
kernel.occupancy(block) and xcuda.compare(a, b) show more.
Kernels must be extern "C" or plain C++ functions (found through NVRTC name
expressions); template kernels launch once instantiated with --instantiate.
A compile error raises xcuda.CompileError with NVRTC's log, the cell's own
line numbers and the options used.)";
        return usage;
    }
}
