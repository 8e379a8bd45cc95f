#pragma once
// A %%cuda_program cell: its option line read (the program's arguments, nvcc's options, a profiler or
// compute-sanitizer to run under), then the program built by nvcc and run (cuda_program), its output
// going to a sink as it comes, an interrupt check ending it. py_magics.cpp converts: it gives the sink
// (sys.stdout / sys.stderr) and the check (Python's signals); xcuda/magics.py prints the usage on -h.
//
// parse() throws usage_error (one line, naming %%cuda_program) for a wrong line or an empty cell;
// run() throws tool_not_found_error (no nvcc, profiler or sanitizer), compile_error (nvcc's output),
// interrupted_error and program_error (a non-zero exit status). run() needs no Python: the module
// calls it with the GIL released, and the sink and the check take the GIL themselves. One object per
// cell run, on one thread.

#include <string>
#include <vector>

#include "cuda_program.hpp"
#include "magic_arguments.hpp"

namespace xcuda
{
    class program_cell
    {
    public:
        // The option line's parser: -h, --args, --arch, --profile, --profiler, --profiler-args,
        // --sanitize, --tool, the program's words, nvcc's '-' options.
        static const magic_arguments& arguments();

        // Reads the line for the cell (help set: nothing else was checked).
        static program_cell parse(const std::string& line, const std::string& cell);
        // For an option the line passes on to nvcc: why %%cuda_program cannot take it (it names the output
        // file, or makes no program to run: -o, -c, -ptx, -run, ...), or null when nvcc may have it.
        static const char* taken_nvcc_option(const std::string& option) noexcept;
        // Whether an nvcc option written alone (-I, -Xcompiler, --maxrregcount, ...) takes the next word of the
        // line as its value: that word goes to nvcc with it, not to the program.
        static bool nvcc_option_takes_value(const std::string& option) noexcept;

        bool help() const noexcept { return m_help; }
        const std::vector<std::string>& program_arguments() const noexcept { return m_arguments; }
        const std::vector<std::string>& nvcc_options() const noexcept { return m_nvcc_options; }

        // Builds and runs the program under the tool asked for; returns when it ended with status 0.
        void run(const cuda_program::output_sink& sink, const cuda_program::interrupt_check& interrupted) const;

        // The command a tool runs the program under (tool path and its options), or {} for none; looks
        // the tool up with find (cuda_program::find_tool in run()). report_folder: nsys' report.
        std::vector<std::string> tool_prefix(const std::function<std::string(const std::string&)>& find,
                                             const std::string& report_folder) const;

        // The program_error message for a non-zero status of the program (under prefix[0], if any).
        static std::string exit_message(int status, const std::vector<std::string>& prefix);

    private:
        bool m_help = false;
        std::string m_cell;
        std::vector<std::string> m_arguments;
        std::vector<std::string> m_nvcc_options;
        bool m_profile = false;
        bool m_sanitize = false;
        bool m_profiler_given = false;
        std::string m_profiler;  // "", "ncu" or "nsys"
        std::string m_profiler_args;
        std::string m_tool = "memcheck";
    };
}
