#include "async_decoder.hpp"

#include <set>

#include "tensor_copy_decoder.hpp"

namespace xcuda::sim
{
    namespace
    {
        // Memory-order and scope qualifiers, cache hints: nothing in a machine that runs one warp at a time.
        bool ignored(const std::string& m)
        {
            static const std::set<std::string> names = {"relaxed", "acquire", "release", "cta", "gpu", "sys", "ca", "cg",
                                                        "b64", "aligned", "sync"};
            return names.count(m) || m.rfind("L2::", 0) == 0 || m.rfind("L1::", 0) == 0;
        }

        // .shared / .shared::cta (the CTA's window), and for cp.async.bulk .shared::cluster (a CTA's own
        // window is its part of the cluster's); else the address is generic.
        bool read_space(const std::string& m, instruction& in, bool cluster_ok)
        {
            if (m == "shared" || m == "shared::cta" || (cluster_ok && m == "shared::cluster"))
            {
                in.space = state_space::shared;
                return true;
            }
            return false;
        }

        std::string not_known(const std::string& text, const char* family)
        {
            return "'" + text + "' is not a form of " + family + " the simulator knows";
        }

        // cp.async.{ca,cg}.shared.global [d], [s], cp-size{, src-size | ignore-src}{, cache-policy};
        // cp.async.commit_group; cp.async.wait_group N; cp.async.wait_all;
        // cp.async.mbarrier.arrive{.noinc}.shared.b64 [mbar];
        // cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [d], [s], size, [mbar]{, policy}.
        std::string decode_copy(const std::vector<std::string>& parts, const std::string& text, instruction& in)
        {
            in.op = opcode::async_copy;
            if (parts.size() < 2 || parts[1] != "async")
            {
                return "the instruction '" + text + "' is not implemented by the simulator";
            }
            const std::string second = parts.size() > 2 ? parts[2] : "";
            if (text == "cp.async.commit_group" || text == "cp.async.wait_all")
            {
                in.var = text == "cp.async.wait_all" ? variant::cp_async_wait_all : variant::cp_async_commit;
                return in.operand_count == 0 ? "" : not_known(text, "cp.async");
            }
            if (text == "cp.async.wait_group")
            {
                in.var = variant::cp_async_wait_group;
                return in.operand_count == 1 && in.operands[0].what == operand::kind::imm ? "" : not_known(text, "cp.async");
            }
            bool hint = false, complete_tx = false, global = false, multicast = false;
            int shared_spaces = 0;  // cp.async.bulk.shared::cluster.shared::cta: a copy between CTAs' windows
            std::size_t first = 2;
            if (second == "mbarrier")
            {
                in.var = variant::cp_async_arrive;
                first = 4;
                if (parts.size() < 4 || parts[3] != "arrive")
                {
                    return not_known(text, "cp.async.mbarrier.arrive");
                }
            }
            else if (second == "bulk")
            {
                in.var = variant::cp_async_bulk;
                first = 3;
            }
            else if (second == "ca" || second == "cg")
            {
                in.var = variant::cp_async;
            }
            else
            {
                return "'" + text + "' is not implemented by the simulator (cp.async, its groups and the bulk copy from "
                                    "global to shared memory are)";
            }
            for (std::size_t k = first; k < parts.size(); ++k)
            {
                const std::string& m = parts[k];
                if (m == "noinc" && in.var == variant::cp_async_arrive)
                {
                    in.var = variant::cp_async_arrive_noinc;
                }
                else if (m == "L2::cache_hint")
                {
                    hint = true;
                }
                else if (m == "global")
                {
                    global = true;
                }
                else if (m == "mbarrier::complete_tx::bytes" && in.var == variant::cp_async_bulk)
                {
                    complete_tx = true;
                }
                else if (m == "multicast::cluster" && in.var == variant::cp_async_bulk)
                {
                    multicast = true;
                }
                else if (read_space(m, in, in.var == variant::cp_async_bulk))
                {
                    ++shared_spaces;
                }
                else if (!ignored(m))
                {
                    return "the modifier ." + m + " of '" + text + "' is not implemented by the simulator";
                }
            }
            if (hint)
            {
                --in.operand_count;  // the cache policy: a hint
            }
            auto address = [&](unsigned k) { return in.operand_count > k && in.operands[k].what == operand::kind::address; };
            switch (in.var)
            {
            case variant::cp_async_arrive:
            case variant::cp_async_arrive_noinc:
                return in.operand_count == 1 && address(0) ? "" : not_known(text, "cp.async.mbarrier.arrive");
            case variant::cp_async_bulk:
                in.bulk_form = multicast ? bulk_multicast : global ? 0 : bulk_to_cluster;
                if (!complete_tx || global == (shared_spaces == 2) || (multicast && !global) ||
                    in.operand_count != (multicast ? 5 : 4) || !address(0) || !address(1) || !address(3) ||
                    (multicast && in.operands[4].what != operand::kind::reg && in.operands[4].what != operand::kind::imm))
                {
                    return "'" + text + "' is not implemented by the simulator (of the bulk copies, it runs "
                                        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{.multicast::cluster} "
                                        "[dst], [src], size, [mbar]{, ctaMask} and "
                                        "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src], size, [mbar])";
                }
                return "";
            default:
                if (!global || in.space != state_space::shared || (in.operand_count != 3 && in.operand_count != 4) ||
                    !address(0) || !address(1) || in.operands[2].what != operand::kind::imm)
                {
                    return not_known(text, "cp.async");
                }
                {
                    std::uint64_t size = in.operands[2].value;
                    if (size != 4 && size != 8 && size != 16)
                    {
                        return "'" + text + "': a cp-size of " + std::to_string(size) + " (PTX: 4, 8 or 16 bytes)";
                    }
                    if (second == "cg" && size != 16)
                    {
                        return "'" + text + "': cp.async.cg copies 16 bytes (PTX)";
                    }
                }
                return "";
            }
        }

