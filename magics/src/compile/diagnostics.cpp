#include "diagnostics.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <utility>

#include "text.hpp"


namespace xcuda
{
    namespace
    {
        using text::split_lines;

        // NVRTC's file for name expressions: its messages are about the cell's kernels.
        constexpr const char* name_map = "__nv_name_map";
        // The stand-in that declares the host library's names for host code (standard_headers/).
        constexpr const char* host_library = "xcuda_host_library.h";

        // A device use of a host-library name: its static_assert is in the stand-in (host_library), the use
        // in the cell ("detected during instantiation of ... at line 11 of cell" below the message at
        // lines[i]); the message is located there.
        void relocate_to_the_cell(const std::vector<std::string>& lines, std::size_t i, diagnostic& d)
        {
            for (std::size_t k = i + 1; k < lines.size() && k < i + 8; ++k)
            {
                std::size_t at = lines[k].rfind(" at line ");
                std::size_t of = at == std::string::npos ? at : lines[k].find(" of ", at + 9);
                if (lines[k].find("detected during") != std::string::npos && of != std::string::npos &&
                    lines[k].compare(of + 4, std::string::npos, diagnostics::program_name) == 0)
                {
                    d.file.clear();
                    d.line = std::atoi(lines[k].c_str() + at + 9);
                    return;
                }
            }
        }

        // "FILE(LINE): REST": the file, the line and where REST starts; false for any other text.
        bool located(const std::string& line, std::string& file, int& number, std::size_t& rest)
        {
            std::size_t close = line.find("): ");
            if (close == std::string::npos || close == 0)
            {
                return false;
            }
            std::size_t open = line.rfind('(', close);
            if (open == std::string::npos || open == 0 || open + 1 >= close || close - open > 10)
            {
                return false;
            }
            for (std::size_t i = open + 1; i < close; ++i)
            {
                if (!std::isdigit(static_cast<unsigned char>(line[i])))
                {
                    return false;
                }
            }
            file = line.substr(0, open);
            number = std::atoi(line.substr(open + 1, close - open - 1).c_str());
            rest = close + 3;
            return true;
        }

        // "warning #1105-D" -> "warning".
        std::string plain_severity(std::string severity)
        {
            std::size_t hash = severity.find(" #");
            if (hash != std::string::npos)
            {
                severity.erase(hash);
            }
            return severity;
        }

        // The quoted name in `... overloaded function "f" is intended`.
        std::string quoted_name(const std::string& message)
        {
            std::size_t open = message.find('"');
            std::size_t close = open == std::string::npos ? open : message.find('"', open + 1);
            return close == std::string::npos ? std::string() : message.substr(open + 1, close - open - 1);
        }

        // The first line of text that declares a kernel named `name`, or 0.
        int kernel_line(const std::string& text, const std::string& name)
        {
            std::vector<std::string> lines = split_lines(text);
            for (std::size_t i = 0; i < lines.size() && !name.empty(); ++i)
            {
                std::size_t at = lines[i].find(name);
                while (at != std::string::npos)
                {
                    std::size_t after = lines[i].find_first_not_of(" \t", at + name.size());
                    bool word_start = at == 0 || !(std::isalnum(static_cast<unsigned char>(lines[i][at - 1])) ||
                                                   lines[i][at - 1] == '_');
                    if (word_start && after != std::string::npos && (lines[i][after] == '(' || lines[i][after] == '<'))
                    {
                        bool global = lines[i].find("__global__") != std::string::npos ||
                                      (i > 0 && lines[i - 1].find("__global__") != std::string::npos);
                        if (global)
                        {
                            return static_cast<int>(i) + 1;
                        }
                    }
                    at = lines[i].find(name, at + 1);
                }
            }
            return 0;
        }

        std::string trimmed(const std::string& text)
        {
            std::size_t first = text.find_first_not_of(" \t\r");
            std::size_t last = text.find_last_not_of(" \t\r{");
            return first == std::string::npos || last < first ? std::string() : text.substr(first, last - first + 1);
        }
    }

