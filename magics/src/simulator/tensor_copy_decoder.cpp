#include "tensor_copy_decoder.hpp"

#include <algorithm>
#include <set>

namespace xcuda::sim
{
    namespace
    {
        bool has(const std::vector<std::string>& parts, const char* part)
        {
            return std::find(parts.begin(), parts.end(), part) != parts.end();
        }

        // What the modifiers of one instruction say.
        struct form
        {
            bool tensor = false, reduce = false, prefetch = false, commit = false, wait = false;
            bool mbarrier = false, group = false, hint = false, im2col = false, multicast = false, noftz = false;
            unsigned dims = 0;
            int destination = 0;  // 1 global, 2 shared: the first space named is the destination
            int source = 0;
            opcode operation = opcode::nop;  // a reduction's
            ptx_type type;                   // a non-tensor reduction's
            bool typed = false;
        };

        bool read_reduction(const std::string& m, form& f)
        {
            static const std::vector<std::pair<std::string, opcode>> operations = {
                {"add", opcode::add}, {"min", opcode::min}, {"max", opcode::max},
                {"and", opcode::and_}, {"or", opcode::or_}, {"xor", opcode::xor_}, {"inc", opcode::inc}, {"dec", opcode::dec}};
            for (const auto& [name, op] : operations)
            {
                if (m == name)
                {
                    f.operation = op;
                    return true;
                }
            }
            static const std::vector<std::pair<std::string, ptx_type>> types = {
                {"u32", {'u', 32}}, {"s32", {'s', 32}}, {"u64", {'u', 64}}, {"s64", {'s', 64}},
                {"b32", {'b', 32}}, {"b64", {'b', 64}}, {"f32", {'f', 32}}, {"f64", {'f', 64}}, {"f16", {'h', 16}},
                {"bf16", {'g', 16}}};
            for (const auto& [name, type] : types)
            {
                if (m == name)
                {
                    f.type = type;
                    f.typed = true;
                    return true;
                }
            }
            return false;
        }

        // "" or the modifier it does not know.
        std::string read_modifiers(const std::vector<std::string>& parts, form& f)
        {
            static const std::set<std::string> ignored = {"async", "bulk", "reduce", "L2", "tile", "cta", "gpu"};
            for (std::size_t k = 1; k < parts.size(); ++k)
            {
                const std::string& m = parts[k];
                int space = m == "global" ? 1 : (m == "shared::cta" || m == "shared::cluster" || m == "shared") ? 2 : 0;
                if (space)
                {
                    (f.destination ? f.source : f.destination) = space;
                }
                else if (m.size() == 2 && m[1] == 'd' && m[0] >= '1' && m[0] <= '5')
                {
                    f.dims = static_cast<unsigned>(m[0] - '0');
                }
                else if (m == "tensor" || m == "prefetch" || m == "commit_group" || m == "wait_group" || m == "im2col" ||
                         m == "im2col_no_offs" ||
                         m == "mbarrier::complete_tx::bytes" || m == "bulk_group" || m == "L2::cache_hint")
                {
                    f.tensor |= m == "tensor";
                    f.prefetch |= m == "prefetch";
                    f.commit |= m == "commit_group";
                    f.wait |= m == "wait_group";
                    f.im2col |= m == "im2col" || m == "im2col_no_offs";
                    f.mbarrier |= m == "mbarrier::complete_tx::bytes";
                    f.group |= m == "bulk_group";
                    f.hint |= m == "L2::cache_hint";
                }
                else if (m == "multicast::cluster" || m == "noftz")
                {
                    f.multicast |= m == "multicast::cluster";
                    f.noftz |= m == "noftz";
                }
                else if (m == "read" || ignored.count(m) || (f.reduce && read_reduction(m, f)))
                {
                }
                else
                {
                    return m;
                }
            }
            return "";
        }

        bool address(const instruction& in, unsigned k) { return in.operand_count > k && in.operands[k].what == operand::kind::address; }

        // A ctaMask: a register or a constant.
        bool mask_operand(const instruction& in, unsigned k)
        {
            return in.operand_count > k && (in.operands[k].what == operand::kind::reg || in.operands[k].what == operand::kind::imm);
        }

