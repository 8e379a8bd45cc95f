#include "program_cell.hpp"

#include "errors.hpp"
#include "text.hpp"

namespace xcuda
{
    const magic_arguments& program_cell::arguments()
    {
        static const magic_arguments declared = [] {
            magic_arguments a("%%cuda_program", "[ARG ...]",
                              "Compile the cell as a whole CUDA program (main(), <<<...>>> launches, the CUDA\n"
                              "runtime API) with nvcc, and run it as a process of its own: its output shows\n"
                              "in the cell as it comes, Kernel > Interrupt kills it, a non-zero exit status\n"
                              "raises xcuda.ProgramError. Words after the options are the program's\n"
                              "arguments, e.g. %%cuda_program 100 out.txt, or --args \"-n 100\".");
            a.add({{"--args"}, "ARGS", "the program's arguments, shell-quoted: --args \"-n 100 -v\""})
                .add({{"--arch", "-arch"}, "ARCH", "nvcc -arch (sm_90, ...); default: nvcc's own"})
                .add({{"--profile"}, "", "run under a profiler: ncu (Nsight Compute) if found, else nsys"})
                .add({{"--profiler"}, "TOOL", "the profiler for --profile: ncu or nsys"})
                .add({{"--profiler-args"}, "ARGS", "options for the profiler, shell-quoted"})
                .add({{"--sanitize"}, "", "run under compute-sanitizer (memcheck)"})
                .add({{"--tool"}, "TOOL", "compute-sanitizer's tool for --sanitize: memcheck, racecheck,\n"
                                          "initcheck or synccheck"})
                .trailing_as(magic_arguments::trailing::words, "ARG: the program's arguments")
                .pass_unknown([](const std::string& word) { return !word.empty() && word[0] == '-'; }, "nvcc",
                              &program_cell::nvcc_option_takes_value)
                .epilog("Other options starting with '-' (-O3, -lcublas, -std=c++20, -G, -I include) and every word\n"
                        "after a bare '--' go to nvcc, but for those that name the output file or make no\n"
                        "program to run (-o, -c, -ptx, -cubin, -run, ...). nvcc is found at $CUDA_HOME/bin/nvcc,\n"
                        "/usr/local/cuda/bin/nvcc or on PATH; kernels alone need no nvcc: use %%cuda.");
            return a;
        }();
        return declared;
    }

    bool program_cell::nvcc_option_takes_value(const std::string& option) noexcept
    {
        // nvcc's options whose value may be the next word (nvcc --help, CUDA 13): short and long names.
        static const char* const with_value[] = {
            "-I", "--include-path", "-isystem", "--system-include", "-L", "--library-path", "-l", "--library",
            "-D", "--define-macro", "-U", "--undefine-macro", "-include", "--pre-include", "-Xcompiler",
            "--compiler-options", "-Xlinker", "--linker-options", "-Xptxas", "--ptxas-options", "-Xnvlink",
            "--nvlink-options", "-maxrregcount", "--maxrregcount", "-gencode", "--generate-code", "-code",
            "--gpu-code", "-ccbin", "--compiler-bindir", "-x", "--x", "-std", "--std", "-odir", "--output-directory",
            "-rdc", "--relocatable-device-code", "-t", "--threads", "-ftz", "--ftz", "-prec-div", "--prec-div",
            "-prec-sqrt", "--prec-sqrt", "-fmad", "--fmad", "-diag-suppress", "--diag-suppress", "-keep-dir",
            "--keep-dir", "-optf", "--options-file", "-Werror", "-default-stream", "--default-stream"};
        for (const char* name : with_value)
        {
            if (option == name)
            {
                return true;
            }
        }
        return false;
    }

    const char* program_cell::taken_nvcc_option(const std::string& option) noexcept
    {
        std::string name = option.substr(0, option.find('='));
        if (name == "-o" || name == "--output-file")
        {
            return "names the output file, which %%cuda_program chooses itself (it builds the program in a folder "
                   "of its own and runs it from there): leave it out";
        }
        static const char* const no_program[] = {"-c",     "--compile", "-E",    "--preprocess", "-ptx", "--ptx",
                                                 "-cubin", "--cubin",   "-fatbin", "--fatbin",   "-lib", "--lib",
                                                 "-dc",    "--device-c", "-dw",  "--device-w",   "-dlink", "--device-link",
                                                 "-run",   "--run",     "-M",    "-MM",          "--generate-dependencies"};
        for (const char* taken : no_program)
        {
            if (name == taken)
            {
                return "makes no program for %%cuda_program to run (or runs it itself): leave it out; for the PTX "
                       "or SASS of kernels, compile them with %%cuda and use xcuda's views";
            }
        }
        return nullptr;
    }