    std::vector<int> diagnostics::error_lines(const std::string& log, const std::string& file)
    {
        // NVRTC writes "cell(LINE): error: message" (and "warning"); only errors are collected.
        std::vector<int> lines;
        for (const std::string& line : split_lines(log))
        {
            std::string where;
            int number = 0;
            std::size_t rest = 0;
            if (!located(line, where, number, rest) || where != file || line.find("error", rest) == std::string::npos)
            {
                continue;
            }
            if (std::find(lines.begin(), lines.end(), number) == lines.end())
            {
                lines.push_back(number);
            }
        }
        return lines;
    }

    std::string diagnostics::numbered_lines(const std::string& source, int first, int last,
                                            const std::vector<int>& marks)
    {
        std::vector<std::string> lines;
        std::istringstream in(source);
        std::string line;
        while (std::getline(in, line))
        {
            lines.push_back(line);
        }
        first = std::max(first, 1);
        last = std::min(last, static_cast<int>(lines.size()));
        std::string out;
        char number[32];
        for (int i = first; i <= last; ++i)
        {
            bool marked = std::find(marks.begin(), marks.end(), i) != marks.end();
            std::snprintf(number, sizeof number, "%s%4d | ", marked ? "> " : "  ", i);
            out += number + lines[static_cast<std::size_t>(i - 1)] + "\n";
        }
        return out;
    }

    int diagnostics::editor_column(const std::string& line, std::size_t byte_offset)
    {
        int column = 1;
        for (std::size_t i = 0; i < byte_offset && i < line.size(); ++i)
        {
            auto byte = static_cast<unsigned char>(line[i]);
            if ((byte & 0xc0) == 0x80)
            {
                continue;  // a continuation byte of a UTF-8 sequence
            }
            column += byte >= 0xf0 ? 2 : 1;  // a code point above U+FFFF is two UTF-16 units
        }
        return column;
    }

