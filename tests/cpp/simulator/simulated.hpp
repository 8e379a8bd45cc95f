#pragma once
// What the simulator's C++ tests share: a module compiled with NVRTC (compute_90 PTX) and run in the simulator's
// core on host buffers (simulated), and the message of the error a body raises (error_of).

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "block_executor.hpp"
#include "device_heap.hpp"
#include "fixture.hpp"
#include "nvrtc_compiler.hpp"
#include "ptx_parser.hpp"
#include "sim_memory.hpp"
#include "texture_registry.hpp"

using namespace xcuda::sim;

namespace
{
    // One compiled module in the simulator, with its .global/.const variables placed in host memory.
    class simulated
    {
    public:
        explicit simulated(const std::string& source, std::vector<std::string> extra = {}, bool fast_math = false)
        {
            xcuda::compile_options options;
            options.arch = "compute_90";
            options.lineinfo = true;
            options.fast_math = fast_math;
            options.extra = std::move(extra);
            ptx = xcuda::nvrtc_compiler::compile(source, options).ptx;
            program = ptx_parser::parse(ptx);
            for (ptx_symbol& s : program.symbols)
            {
                if ((s.space == state_space::global || s.space == state_space::constant) && s.function < 0)
                {
                    variables.emplace_back(std::max<std::size_t>(s.size, 8) + 16, 0);
                    std::vector<std::uint8_t>& storage = variables.back();
                    std::uintptr_t at = (reinterpret_cast<std::uintptr_t>(storage.data()) + 15) / 16 * 16;
                    if (!s.initial.empty())
                    {
                        std::memcpy(reinterpret_cast<void*>(at), s.initial.data(), s.initial.size());
                    }
                    s.offset = at;
                    memory.add(at, s.size, "variable " + s.name);
                }
            }
        }

        template <class T>
        T* buffer(std::vector<T>& v, const char* name = "buffer")
        {
            memory.add(reinterpret_cast<std::uintptr_t>(v.data()), v.size() * sizeof(T), name);
            return v.data();
        }

        // Launches `name` with the arguments' bytes, packed as the entry's .param list says.
        template <class... Args>
        launch_context launch(const std::string& name, std::array<unsigned, 3> grid, std::array<unsigned, 3> block,
                              unsigned shared, Args... args)
        {
            int index = program.find_function(name);
            if (index < 0)
            {
                throw std::runtime_error("no entry " + name);
            }
            const ptx_function& f = program.functions[static_cast<std::size_t>(index)];
            std::vector<std::vector<std::uint8_t>> values;
            (values.emplace_back(reinterpret_cast<const std::uint8_t*>(&args), reinterpret_cast<const std::uint8_t*>(&args) + sizeof(Args)), ...);
            if (values.size() != f.params.size())
            {
                throw std::runtime_error("wrong argument count for " + name);
            }
            packed.assign(std::max<std::size_t>(f.param_bytes, 1), 0);
            for (std::size_t i = 0; i < values.size(); ++i)
            {
                const ptx_symbol& p = program.symbols[static_cast<std::size_t>(f.params[i])];
                std::memcpy(packed.data() + p.offset, values[i].data(), std::min<std::size_t>(p.size, values[i].size()));
            }
            launch_context context;
            context.program = &program;
            context.entry = index;
            context.kernel = name;
            context.params = packed.data();
            context.param_bytes = f.param_bytes;
            std::copy(grid.begin(), grid.end(), context.grid);
            std::copy(block.begin(), block.end(), context.block);
            context.dynamic_shared = shared;
            context.memory = &memory;
            context.step_limit = step_limit;
            context.cancel = cancel;
            context.blocks_progress = blocks_progress;
            context.printf_output = &printed;
            context.race_check = race_check;
            context.threads = threads;
            context.heap = &heap;
            if (cooperative)  // as cuLaunchCooperativeKernel: every block at once, a zeroed workspace for grid syncs
            {
                workspace.assign(8, 0);
                memory.remove(reinterpret_cast<std::uintptr_t>(workspace.data()));
                memory.add(reinterpret_cast<std::uintptr_t>(workspace.data()), workspace.size() * 8, "grid workspace");
                context.cooperative = true;
                context.grid_workspace = reinterpret_cast<std::uintptr_t>(workspace.data());
            }
            context.textures = &textures;
            context.warnings = &warnings;
            context.strict_barriers = strict_barriers;
            std::copy(cluster.begin(), cluster.end(), context.cluster);  // as cuLaunchKernelEx's cluster attribute
            context.explicit_cluster = cluster != std::array<unsigned, 3>{1, 1, 1};
            block_executor(context).run_grid();
            return context;
        }

        std::string ptx;
        ptx_program program;
        sim_memory memory;
        std::vector<std::vector<std::uint8_t>> variables;
        std::vector<std::uint8_t> packed;
        std::string printed;  // device printf's output
        bool race_check = true;
        unsigned threads = 1;  // block_executor's pool
        std::uint64_t step_limit = 100000000;  // per host thread: a test that would never end fails instead
        const std::atomic<bool>* cancel = nullptr;
        std::atomic<std::uint64_t>* blocks_progress = nullptr;
        device_heap heap;      // device malloc/free's, kept across launches as a context's is
        bool cooperative = false;
        std::vector<std::uint64_t> workspace = std::vector<std::uint64_t>(8);
        texture_registry textures;  // the texture and surface objects a launch may read
        launch_warnings warnings;
        bool strict_barriers = false;
        std::array<unsigned, 3> cluster = {1, 1, 1};  // blocks per thread-block cluster
    };

    inline std::string error_of(const std::function<void()>& body, sim_error::kind* kind = nullptr)
    {
        try
        {
            body();
        }
        catch (const sim_error& e)
        {
            if (kind)
            {
                *kind = e.what_kind();
            }
            return e.what();
        }
        return "";
    }
}