        std::string type_name(ptx_type t)
        {
            return t.kind == 'h' ? "f16" : t.kind == 'g' ? "bf16" : std::string(1, t.kind) + std::to_string(t.bits);
        }

        // "" when PTX has the reduction `op` of `type` into global memory (`cluster`: into a .shared::cluster window),
        // else why not. The pairs are the PTX ISA's, as ptxas 13 checks them for sm_90 (each probed on 2026-12-07).
        std::string reduction_rule(opcode op, ptx_type type, bool noftz, bool cluster)
        {
            struct rule
            {
                opcode op;
                const char* name;
                const char* global;
                const char* cluster;
            };
            static const rule rules[] = {
                {opcode::add, "add", " u32 s32 u64 f32 f64 f16 bf16 ", " u32 s32 u64 "},
                {opcode::min, "min", " u32 s32 u64 s64 f16 bf16 ", " u32 s32 "},
                {opcode::max, "max", " u32 s32 u64 s64 f16 bf16 ", " u32 s32 "},
                {opcode::inc, "inc", " u32 ", " u32 "},
                {opcode::dec, "dec", " u32 ", " u32 "},
                {opcode::and_, "and", " b32 b64 ", " b32 "},
                {opcode::or_, "or", " b32 b64 ", " b32 "},
                {opcode::xor_, "xor", " b32 b64 ", " b32 "},
            };
            for (const rule& r : rules)
            {
                const std::string allowed = cluster ? r.cluster : r.global;
                if (r.op != op)
                {
                    continue;
                }
                if (allowed.find(" " + type_name(type) + " ") == std::string::npos)
                {
                    std::string list;
                    for (std::size_t k = 1; k < allowed.size(); k = allowed.find(' ', k) + 1)
                    {
                        list += (list.empty() ? "." : ", .") + allowed.substr(k, allowed.find(' ', k) - k);
                    }
                    return "." + std::string(r.name) + " into " + (cluster ? "shared::cluster" : "global") +
                           " memory takes " + list + ", not ." + type_name(type) + " (PTX)";
                }
                if (op == opcode::add && (type.kind == 'h' || type.kind == 'g') && !noftz)
                {
                    return ".add of .f16 and .bf16 is .add.noftz (PTX)";
                }
            }
            return "";
        }

        // [tensorMap, {coordinates}]: a register or a parameter, and `dims` registers.
        bool tensor_operand(const instruction& in, unsigned k, unsigned dims)
        {
            if (in.operand_count <= k || in.operands[k].what != operand::kind::texture || in.operands[k].count != dims)
            {
                return false;
            }
            for (unsigned i = 0; i < dims; ++i)
            {
                if (in.operands[k].regs[i] < 0)
                {
                    return false;
                }
            }
            return true;
        }

        std::string tensor_form(const form& f, const std::string& text, instruction& in)
        {
            in.texture_form = static_cast<std::uint8_t>(f.dims | (f.im2col ? 8 : 0));
            in.family_op = f.operation;
            const std::string usage = "'" + text + "' is not a tensor copy the simulator knows (it runs "
                                      "cp.async.bulk.tensor.Nd.shared::cluster.global.{tile,im2col}.mbarrier::complete_tx::bytes "
                                      "[smem], [map, {coordinates}], [mbar]{, {im2col offsets}} and "
                                      "cp{.reduce}.async.bulk.tensor.Nd.global.shared::cta{.op}.tile.bulk_group [map, {coordinates}], [smem])";
            if (f.dims == 0)
            {
                return usage;
            }
            if (f.destination == 2 && f.source == 1 && f.mbarrier && !f.reduce)
            {
                in.var = variant::bulk_tensor_load;
                in.bulk_form = f.multicast ? bulk_multicast : 0;
                bool offsets = !f.im2col || (in.operand_count > 3 && in.operands[3].what == operand::kind::vector &&
                                             in.operands[3].count == f.dims - 2 && f.dims >= 3);
                const unsigned count = (f.im2col ? 4u : 3u) + (f.multicast ? 1u : 0u);
                return address(in, 0) && tensor_operand(in, 1, f.dims) && address(in, 2) && offsets &&
                               in.operand_count == count && (!f.multicast || mask_operand(in, count - 1))
                           ? ""
                           : usage + (f.multicast ? " (with .multicast::cluster a ctaMask follows: a 16-bit register or constant)" : "");
            }
            if (f.destination == 1 && f.source == 2 && f.group)
            {
                if (f.im2col)
                {
                    return "'" + text + "': a tensor store in im2col mode (.im2col_no_offs) is not implemented by the "
                                        "simulator (.tile is)";
                }
                in.var = f.reduce ? variant::bulk_tensor_reduce : variant::bulk_tensor_store;
                if (f.reduce && f.operation == opcode::nop)
                {
                    return "'" + text + "': a tensor reduction takes .add, .min, .max, .inc, .dec, .and, .or, .xor (PTX)";
                }
                if (f.multicast)
                {
                    return "'" + text + "': .multicast::cluster is a load's (global to shared::cluster), not a store's (PTX)";
                }
                return tensor_operand(in, 0, f.dims) && address(in, 1) && in.operand_count == 2 ? "" : usage;
            }
            return usage;
        }
    }