    std::string diagnostics::hint_for(const std::string& message, const std::vector<int>& supported_archs)
    {
        // The host-only library headers (<iostream>, <vector>, ...) are stand-ins that only declare their
        // names (standard_headers/xcuda_host_library.h); a use in device code stops at a static_assert saying
        // so. The hint says what to use instead.
        if (message.find("has no host C++ library") != std::string::npos)
        {
            return "NVRTC compiles device code only: the host C++ library of headers such as <iostream> or "
                   "<vector> is not available to kernels (host functions that use it are set aside). Use printf "
                   "for output, and <cuda/std/...> (libcu++) headers for the standard library in device code.";
        }
        if (message.find("cannot open source file") != std::string::npos)
        {
            // CCCL (CUB, Thrust, libcu++) and the toolkit's own headers: without a toolkit, NVIDIA's wheels
            // hold them (site-packages/nvidia/cu13/include, found beside the wheel's NVRTC).
            for (const char* cccl : {"\"cub/", "\"thrust/", "\"cuda/", "\"nv/"})
            {
                if (message.find(cccl) != std::string::npos)
                {
                    return "CUB, Thrust and libcu++ (CCCL) come with the CUDA toolkit, or without one from NVIDIA's "
                           "wheel: pip install nvidia-cuda-cccl (pip install \"xcuda[nvrtc]\" brings NVRTC and all "
                           "the header wheels).";
                }
            }
            for (const char* toolkit : {"\"cuda_fp", "\"cuda_bf16", "\"cuda_runtime", "\"cuda_pipeline", "\"cuda_awbarrier",
                                        "\"cuda_occupancy", "\"cooperative_groups", "\"mma.h", "\"vector_types.h"})
            {
                if (message.find(toolkit) != std::string::npos)
                {
                    return "this is a header of the CUDA toolkit: install the toolkit, or without one NVIDIA's wheels "
                           "pip install nvidia-cuda-runtime nvidia-cuda-crt (pip install \"xcuda[nvrtc]\" brings NVRTC "
                           "and all the header wheels).";
                }
            }
            return "the header was not found: the toolkit's include folder is searched; add others with -I, or "
                   "define it in a %%cuda_header cell.";
        }
        if (message.find("gpu-architecture") != std::string::npos || message.find("invalid value for --gpu") != std::string::npos ||
            message.find("unsupported gpu architecture") != std::string::npos)
        {
            std::string archs;
            for (int arch : supported_archs)
            {
                archs += (archs.empty() ? "" : ", ") + std::to_string(arch);
            }
            std::string hint = "this NVRTC compiles for sm_XX / compute_XX with XX in: " + archs + ".";
            if (!supported_archs.empty() && supported_archs.front() >= 75)
            {
                // NVRTC 13 dropped Maxwell, Pascal and Volta; NVRTC 12 has them.
                hint += " Older GPUs (sm_50 to sm_72) need NVRTC 12: `pip install nvidia-cuda-nvrtc-cu12` into this "
                        "Python and set XCUDA_NVRTC to its nvidia/cuda_nvrtc/lib/libnvrtc.so.12 (chosen by itself "
                        "under a 12.x driver), then restart.";
            }
            else if (!supported_archs.empty() && supported_archs.back() < 100)
            {
                hint += " Newer GPUs (sm_100 and up) need NVRTC 13: the CUDA 13 toolkit or `pip install nvidia-cuda-nvrtc`, "
                        "with a 13.x driver.";
            }
            return hint;
        }
        if (message.find("is undefined") != std::string::npos &&
            (message.find("\"printf\"") != std::string::npos || message.find("\"assert\"") != std::string::npos))
        {
            return "NVRTC has printf and assert built in for device code (<cstdio> and <assert.h> may be included; "
                   "they add nothing).";
        }
        if (message.find("host functions are not allowed in JIT mode") != std::string::npos)
        {
            return "NVRTC compiles device code only, and this function has no __device__ or __global__, so it "
                   "is host code. A cell sets host functions aside when no kernel calls them (nvcc would compile "
                   "them for the host); a kernel calls this one, so mark it __device__ (or __host__ __device__). "
                   "Host code (main, cudaMalloc, launches with <<<...>>>) runs from Python: kernel[grid, "
                   "block](args). To make every unannotated function __device__, pass -default-device "
                   "(%%cuda -- -default-device).";
        }
        if (message.find("is overloaded") != std::string::npos && message.find("xcuda binds") != std::string::npos)
        {
            return "give the kernels different names; or declare them extern \"C\" (which allows one of each name); "
                   "or make one a template and instantiate the one you launch (--instantiate 'name<float>').";
        }
        return {};
    }

    namespace
    {
        // Messages from CUB's device-wide algorithms or from Thrust (reached through <cub/cub.cuh> or
        // <thrust/...>): that is host code, which NVRTC cannot compile; the usual hints would mislead.
        void explain_host_libraries(std::vector<diagnostic>& result)
        {
            for (diagnostic& d : result)
            {
                bool host_library = d.file.find("/cub/device/") != std::string::npos ||
                                    d.file.find("/cub/agent/") != std::string::npos ||
                                    d.file.find("/thrust/") != std::string::npos;
                if (host_library)
                {
                    d.hint = "<cub/cub.cuh> and Thrust bring CUB's device-wide algorithms (cub::DeviceReduce, "
                             "cub::DeviceScan, ...) and Thrust's, which are host code that NVRTC cannot compile. In a "
                             "kernel use the block-, warp- and thread-level headers instead, such as "
                             "<cub/block/block_reduce.cuh>, <cub/block/block_scan.cuh>, <cub/warp/warp_reduce.cuh>; "
                             "for a device-wide reduction launch a block-level kernel and reduce the partial results.";
                }
            }
        }
    }

