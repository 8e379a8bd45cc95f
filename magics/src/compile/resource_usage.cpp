#include "resource_usage.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

namespace xcuda
{
    namespace
    {
        // The number just before `unit` in text ("380 bytes cmem[0]" -> 380), or -1.
        long number_before(const std::string& text, const std::string& unit)
        {
            std::size_t at = text.find(unit);
            if (at == std::string::npos)
            {
                return -1;
            }
            std::size_t end = at;
            while (end > 0 && text[end - 1] == ' ')
            {
                --end;
            }
            std::size_t start = end;
            while (start > 0 && std::isdigit(static_cast<unsigned char>(text[start - 1])))
            {
                --start;
            }
            if (start == end)
            {
                return -1;
            }
            return std::strtol(text.substr(start, end - start).c_str(), nullptr, 10);
        }

        std::string quoted(const std::string& line)
        {
            std::size_t open = line.find('\'');
            std::size_t close = open == std::string::npos ? open : line.find('\'', open + 1);
            return close == std::string::npos ? std::string() : line.substr(open + 1, close - open - 1);
        }

        std::string bytes(long value)
        {
            return std::to_string(value < 0 ? 0 : value) + " B";
        }
    }

    std::string resource_usage::summary() const
    {
        std::string text = std::to_string(registers) + " registers, " + bytes(spill_stores + spill_loads) +
                           " spilled, " + bytes(stack_frame) + " stack, " + bytes(static_shared) + " shared, " +
                           bytes(constant) + " constant";
        if (max_threads_per_block)
        {
            text += ", up to " + std::to_string(max_threads_per_block) + " threads per block";
        }
        return text;
    }

    std::map<std::string, resource_usage> resource_usage::parse_ptxas_log(const std::string& log)
    {
        // ptxas -v writes, per function:
        //   ptxas info    : Compiling entry function 'saxpy' for 'sm_90'
        //   ptxas info    : Function properties for saxpy
        //   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        //   ptxas info    : Used 12 registers, used 0 barriers, 1024 bytes smem, 380 bytes cmem[0]
        std::map<std::string, resource_usage> result;
        std::istringstream in(log);
        std::string line;
        std::string current;
        std::string arch;
        long module_constant = 0;  // user __constant__ data: "N bytes gmem, M bytes cmem[3]" (bank varies)
        while (std::getline(in, line))
        {
            // Only ptxas' own lines: NVRTC's messages before them echo the cell's text (a #warning, a
            // line with an error), which may say anything.
            if (line.rfind("ptxas", 0) != 0)
            {
                continue;
            }
            if (line.find("bytes gmem") != std::string::npos)
            {
                std::size_t bank = line.find("bytes cmem[");
                module_constant = bank == std::string::npos ? 0 : number_before(line, "bytes cmem[");
                continue;
            }
            if (line.find("Compiling entry function") != std::string::npos ||
                line.find("Function properties for") != std::string::npos)
            {
                if (line.find("Compiling entry function") != std::string::npos)
                {
                    current = quoted(line);
                    std::size_t for_at = line.find("for '");
                    arch = for_at == std::string::npos ? std::string() : quoted(line.substr(for_at + 3));
                }
                else
                {
                    std::size_t at = line.find("Function properties for") + 23;
                    std::string name = line.substr(std::min(line.size(), at + 1));
                    while (!name.empty() && (name.back() == ' ' || name.back() == '\r'))
                    {
                        name.pop_back();
                    }
                    current = name;
                }
                resource_usage& usage = result[current];
                usage.source = "ptxas";
                if (!arch.empty())
                {
                    usage.arch = arch;
                }
                continue;
            }
            if (current.empty())
            {
                continue;
            }
            resource_usage& usage = result[current];
            if (line.find("bytes stack frame") != std::string::npos)
            {
                usage.stack_frame = number_before(line, "bytes stack frame");
                usage.spill_stores = number_before(line, "bytes spill stores");
                usage.spill_loads = number_before(line, "bytes spill loads");
            }
            else if (line.find("Used ") != std::string::npos && line.find("registers") != std::string::npos)
            {
                usage.registers = static_cast<int>(number_before(line, "registers"));
                long barriers = number_before(line, "barriers");
                usage.barriers = barriers < 0 ? 0 : static_cast<int>(barriers);
                long shared = number_before(line, "bytes smem");
                usage.static_shared = shared < 0 ? 0 : shared;
                // cmem[0] on this line is the parameter bank, not user constants.
            }
        }
        for (auto& entry : result)
        {
            entry.second.constant = module_constant < 0 ? 0 : module_constant;
        }
        return result;
    }
}
