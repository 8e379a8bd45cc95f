#include "disassembler.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errors.hpp"
#include "nvrtc_compiler.hpp"
#include "tool_finder.hpp"

namespace xcuda
{
    namespace
    {
        // Runs argv, returns (exit status, stdout + stderr).
        std::pair<int, std::string> run(const std::vector<std::string>& argv)
        {
            std::string command;
            for (const auto& word : argv)
            {
                command += "'";
                for (char c : word)
                {
                    command += c == '\'' ? std::string("'\\''") : std::string(1, c);
                }
                command += "' ";
            }
            command += "2>&1";
            FILE* pipe = ::popen(command.c_str(), "r");
            if (!pipe)
            {
                throw tool_error("could not start " + argv[0]);
            }
            std::string output;
            std::array<char, 65536> buffer;
            std::size_t n = 0;
            while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
            {
                output.append(buffer.data(), n);
            }
            int status = ::pclose(pipe);
            return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
        }
    }

    std::string disassembler::find(const std::string& name)
    {
        std::vector<std::string> folders;
        for (const char* variable : {"CUDA_HOME", "CUDA_PATH"})
        {
            const char* value = std::getenv(variable);
            if (value && *value)
            {
                folders.push_back(std::string(value) + "/bin");
            }
        }
        for (const auto& include : nvrtc_compiler::toolkit_include_dirs())
        {
            folders.push_back(include.substr(0, include.rfind('/')) + "/bin");
        }
        if (const char* path = std::getenv("PATH"))
        {
            std::stringstream parts(path);
            std::string folder;
            while (std::getline(parts, folder, ':'))
            {
                if (!folder.empty())
                {
                    folders.push_back(folder);
                }
            }
        }
        folders.push_back("/usr/local/cuda/bin");
        for (const auto& folder : folders)
        {
            if (is_executable_file(folder + "/" + name))
            {
                return folder + "/" + name;
            }
        }
        return {};
    }

    std::string disassembler::tool()
    {
        std::string nvdisasm = find("nvdisasm");
        return nvdisasm.empty() ? find("cuobjdump") : nvdisasm;
    }

    std::string disassembler::disassemble(const std::string& cubin, bool line_info)
    {
        if (cubin.empty())
        {
            throw usage_error("no CUBIN to disassemble: SASS needs an sm_XX target");
        }
        std::string nvdisasm = find("nvdisasm");
        std::string cuobjdump = nvdisasm.empty() ? find("cuobjdump") : std::string();
        if (nvdisasm.empty() && cuobjdump.empty())
        {
            throw tool_not_found_error(
                "SASS needs nvdisasm or cuobjdump from the CUDA toolkit, and neither was found (looked in "
                "$CUDA_HOME/bin, the toolkit NVRTC came from, PATH and /usr/local/cuda/bin). Install the "
                "toolkit's binary utilities (NVIDIA's cuda-nvdisasm and cuda-cuobjdump packages) or set "
                "CUDA_HOME to a toolkit that has them. PTX views work without them.");
        }
        char path[] = "/tmp/xcuda-sass-XXXXXX";
        int fd = ::mkstemp(path);
        if (fd < 0)
        {
            throw tool_error("could not create a temporary file for the CUBIN");
        }
        bool written = ::write(fd, cubin.data(), cubin.size()) == static_cast<ssize_t>(cubin.size());
        ::close(fd);
        std::pair<int, std::string> result{-1, {}};
        if (written)
        {
            std::vector<std::string> argv = nvdisasm.empty()
                                                ? std::vector<std::string>{cuobjdump, "-sass", path}
                                                : std::vector<std::string>{nvdisasm, "-c", path};
            if (!nvdisasm.empty() && line_info)
            {
                argv.insert(argv.begin() + 1, "-g");
            }
            result = run(argv);
        }
        ::unlink(path);
        if (!written)
        {
            throw tool_error("could not write the CUBIN to a temporary file");
        }
        if (result.first != 0)
        {
            throw tool_error((nvdisasm.empty() ? cuobjdump : nvdisasm) + " failed (exit " +
                                     std::to_string(result.first) + "): " + result.second);
        }
        return without_build_paths(result.second);
    }

    std::string disassembler::without_build_paths(const std::string& sass)
    {
        // nvdisasm's line information names the cell as NVRTC recorded it, a path under the process'
        // working folder (//## File "/home/me/notebooks/cell", line 3 inlined at "/home/me/notebooks/cell",
        // ...): a machine's path in a view and in rendered notebooks. In those //## lines every quoted
        // absolute path keeps only its last part ("cell", or a header cell's own name).
        std::string out;
        out.reserve(sass.size());
        std::size_t at = 0;
        while (at < sass.size())
        {
            std::size_t end = sass.find('\n', at);
            std::size_t stop = end == std::string::npos ? sass.size() : end + 1;
            std::string line = sass.substr(at, stop - at);
            if (line.find("//##") != std::string::npos)
            {
                std::string cleaned;
                std::size_t pos = 0;
                for (;;)
                {
                    std::size_t open = line.find("\"/", pos);
                    std::size_t close = open == std::string::npos ? open : line.find('"', open + 1);
                    if (close == std::string::npos)
                    {
                        cleaned.append(line, pos, std::string::npos);
                        break;
                    }
                    std::string path = line.substr(open + 1, close - open - 1);
                    cleaned.append(line, pos, open + 1 - pos);
                    cleaned += path.substr(path.rfind('/') + 1);
                    pos = close;
                }
                line = std::move(cleaned);
            }
            out += line;
            at = stop;
        }
        return out;
    }
}