    std::vector<diagnostic> diagnostics::parse(const std::string& source, const std::string& log,
                                               const std::vector<int>& supported_archs,
                                               const std::map<std::string, std::string>& headers)
    {
        // NVRTC writes "FILE(LINE): SEVERITY: MESSAGE", FILE "cell" or a header's name, then the
        // source line indented by two spaces, then a caret line under the column.
        std::vector<std::string> source_lines = split_lines(source);
        std::vector<std::string> lines = split_lines(log);
        std::vector<diagnostic> result;
        bool overload_said = false;
        for (std::size_t i = 0; i < lines.size(); ++i)
        {
            const std::string& line = lines[i];
            diagnostic d;
            std::size_t rest = 0;
            std::string file;
            int number = 0;
            if (located(line, file, number, rest))
            {
                d.line = number;
                d.file = file == program_name ? std::string() : file;
            }
            else if (line.rfind("error: ", 0) == 0 || line.rfind("warning: ", 0) == 0 ||
                     line.find("nvrtc: error") != std::string::npos)
            {
                rest = line.find("nvrtc: ") == 0 ? 7 : 0;
            }
            else
            {
                continue;
            }
            std::size_t colon = line.find(": ", rest);
            if (colon == std::string::npos)
            {
                continue;
            }
            d.severity = plain_severity(line.substr(rest, colon - rest));
            if (d.severity != "error" && d.severity != "warning" && d.severity != "remark" &&
                d.severity != "catastrophic error")
            {
                continue;
            }
            d.message = line.substr(colon + 2);
            if (d.file == name_map)
            {
                // NVRTC's own file of name expressions: the kernel it could not pick is the cell's.
                if (overload_said)
                {
                    continue;  // its follow-up about the same name expression
                }
                if (d.message.find("overloaded function") == std::string::npos)
                {
                    d.file.clear();  // another message about a name expression: NVRTC's words, not located
                    d.line = 0;
                    d.hint = hint_for(d.message, supported_archs);
                    result.push_back(d);
                    continue;
                }
                overload_said = true;
                std::string name = quoted_name(d.message);
                d.message = "kernel '" + name + "' is overloaded: there are several __global__ functions named '" +
                            name + "' with different parameters, and xcuda binds each kernel by its name";
                d.file.clear();
                d.line = kernel_line(source, name);
                for (const auto& [header, text] : headers)
                {
                    if (d.line == 0 && (d.line = kernel_line(text, name)) != 0)
                    {
                        d.file = header;
                    }
                }
                d.column = 0;
            }
            if (d.file == host_library)
            {
                relocate_to_the_cell(lines, i, d);
            }
            const std::vector<std::string>* text = &source_lines;
            std::vector<std::string> header_lines;
            if (!d.file.empty())
            {
                auto header = headers.find(d.file);
                if (header != headers.end())
                {
                    header_lines = split_lines(header->second);
                }
                else if (d.line > 0 && i + 1 < lines.size() && lines[i + 1].rfind("  ", 0) == 0)
                {
                    // A file NVRTC read from disk (a -I folder's, or one by relative path): its echo of the line.
                    header_lines.assign(static_cast<std::size_t>(d.line), std::string());
                    header_lines.back() = lines[i + 1].substr(2);
                }
                text = &header_lines;
            }
            if (d.line > 0 && d.line <= static_cast<int>(text->size()))
            {
                d.source_line = (*text)[static_cast<std::size_t>(d.line - 1)];
                if (i + 2 < lines.size() && d.column == 0 && d.message.find("xcuda binds") == std::string::npos)
                {
                    // NVRTC's caret line copies the source line's tabs and counts bytes: the column is the
                    // editor's (characters, UTF-16 units as CodeMirror counts them) at that byte offset.
                    std::size_t caret = lines[i + 2].find('^');
                    if (caret != std::string::npos && lines[i + 2].find_first_not_of(" \t^") == std::string::npos &&
                        caret >= 2)
                    {
                        d.column = editor_column(d.source_line, caret - 2);
                    }
                }
            }
            d.hint = hint_for(d.message, supported_archs);
            if (!d.hint.empty() && d.message.find("host functions are not allowed") != std::string::npos &&
                !d.source_line.empty())
            {
                d.hint = "'" + trimmed(d.source_line) + "': " + d.hint;
            }
            result.push_back(d);
        }
        explain_host_libraries(result);
        // A whole program (main(), <<<...>>>) says so first, before NVRTC's words about its host code.
        std::string program;
        bool failed = std::any_of(result.begin(), result.end(), [](const diagnostic& d) {
            return d.severity == "error" || d.severity == "catastrophic error";
        });
        if (int at = failed ? whole_program_line(source, program) : 0)
        {
            diagnostic first;
            first.line = at;
            first.severity = "error";
            first.message = "this cell is a whole CUDA program (" + program + "), which %%cuda does not run";
            first.hint = whole_program_message(program);
            std::vector<std::string> source_lines_again = split_lines(source);
            if (at <= static_cast<int>(source_lines_again.size()))
            {
                first.source_line = source_lines_again[static_cast<std::size_t>(at - 1)];
            }
            result.insert(result.begin(), first);
        }
        return result;
    }

