#include "check_report.hpp"

#include <cstdlib>
#include <cstring>
#include <cxxabi.h>


namespace xcuda::sim
{
    namespace
    {
        // A C++ name as written (block_sum::partial for _ZZ9block_sumE7partial), else the name itself.
        std::string demangled(const std::string& name)
        {
            int status = 0;
            char* text = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
            std::string result = status == 0 && text ? text : name;
            std::free(text);
            return result;
        }

        std::string triple(unsigned x, unsigned y, unsigned z)
        {
            return "(" + std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z) + ")";
        }

        std::string coordinates(const unsigned b[3], std::uint32_t linear)
        {
            return triple(linear % b[0], linear / b[0] % b[1], linear / (b[0] * b[1]));
        }
    }

    std::string check_report::block(const unsigned ctaid[3])
    {
        return "block " + triple(ctaid[0], ctaid[1], ctaid[2]);
    }

    std::string check_report::thread(const unsigned dims[3], const unsigned ctaid[3], std::uint32_t linear)
    {
        return "thread " + coordinates(dims, linear) + " of " + block(ctaid);
    }

    std::string check_report::thread_in_block(const unsigned dims[3], std::uint32_t linear)
    {
        return "thread " + coordinates(dims, linear);
    }

    std::string check_report::warp(const unsigned dims[3], unsigned warp, unsigned lanes)
    {
        const std::uint32_t first = warp * 32;
        return "warp " + std::to_string(warp) + " (threads " + coordinates(dims, first) + " to " +
               coordinates(dims, first + (lanes ? lanes : 32) - 1) + ")";
    }

    std::string check_report::location(const ptx_program& program, const ptx_function& function, const instruction& in)
    {
        std::string text = "in " + function.name;
        if (in.line > 0)
        {
            auto file = program.files.find(in.file);
            text += ", line " + std::to_string(in.line);
            if (file != program.files.end())
            {
                text += " of " + file->second;
            }
        }
        return text;
    }

    std::string check_report::place(const ptx_program& program, const ptx_function& function, const instruction& in)
    {
        return "'" + in.text + "' " + location(program, function, in);
    }

    std::string check_report::shared_address(const ptx_program& program, std::uint64_t offset)
    {
        return shared_variable(program, offset) + ", shared address " + hex(offset);
    }

    std::string check_report::access(const ptx_program& program, const ptx_function& function, const unsigned dims[3],
                                     std::uint32_t thread, const char* does, const instruction& in)
    {
        return thread_in_block(dims, thread) + does + place(program, function, in);
    }

    const ptx_function& check_report::function_of(const ptx_program& program, int entry, const instruction& in)
    {
        for (const ptx_function& f : program.functions)
        {
            if (!f.code.empty() && &in >= f.code.data() && &in < f.code.data() + f.code.size())
            {
                return f;
            }
        }
        return program.functions[static_cast<std::size_t>(entry)];
    }

    std::string check_report::shared_variable(const ptx_program& program, std::uint64_t offset)
    {
        const ptx_symbol* dynamic = nullptr;
        for (const ptx_symbol& s : program.symbols)
        {
            if (s.space != state_space::shared)
            {
                continue;
            }
            if (s.dynamic_shared || s.size == 0)
            {
                dynamic = &s;
            }
            else if (offset >= s.offset && offset < s.offset + s.size)
            {
                return "'" + demangled(s.name) + "' (byte " + std::to_string(offset - s.offset) + " of " +
                       std::to_string(s.size) + ")";
            }
        }
        if (dynamic)
        {
            return "the dynamic shared memory '" + demangled(dynamic->name) + "'";
        }
        return "shared memory";
    }

    std::string check_report::argument_near(const ptx_program& program, int entry_index, const std::uint8_t* params,
                                            std::size_t param_bytes, const sim_memory& memory, std::uint64_t address)
    {
        const ptx_function& entry = program.functions[static_cast<std::size_t>(entry_index)];
        std::uint64_t best = std::uint64_t(1) << 20;
        int which = -1;
        for (std::size_t i = 0; i < entry.params.size(); ++i)
        {
            const ptx_symbol& p = program.symbols[static_cast<std::size_t>(entry.params[i])];
            if (p.size != 8 || p.offset + 8 > param_bytes)
            {
                continue;
            }
            std::uint64_t pointer = 0;
            std::memcpy(&pointer, params + p.offset, 8);
            const sim_memory::allocation* a = memory.containing(static_cast<std::uintptr_t>(pointer));
            if (!a)
            {
                continue;
            }
            std::uint64_t end = a->start + a->bytes;
            std::uint64_t distance = address < a->start ? a->start - address : address >= end ? address - end + 1 : 0;
            if (distance < best)
            {
                best = distance;
                which = static_cast<int>(i);
            }
        }
        if (which < 0)
        {
            return "";
        }
        const ptx_symbol& p = program.symbols[static_cast<std::size_t>(entry.params[static_cast<std::size_t>(which)])];
        return " (the array of the kernel's parameter " + std::to_string(which) + ", " + p.name + ")";
    }
}