    bool tensor_copy_decoder::owns(const std::vector<std::string>& parts)
    {
        if (parts[0] == "prefetch" || parts[0] == "prefetchu")
        {
            return true;
        }
        if (parts[0] != "cp" || parts.size() < 4)
        {
            return false;
        }
        if (parts[1] == "reduce")
        {
            return true;
        }
        return parts[1] == "async" && parts[2] == "bulk" &&
               (parts[3] == "global" || has(parts, "tensor") || has(parts, "prefetch") || has(parts, "commit_group") ||
                has(parts, "wait_group"));
    }

    std::string tensor_copy_decoder::decode(const std::vector<std::string>& parts, const std::string& text, instruction& in)
    {
        in.op = opcode::async_copy;
        if (parts[0] == "prefetch" || parts[0] == "prefetchu")
        {
            in.op = opcode::nop;  // a hint: nothing is cached here
            return "";
        }
        form f;
        f.reduce = parts[1] == "reduce";
        std::string unknown = read_modifiers(parts, f);
        if (!unknown.empty())
        {
            return "the modifier ." + unknown + " of '" + text + "' is not implemented by the simulator" +
                   (unknown.rfind("cta_group", 0) == 0 ? " (a CTA pair's copy: sm_100, not the simulated sm_90)" : "");
        }
        if (f.hint)
        {
            --in.operand_count;  // the cache policy: a hint
        }
        in.space = state_space::shared;  // the shared operand's addresses are the CTA's window
        if (f.prefetch)
        {
            in.op = opcode::nop;
            return "";
        }
        if (f.commit || f.wait)
        {
            in.var = f.commit ? variant::bulk_commit : variant::bulk_wait;
            bool ok = f.commit ? in.operand_count == 0 : in.operand_count == 1 && in.operands[0].what == operand::kind::imm;
            return ok ? "" : "'" + text + "' is not a form of cp.async.bulk.commit_group / wait_group the simulator knows";
        }
        if (f.tensor)
        {
            return tensor_form(f, text, in);
        }
        const bool to_cluster = f.destination == 2 && f.source == 2 && f.mbarrier && f.reduce && in.operand_count == 4 &&
                                address(in, 3);
        if (((f.destination == 1 && f.source == 2 && f.group && in.operand_count == 3) || to_cluster) && address(in, 0) &&
            address(in, 1) && !f.multicast)
        {
            in.var = f.reduce ? variant::bulk_reduce : variant::bulk_store;
            in.bulk_form = to_cluster ? bulk_to_cluster : 0;
            in.family_op = f.operation;
            in.type = f.type;
            if (f.reduce && (f.operation == opcode::nop || !f.typed))
            {
                return "'" + text + "': cp.reduce.async.bulk takes .add, .min, .max, .inc, .dec, .and, .or, .xor of "
                                    ".u32, .s32, .u64, .s64, .b32, .b64, .f32, .f64, .f16, .bf16";
            }
            const std::string rule = f.reduce ? reduction_rule(f.operation, f.type, f.noftz, to_cluster) : "";
            return rule.empty() ? "" : "'" + text + "': " + rule;
        }
        return "'" + text + "' is not implemented by the simulator (of the bulk copies it runs global to shared::cluster "
                            "with an mbarrier (and .multicast::cluster), shared::cta to shared::cluster with an mbarrier, "
                            "shared to global with .bulk_group, and the tensor copies)";
    }
}
