#include "ptx_program.hpp"

#include <algorithm>

namespace xcuda::sim
{
    const char* space_name(state_space space)
    {
        switch (space)
        {
        case state_space::generic: return "generic";
        case state_space::global: return "global";
        case state_space::constant: return "const";
        case state_space::shared: return "shared";
        case state_space::local: return "local";
        case state_space::param: return "param";
        case state_space::func_param: return "param";
        case state_space::shared_cluster: return "shared::cluster";
        }
        return "?";
    }

    int ptx_program::find_function(const std::string& name) const
    {
        for (std::size_t i = 0; i < functions.size(); ++i)
        {
            if (functions[i].name == name)
            {
                return static_cast<int>(i);
            }
        }
        return -1;
    }

    std::string ptx_program::refusal(int function) const
    {
        if (std::all_of(functions.begin(), functions.end(), [](const ptx_function& f) { return f.refused.empty(); }))
        {
            return {};  // the common case, without a walk per launch
        }
        // The functions `function` can reach through calls, breadth first: a refused one anywhere refuses it.
        std::vector<int> reached{function};
        for (std::size_t k = 0; k < reached.size(); ++k)
        {
            const ptx_function& f = functions[static_cast<std::size_t>(reached[k])];
            if (!f.refused.empty())
            {
                const std::string& name = functions[static_cast<std::size_t>(function)].name;
                auto file = files.find(f.refused_file);
                std::string line = !f.refused_line ? std::string()
                                   : " (line " + std::to_string(f.refused_line) +
                                         (file != files.end() ? " of " + file->second : std::string()) + ")";
                return "the simulator cannot run kernel '" + name + "'" +
                       (k == 0 ? std::string(": its") : ": it calls '" + f.name + "', whose") + " PTX it could not read: " +
                       f.refused + line + "; the module's other kernels run";
            }
            for (const instruction& in : f.code)
            {
                if (in.op == opcode::call && in.callee >= 0 &&
                    std::find(reached.begin(), reached.end(), in.callee) == reached.end())
                {
                    reached.push_back(in.callee);
                }
            }
        }
        return {};
    }

    namespace
    {
        bool ends_flow(const instruction& in)
        {
            return in.op == opcode::ret || in.op == opcode::exit || in.op == opcode::trap;
        }
    }

    // Post-dominators are dominators of the reversed graph, rooted at the virtual exit node; the
    // iterative algorithm of Cooper, Harvey and Kennedy ("A Simple, Fast Dominance Algorithm") on
    // instructions as nodes. Nodes from which the exit cannot be reached (an endless loop) keep the
    // exit as their reconvergence point.
    void ptx_program::compute_reconvergence(ptx_function& function)
    {
        const std::uint32_t n = static_cast<std::uint32_t>(function.code.size());
        const std::uint32_t exit = n;
        std::vector<std::vector<std::uint32_t>> successors(n + 1), predecessors(n + 1);
        for (std::uint32_t i = 0; i < n; ++i)
        {
            const instruction& in = function.code[i];
            auto add = [&](std::uint32_t to) {
                successors[i].push_back(to);
                predecessors[to].push_back(i);
            };
            bool guarded = in.guard >= 0;
            if (in.op == opcode::bra)
            {
                add(static_cast<std::uint32_t>(in.operands[0].value));
                if (guarded)
                {
                    add(i + 1 < n ? i + 1 : exit);
                }
            }
            else if (ends_flow(in))
            {
                add(exit);
                if (guarded)
                {
                    add(i + 1 < n ? i + 1 : exit);
                }
            }
            else
            {
                add(i + 1 < n ? i + 1 : exit);
            }
        }
        // Reverse postorder of the reversed graph from the exit.
        std::vector<std::uint32_t> order;
        std::vector<int> number(n + 1, -1);
        {
            std::vector<std::pair<std::uint32_t, std::size_t>> stack{{exit, 0}};
            std::vector<bool> seen(n + 1, false);
            seen[exit] = true;
            while (!stack.empty())
            {
                auto& [node, next] = stack.back();
                if (next < predecessors[node].size())
                {
                    std::uint32_t p = predecessors[node][next++];
                    if (!seen[p])
                    {
                        seen[p] = true;
                        stack.push_back({p, 0});
                    }
                }
                else
                {
                    order.push_back(node);
                    stack.pop_back();
                }
            }
            std::reverse(order.begin(), order.end());
            for (std::size_t k = 0; k < order.size(); ++k)
            {
                number[order[k]] = static_cast<int>(k);
            }
        }
        const std::uint32_t undefined = 0xffffffffu;
        std::vector<std::uint32_t> ipdom(n + 1, undefined);
        ipdom[exit] = exit;
        auto intersect = [&](std::uint32_t a, std::uint32_t b) {
            while (a != b)
            {
                while (number[a] > number[b])
                {
                    a = ipdom[a];
                }
                while (number[b] > number[a])
                {
                    b = ipdom[b];
                }
            }
            return a;
        };
        for (bool changed = true; changed;)
        {
            changed = false;
            for (std::size_t k = 1; k < order.size(); ++k)
            {
                std::uint32_t node = order[k];
                std::uint32_t chosen = undefined;
                for (std::uint32_t s : successors[node])  // the reversed graph's predecessors
                {
                    if (ipdom[s] == undefined)
                    {
                        continue;
                    }
                    chosen = chosen == undefined ? s : intersect(s, chosen);
                }
                if (chosen != undefined && ipdom[node] != chosen)
                {
                    ipdom[node] = chosen;
                    changed = true;
                }
            }
        }
        for (std::uint32_t i = 0; i < n; ++i)
        {
            function.code[i].reconverge = ipdom[i] == undefined ? exit : ipdom[i];
        }
    }
}
