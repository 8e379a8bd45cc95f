#pragma once
// A whole CUDA program (a cell with main(), <<<>>> launches, the CUDA runtime API), as nvcc4jupyter runs
// one: compiled by nvcc into a temporary executable and run as a process of its own, its stdout and
// stderr handed to a sink as they come, under a profiler (ncu or nsys) or compute-sanitizer when asked.
// %%cuda_program (xcuda/magics.py, through py_magics.cpp) is its user.
//
// nvcc is $XCUDA_NVCC when that is set (and then only that), else found at $CUDA_HOME/bin/nvcc, $CUDA_PATH/bin/nvcc, /usr/local/cuda/bin/nvcc, then on PATH; the
// tools the same way and next to nvcc. Without nvcc, build() throws tool_not_found_error naming what to
// install. The temporary folder (private, under $TMPDIR) and the executable go when the object does.
//
// The child processes (nvcc, the program, the tool) run in a process group of their own; an interrupt
// check asked every 20 ms that answers true kills the group and throws interrupted_error. Not
// thread-safe: one object per cell run, on one thread; the sink and the check are called on it.

#include <functional>
#include <string>
#include <vector>

namespace xcuda
{
    class cuda_program
    {
    public:
        using output_sink = std::function<void(bool is_stderr, const std::string& text)>;
        using interrupt_check = std::function<bool()>;

        // Writes the source to a new private temporary folder (nothing is compiled yet).
        explicit cuda_program(const std::string& source);
        ~cuda_program();
        cuda_program(const cuda_program&) = delete;
        cuda_program& operator=(const cuda_program&) = delete;

        // nvcc's path, or "" when there is none.
        static std::string find_nvcc();
        // A toolkit program ("ncu", "nsys", "compute-sanitizer") next to nvcc or where nvcc is looked
        // for, or on PATH; "" when there is none.
        static std::string find_tool(const std::string& name);

        // nvcc -o <exe> <source> <options>. Throws tool_not_found_error without nvcc, compile_error with
        // nvcc's output when it fails, interrupted_error when the check says so.
        void build(const std::vector<std::string>& nvcc_options, const interrupt_check& interrupted);

        // Runs `prefix... <exe> arguments...` (prefix: a tool and its options, or nothing), streaming
        // its output to the sink. Returns the exit status; a process killed by a signal gives 128 + the
        // signal, as a shell says.
        int run(const std::vector<std::string>& prefix, const std::vector<std::string>& arguments,
                const output_sink& sink, const interrupt_check& interrupted);

        const std::string& executable() const noexcept { return m_executable; }
        // The private temporary folder (a profiler's report may go there; it goes with the object).
        const std::string& folder() const noexcept { return m_folder; }

        // Runs argv (argv[0] a path) with its output to `sink`; the building block of build() and run().
        static int run_process(const std::vector<std::string>& argv, const output_sink& sink,
                               const interrupt_check& interrupted, const std::string& what);

    private:
        std::string m_folder;
        std::string m_source;
        std::string m_executable;
    };
}