    int diagnostics::whole_program_line(const std::string& source, std::string& what)
    {
        std::vector<std::string> lines = split_lines(source);
        bool in_comment = false;
        for (std::size_t n = 0; n < lines.size(); ++n)
        {
            std::string code;
            const std::string& line = lines[n];
            for (std::size_t i = 0; i < line.size(); ++i)
            {
                if (in_comment)
                {
                    if (line.compare(i, 2, "*/") == 0)
                    {
                        in_comment = false;
                        ++i;
                    }
                    continue;
                }
                if (line.compare(i, 2, "//") == 0)
                {
                    break;
                }
                if (line.compare(i, 2, "/*") == 0)
                {
                    in_comment = true;
                    ++i;
                    continue;
                }
                code += line[i];
            }
            if (code.find("<<<") != std::string::npos)
            {
                what = "a kernel launch with <<<...>>>";
                return static_cast<int>(n + 1);
            }
            for (std::size_t at = code.find("main"); at != std::string::npos; at = code.find("main", at + 4))
            {
                bool word_start = at == 0 || !(std::isalnum(static_cast<unsigned char>(code[at - 1])) || code[at - 1] == '_');
                std::size_t k = at + 4;
                while (k < code.size() && (code[k] == ' ' || code[k] == '\t'))
                {
                    ++k;
                }
                std::string before = code.substr(0, at);
                while (!before.empty() && (before.back() == ' ' || before.back() == '\t'))
                {
                    before.pop_back();
                }
                bool typed = (before.size() >= 3 && before.compare(before.size() - 3, 3, "int") == 0) ||
                             (before.size() >= 4 && before.compare(before.size() - 4, 4, "void") == 0);
                if (word_start && typed && k < code.size() && code[k] == '(')
                {
                    what = "a main() function";
                    return static_cast<int>(n + 1);
                }
            }
        }
        return 0;
    }

    std::string diagnostics::whole_program_message(const std::string& what)
    {
        return "%%cuda compiles kernels with NVRTC, which has no host code (" + what + "). Run the program as it "
               "is with %%cuda_program (nvcc compiles it and runs it as a process, "
               "its output in the cell), or keep the __global__ kernels in the %%cuda cell and launch them from "
               "Python: kernel[grid, block](args), with numpy arrays for cudaMalloc/cudaMemcpy";
    }