    program_cell program_cell::parse(const std::string& line, const std::string& cell)
    {
        const magic_arguments& declared = arguments();
        magic_arguments::parsed p = declared.parse(line);
        program_cell c;
        if (p.help)
        {
            c.m_help = true;
            return c;
        }
        if (text::blank(cell))
        {
            throw usage_error(declared.problem("the cell is empty: write a CUDA program with int main() below the "
                                               "%%cuda_program line"));
        }
        c.m_cell = cell;
        c.m_arguments = p.words;
        if (p.has("--args"))
        {
            std::vector<std::string> more = magic_arguments::split(p.value("--args"));
            c.m_arguments.insert(c.m_arguments.begin(), more.begin(), more.end());
        }
        if (p.has("--arch"))
        {
            c.m_nvcc_options.push_back("-arch=" + p.value("--arch"));
        }
        for (const std::string& option : p.passed)
        {
            if (const char* why = taken_nvcc_option(option))
            {
                throw usage_error(declared.problem("nvcc's " + option.substr(0, option.find('=')) + " " + why));
            }
        }
        c.m_nvcc_options.insert(c.m_nvcc_options.end(), p.passed.begin(), p.passed.end());
        if (p.has("--profile") && p.has("--sanitize"))
        {
            throw usage_error(declared.problem("--profile and --sanitize run the program under different tools; "
                                               "choose one"));
        }
        if ((p.has("--profiler") || p.has("--profiler-args")) && !p.has("--profile"))
        {
            throw usage_error(declared.problem("--profiler and --profiler-args go with --profile"));
        }
        if (p.has("--tool") && !p.has("--sanitize"))
        {
            throw usage_error(declared.problem("--tool goes with --sanitize"));
        }
        c.m_profiler = p.value("--profiler");
        if (!c.m_profiler.empty() && c.m_profiler != "ncu" && c.m_profiler != "nsys")
        {
            throw usage_error(declared.problem("--profiler needs ncu or nsys, got '" + c.m_profiler + "'"));
        }
        c.m_tool = p.value("--tool", "memcheck");
        if (c.m_tool != "memcheck" && c.m_tool != "racecheck" && c.m_tool != "initcheck" && c.m_tool != "synccheck")
        {
            throw usage_error(declared.problem("--tool needs memcheck, racecheck, initcheck or synccheck, got '" +
                                               c.m_tool + "'"));
        }
        c.m_profile = p.has("--profile");
        c.m_sanitize = p.has("--sanitize");
        c.m_profiler_given = p.has("--profiler");
        c.m_profiler_args = p.value("--profiler-args");
        return c;
    }

    std::vector<std::string> program_cell::tool_prefix(const std::function<std::string(const std::string&)>& find,
                                                       const std::string& report_folder) const
    {
        std::vector<std::string> prefix;
        if (m_profile)
        {
            std::string profiler = m_profiler;
            std::string path;
            if (profiler.empty() || profiler == "ncu")
            {
                path = find("ncu");
                profiler = path.empty() && profiler.empty() ? "nsys" : "ncu";
            }
            if (profiler == "nsys")
            {
                path = find("nsys");
            }
            if (path.empty())
            {
                throw tool_not_found_error(
                    "%%cuda_program --profile needs " +
                    std::string(m_profiler_given ? profiler : "ncu (Nsight Compute) or nsys (Nsight Systems)") +
                    ", and none was found next to nvcc, in $CUDA_HOME/bin, /usr/local/cuda/bin or on PATH; "
                    "install Nsight Compute / Nsight Systems (they come with the CUDA toolkit) or run without "
                    "--profile");
            }
            prefix.push_back(path);
            if (profiler == "nsys")
            {
                prefix.insert(prefix.end(),
                              {"profile", "--stats=true", "--force-overwrite=true", "-o", report_folder + "/report"});
            }
            std::vector<std::string> extra = magic_arguments::split(m_profiler_args);
            prefix.insert(prefix.end(), extra.begin(), extra.end());
        }
        else if (m_sanitize)
        {
            std::string path = find("compute-sanitizer");
            if (path.empty())
            {
                throw tool_not_found_error(
                    "%%cuda_program --sanitize needs compute-sanitizer, and none was found next to nvcc, in "
                    "$CUDA_HOME/bin, /usr/local/cuda/bin or on PATH; it comes with the CUDA toolkit "
                    "(the cuda-sanitizer package of your CUDA version), or run without --sanitize");
            }
            prefix = {path, "--tool", m_tool};
        }
        return prefix;
    }

    std::string program_cell::exit_message(int status, const std::vector<std::string>& prefix)
    {
        std::string what = prefix.empty() ? "the program" : "the program under " + prefix[0].substr(prefix[0].rfind('/') + 1);
        std::string how = status > 128 ? " (killed by signal " + std::to_string(status - 128) + ")" : "";
        return what + " exited with status " + std::to_string(status) + how + "; its output is above";
    }

    void program_cell::run(const cuda_program::output_sink& sink, const cuda_program::interrupt_check& interrupted) const
    {
        cuda_program program(m_cell);
        std::vector<std::string> prefix = tool_prefix(&cuda_program::find_tool, program.folder());
        program.build(m_nvcc_options, interrupted);
        int status = program.run(prefix, m_arguments, sink, interrupted);
        if (status != 0)
        {
            throw program_error(exit_message(status, prefix), status);
        }
    }
}