        // mbarrier.op{.sem}{.scope}{.space}.b64 ...: the operation and its operands' shapes.
        std::string decode_barrier(const std::vector<std::string>& parts, const std::string& text, instruction& in)
        {
            in.op = opcode::mbarrier;
            in.type = ptx_type{'b', 64};
            const std::string operation = parts.size() > 1 ? parts[1] : "";
            struct form
            {
                variant var;
                unsigned min_operands, max_operands;
            };
            static const std::vector<std::pair<std::string, form>> forms = {
                {"init", {variant::mbar_init, 2, 2}},
                {"arrive", {variant::mbar_arrive, 2, 3}},
                {"arrive_drop", {variant::mbar_arrive_drop, 2, 3}},
                {"expect_tx", {variant::mbar_expect_tx, 2, 2}},
                {"complete_tx", {variant::mbar_complete_tx, 2, 2}},
                {"test_wait", {variant::mbar_test_wait, 3, 3}},
                {"try_wait", {variant::mbar_try_wait, 3, 4}},
                {"pending_count", {variant::mbar_pending_count, 2, 2}},
                {"inval", {variant::mbar_inval, 1, 1}},
            };
            const form* f = nullptr;
            for (const auto& [name, one] : forms)
            {
                f = name == operation ? &one : f;
            }
            if (!f)
            {
                return "the instruction '" + text + "' is not implemented by the simulator";
            }
            in.var = f->var;
            for (std::size_t k = 2; k < parts.size(); ++k)
            {
                const std::string& m = parts[k];
                if (m == "parity" && (in.var == variant::mbar_test_wait || in.var == variant::mbar_try_wait))
                {
                    in.var = in.var == variant::mbar_test_wait ? variant::mbar_test_wait_parity : variant::mbar_try_wait_parity;
                }
                else if (m == "expect_tx" && in.var == variant::mbar_arrive)
                {
                    in.var = variant::mbar_arrive_expect_tx;
                }
                else if (m == "noComplete" && (in.var == variant::mbar_arrive || in.var == variant::mbar_arrive_drop))
                {
                    in.no_complete = true;
                }
                else if (m == "cluster")
                {
                    // the scope: with a .shared::cta address the barrier is the CTA's own
                }
                else if (m == "shared::cluster")
                {
                    in.space = state_space::shared_cluster;  // any CTA's barrier of the cluster (a mapa'd address)
                }
                else if (!read_space(m, in, false) && !ignored(m))
                {
                    return "the modifier ." + m + " of '" + text + "' is not implemented by the simulator";
                }
            }
            const bool remote_form = in.var == variant::mbar_arrive || in.var == variant::mbar_arrive_drop ||
                                     in.var == variant::mbar_arrive_expect_tx || in.var == variant::mbar_expect_tx ||
                                     in.var == variant::mbar_complete_tx;
            if (in.space == state_space::shared_cluster && !remote_form)
            {
                return "'" + text + "': PTX has no .shared::cluster form of mbarrier." + operation +
                       " (init, the waits, pending_count and inval take the executing CTA's own barrier, .shared::cta)";
            }
            if (in.space == state_space::shared_cluster && in.var != variant::mbar_expect_tx &&
                in.var != variant::mbar_complete_tx && in.operand_count > 0 && in.operands[0].what != operand::kind::sink)
            {
                return "'" + text + "': an arrive on a .shared::cluster barrier returns no state (PTX: its destination is the sink _)";
            }
            if (in.operand_count < f->min_operands || in.operand_count > f->max_operands)
            {
                return not_known(text, "mbarrier");
            }
            // The barrier's address: the first operand, or the second after a destination (a state, a predicate).
            const bool has_destination = in.var != variant::mbar_init && in.var != variant::mbar_expect_tx &&
                                         in.var != variant::mbar_complete_tx && in.var != variant::mbar_inval &&
                                         in.var != variant::mbar_pending_count;
            if (in.var == variant::mbar_pending_count)
            {
                return in.operands[0].what == operand::kind::reg ? "" : not_known(text, "mbarrier.pending_count");
            }
            if (in.operands[has_destination ? 1 : 0].what != operand::kind::address)
            {
                return not_known(text, "mbarrier");
            }
            if (in.var == variant::mbar_arrive_expect_tx && in.operand_count != 3)
            {
                return not_known(text, "mbarrier.arrive.expect_tx");
            }
            if (in.no_complete && (in.operand_count != 3 || in.space == state_space::shared_cluster))
            {
                return "'" + text + "': .noComplete takes a count and the CTA's own barrier (PTX: "
                                    "mbarrier.arrive{_drop}.noComplete{.release}{.cta}{.shared{::cta}}.b64 state, [addr], count)";
            }
            return "";
        }
    }

    bool async_decoder::decode(const std::vector<std::string>& parts, const std::string& text, instruction& in,
                               std::string& refusal)
    {
        if (tensor_copy_decoder::owns(parts))
        {
            refusal = tensor_copy_decoder::decode(parts, text, in);  // TMA, the bulk copies to global memory, prefetches
            return true;
        }
        if (parts[0] == "cp")
        {
            refusal = decode_copy(parts, text, in);
            return true;
        }
        if (parts[0] == "mbarrier")
        {
            refusal = decode_barrier(parts, text, in);
            return true;
        }
        return false;
    }
}