    std::string diagnostics::format_compile_error(const std::string& source, const std::string& log,
                                                  const std::vector<std::string>& options,
                                                  const std::string& status,
                                                  const std::vector<int>& supported_archs,
                                                  const std::map<std::string, std::string>& headers)
    {
        std::vector<diagnostic> parsed = parse(source, log, supported_archs, headers);
        std::string message = "NVRTC could not compile the cell (" + status + "):\n";
        std::string program;
        if (int at = whole_program_line(source, program))
        {
            message = "line " + std::to_string(at) + ": this cell is a whole CUDA program. " +
                      whole_program_message(program) + ".\n\n" + message;
        }
        if (log.empty())
        {
            message += "(NVRTC wrote no log)";
        }
        else
        {
            // The log as NVRTC wrote it, except what it says from its own name-expression file, said
            // in the user's words instead.
            std::vector<std::string> lines = split_lines(log);
            bool overload_written = false;
            for (std::size_t i = 0; i < lines.size(); ++i)
            {
                if (lines[i].rfind(std::string(name_map) + "(", 0) != 0)
                {
                    message += lines[i] + "\n";
                    continue;
                }
                std::size_t message_at = lines[i].find("): ");
                std::string said = lines[i];
                while (i + 1 < lines.size() && lines[i + 1].rfind("  ", 0) == 0)
                {
                    ++i;  // its echo of "#pragma nv_mangled_name ..." and the caret
                }
                bool overload = false;
                for (const auto& d : parsed)
                {
                    overload = overload || d.message.find("is overloaded") != std::string::npos;
                }
                if (!overload && message_at != std::string::npos)
                {
                    message += said.substr(message_at + 3) + "\n";
                    continue;
                }
                for (const auto& d : parsed)
                {
                    if (!overload_written && d.message.find("is overloaded") != std::string::npos)
                    {
                        overload_written = true;
                        message += (d.file.empty() ? std::string(program_name) : d.file) + "(" +
                                   std::to_string(d.line) + "): error: " + d.message + "\n";
                        if (!d.source_line.empty())
                        {
                            message += "  " + d.source_line + "\n";
                        }
                    }
                }
            }
            while (!message.empty() && message.back() == '\n')
            {
                message.pop_back();
            }
        }
        message += "\n";
        // The numbered lines around each error: the cell's, then each header cell's.
        std::vector<std::pair<std::string, const std::string*>> files{{program_name, &source}};
        for (const auto& [name, text] : headers)
        {
            files.emplace_back(name, &text);
        }
        for (const auto& [file, text] : files)
        {
            std::vector<int> lines = error_lines(log, file);
            for (const auto& d : parsed)
            {
                if ((d.file.empty() ? std::string(program_name) : d.file) == file && d.line > 0 &&
                    d.message.find("is overloaded") != std::string::npos &&
                    std::find(lines.begin(), lines.end(), d.line) == lines.end())
                {
                    lines.push_back(d.line);
                }
            }
            if (lines.empty())
            {
                continue;
            }
            message += file == program_name ? "\nSource:\n" : "\nSource of header cell '" + file + "':\n";
            int shown_until = 0;
            for (int line : lines)
            {
                int first = std::max(line - 2, shown_until + 1);
                int last = line + 2;
                if (first > last)
                {
                    continue;
                }
                if (shown_until != 0 && first > shown_until + 1)
                {
                    message += "   ...\n";
                }
                message += numbered_lines(*text, first, last, lines);
                shown_until = last;
                if (lines.size() > 8 && line >= lines[7])
                {
                    break;  // a cascade of errors: the first few are the useful ones
                }
            }
        }
        std::string hints;
        for (const auto& d : parsed)
        {
            if (!d.hint.empty() && hints.find(d.hint) == std::string::npos)
            {
                hints += "\nhint: " + d.hint;
            }
        }
        message += hints.empty() ? "" : hints + "\n";
        message += "\nOptions:";
        for (const auto& option : options)
        {
            message += " " + option;
        }
        return message;
    }

    std::string diagnostics::shifted_log(const std::string& log, int lines)
    {
        const std::string prefix = std::string(program_name) + "(";
        std::string out;
        std::istringstream in(log);
        std::string line;
        bool first = true;
        while (std::getline(in, line))
        {
            out += first ? "" : "\n";
            first = false;
            std::size_t close = line.find(')', prefix.size());
            if (line.rfind(prefix, 0) == 0 && close != std::string::npos && close > prefix.size() &&
                line.find_first_not_of("0123456789", prefix.size()) == close && close - prefix.size() < 10)
            {
                int number = std::stoi(line.substr(prefix.size(), close - prefix.size()));
                line = prefix + std::to_string(number + lines) + line.substr(close);
            }
            out += line;
        }
        return out;
    }
}
