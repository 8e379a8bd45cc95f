#include "cluster_decoder.hpp"

namespace xcuda::sim
{
    namespace
    {
        // barrier.cluster.arrive{.release|.relaxed}{.aligned}; barrier.cluster.wait{.acquire}{.aligned}. The memory
        // orders change nothing here (a cluster's blocks run on one host thread, warp after warp).
        std::string decode_cluster_barrier(const std::vector<std::string>& parts, const std::string& text, instruction& in)
        {
            in.op = opcode::cluster_barrier;
            const bool arrive = parts.size() > 2 && parts[2] == "arrive";
            const bool wait = parts.size() > 2 && parts[2] == "wait";
            bool aligned = false;
            for (std::size_t k = 3; k < parts.size(); ++k)
            {
                const std::string& m = parts[k];
                if (m == "aligned")
                {
                    aligned = true;
                }
                else if (!((arrive && (m == "release" || m == "relaxed")) || (wait && m == "acquire")))
                {
                    return "the modifier ." + m + " of '" + text + "' is not implemented by the simulator";
                }
            }
            if ((!arrive && !wait) || in.operand_count != 0)
            {
                return "'" + text + "' is not a cluster barrier the simulator knows (barrier.cluster.arrive, "
                                    "barrier.cluster.wait)";
            }
            in.var = arrive ? (aligned ? variant::cluster_arrive_aligned : variant::cluster_arrive)
                            : (aligned ? variant::cluster_wait_aligned : variant::cluster_wait);
            return "";
        }

        // mapa{.shared::cluster}.type d, a, rank; getctarank{.shared::cluster}.type d, a. Without .shared::cluster the
        // addresses are generic (the block windows' host addresses); with it, shared::cluster addresses.
        std::string decode_cluster_address(const std::vector<std::string>& parts, const std::string& text, instruction& in)
        {
            in.op = opcode::cluster_address;
            in.var = parts[0] == "mapa" ? variant::mapa : variant::getctarank;
            in.space = state_space::generic;
            bool typed = false;
            for (std::size_t k = 1; k < parts.size(); ++k)
            {
                const std::string& m = parts[k];
                if (m == "shared::cluster")
                {
                    in.space = state_space::shared_cluster;
                }
                else if (m == "u32" || m == "u64" || m == "b32" || m == "b64")
                {
                    in.type = {'u', static_cast<std::uint8_t>(m[1] == '3' ? 32 : 64)};
                    typed = true;
                }
                else
                {
                    return "the modifier ." + m + " of '" + text + "' is not implemented by the simulator";
                }
            }
            const unsigned operands = in.var == variant::mapa ? 3 : 2;
            if (!typed || in.operand_count != operands || in.operands[0].what != operand::kind::reg)
            {
                return "'" + text + "' is not a " + parts[0] + " the simulator knows (" + parts[0] +
                       "{.shared::cluster}.{u32,u64} d, a" + (in.var == variant::mapa ? ", rank)" : ")");
            }
            return "";
        }

        // isspacep.space p, a: whether the generic address a is in that space. .const and .param are not kept apart
        // from global memory by the simulator's addresses, so they are refused.
        std::string decode_space_query(const std::vector<std::string>& parts, const std::string& text, instruction& in)
        {
            in.op = opcode::cluster_address;
            in.var = variant::isspacep;
            const std::string space = parts.size() == 2 ? parts[1] : "";
            if (space == "global" || space == "local" || space == "shared" || space == "shared::cta" ||
                space == "shared::cluster")
            {
                in.space = space == "global"            ? state_space::global
                           : space == "local"           ? state_space::local
                           : space == "shared::cluster" ? state_space::shared_cluster
                                                        : state_space::shared;
                in.type = {'p', 1};
                return in.operand_count == 2 && in.operands[0].what == operand::kind::reg
                           ? ""
                           : "'" + text + "' is not an isspacep the simulator knows (isspacep.space p, a)";
            }
            return "'" + text + "' is not implemented by the simulator (isspacep of .global, .shared, .shared::cta, "
                                ".shared::cluster and .local are)";
        }
    }

    bool cluster_decoder::decode(const std::vector<std::string>& parts, const std::string& text, instruction& in,
                                 std::string& refusal)
    {
        if (parts[0] == "barrier" && parts.size() > 1 && parts[1] == "cluster")
        {
            refusal = decode_cluster_barrier(parts, text, in);
            return true;
        }
        if (parts[0] == "isspacep")
        {
            refusal = decode_space_query(parts, text, in);
            return true;
        }
        if (parts[0] == "mapa" || parts[0] == "getctarank")
        {
            refusal = decode_cluster_address(parts, text, in);
            return true;
        }
        return false;
    }
}
