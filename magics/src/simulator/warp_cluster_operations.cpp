// warp_interpreter's part in thread-block clusters (issue 45 item 4, issue 46 item 1): the cluster's special
// registers, barrier.cluster.arrive/wait, mapa and getctarank, and the addresses of distributed shared memory
// (.shared::cluster, and generic addresses into another block's window). The blocks of a cluster run together on
// one host thread (block_clusters.cpp), so another block's shared memory is plain host memory here, read and
// written without locks; cluster_state.hpp says how addresses and the barrier's phases are kept.

#include "warp_interpreter.hpp"

#include "device_heap.hpp"
#include "warp_values.hpp"

namespace xcuda::sim
{
    namespace
    {
        constexpr std::uint64_t cluster_offset_mask = (std::uint64_t(1) << cluster_state::rank_shift) - 1;
    }

    // Every cluster register is the same for the block's lanes: one value, stride 0. Without a cluster launch each
    // block is a cluster of its own (%cluster_nctarank 1, %clusterid = %ctaid), as on a GPU.
    warp_interpreter::source warp_interpreter::cluster_special(special_register special, unsigned slot)
    {
        const unsigned* dims = m_launch.cluster;
        const unsigned* id = m_block.ctaid;
        const unsigned local[3] = {id[0] % dims[0], id[1] % dims[1], id[2] % dims[2]};
        std::uint64_t v = 0;
        switch (special)
        {
        case special_register::cluster_ctarank: v = local[0] + dims[0] * (local[1] + dims[1] * local[2]); break;
        case special_register::cluster_nctarank: v = dims[0] * dims[1] * dims[2]; break;
        case special_register::cluster_ctaid_x: v = local[0]; break;
        case special_register::cluster_ctaid_y: v = local[1]; break;
        case special_register::cluster_ctaid_z: v = local[2]; break;
        case special_register::cluster_nctaid_x: v = dims[0]; break;
        case special_register::cluster_nctaid_y: v = dims[1]; break;
        case special_register::cluster_nctaid_z: v = dims[2]; break;
        case special_register::clusterid_x: v = id[0] / dims[0]; break;
        case special_register::clusterid_y: v = id[1] / dims[1]; break;
        case special_register::clusterid_z: v = id[2] / dims[2]; break;
        case special_register::nclusterid_x: v = m_launch.grid[0] / dims[0]; break;
        case special_register::nclusterid_y: v = m_launch.grid[1] / dims[1]; break;
        case special_register::nclusterid_z: v = m_launch.grid[2] / dims[2]; break;
        case special_register::is_explicit_cluster: v = m_launch.explicit_cluster ? 1 : 0; break;
        default: break;
        }
        m_scratch[slot][0] = v;
        return {m_scratch[slot], 0};
    }

    std::uint32_t warp_interpreter::cluster_arrived() const noexcept
    {
        return m_block.cluster && m_cluster_phase == m_block.cluster->phase ? m_cluster_arrived : 0;
    }

    // barrier.cluster.arrive records the lanes in the current phase and goes on; barrier.cluster.wait passes once
    // the phase its lanes arrived in has completed (block_executor::complete_cluster_phase), else the warp yields.
    bool warp_interpreter::cluster_barrier(const instruction& in, std::uint32_t active)
    {
        cluster_state* cluster = m_block.cluster;
        const bool arrive = in.var == variant::cluster_arrive || in.var == variant::cluster_arrive_aligned;
        const bool aligned = in.var == variant::cluster_arrive_aligned || in.var == variant::cluster_wait_aligned;
        const std::string block = "block (" + std::to_string(m_block.ctaid[0]) + "," + std::to_string(m_block.ctaid[1]) +
                                  "," + std::to_string(m_block.ctaid[2]) + ")";
        if (!cluster)
        {
            throw sim_error(sim_error::kind::unsupported, "kernel '" + m_launch.kernel + "': " + where(in) +
                                                              " outside a cluster's run (the simulator's own error)");
        }
        if (aligned && active != m_live)
        {
            throw sim_error(sim_error::kind::barrier_divergence,
                            "kernel '" + m_launch.kernel + "': barrier divergence in " + block + ", warp " +
                                std::to_string(m_warp) + ": lanes " + hex(active) + " reached " + where(in) + " but lanes " +
                                hex(m_live & ~active) + " of the warp, not exited, did not (.aligned: every thread of the "
                                                        "warp runs it together)");
        }
        const std::uint32_t again = arrive ? active & m_cluster_pending : active & ~m_cluster_pending;
        if (again)
        {
            throw sim_error(sim_error::kind::illegal_instruction,
                            "kernel '" + m_launch.kernel + "', " + thread_name(static_cast<unsigned>(__builtin_ctz(again))) +
                                (arrive ? ": arrives at the cluster barrier again without waiting for its last arrival "
                                          "(barrier.cluster.arrive twice: PTX leaves it undefined), at "
                                        : ": waits at the cluster barrier without arriving first (barrier.cluster.wait "
                                          "needs a barrier.cluster.arrive before it), at ") +
                                where(in));
        }
        if (arrive)
        {
            if (m_cluster_phase != cluster->phase)
            {
                m_cluster_arrived = 0;
                m_cluster_phase = cluster->phase;
            }
            m_cluster_arrived |= active;
            m_cluster_pending |= active;
            ++cluster->arrivals;
            return false;
        }
        if (cluster->phase <= m_cluster_phase)
        {
            return true;
        }
        m_cluster_pending &= ~active;
        return false;
    }

    // mapa: a's place in the cluster (its block's rank and its offset there) moved to block `rank`; getctarank: the
    // rank. With .shared::cluster both take and give shared::cluster addresses, else generic ones.
    void warp_interpreter::cluster_address(const instruction& in, std::uint32_t active)
    {
        if (in.var == variant::isspacep)
        {
            source a = fetch(in.operands[1], 0);
            std::uint64_t* d = destination(in.operands[0]);
            XCUDA_SIM_LANES(active)
            {
                d[l] = in_space(in.space, a.p[a.stride * l], l) ? 1 : 0;
            }
            return;
        }
        const cluster_state* cluster = m_block.cluster;
        const bool mapa = in.var == variant::mapa;
        const bool generic = in.space == state_space::generic;
        source a = fetch(in.operands[1], 0);
        source r = mapa ? fetch(in.operands[2], 1) : source{a.p, 0};
        std::uint64_t* d = destination(in.operands[0]);
        const unsigned size = cluster ? cluster->size : 1;
        XCUDA_SIM_LANES(active)
        {
            const std::uint64_t address = a.p[a.stride * l];
            std::uint64_t owner = size, offset = 0;
            for (unsigned b = 0; cluster && generic && b < size; ++b)
            {
                auto base = reinterpret_cast<std::uintptr_t>(cluster->blocks[b]->shared);
                if (address >= base && address < base + cluster->blocks[b]->shared_bytes)
                {
                    owner = b;
                    offset = address - base;
                }
            }
            if (!generic)
            {
                owner = address >> cluster_state::rank_shift ? (address >> cluster_state::rank_shift) - 1 : m_block.cluster_rank;
                offset = address & cluster_offset_mask;
            }
            if (owner >= size || offset >= m_block.shared_bytes || !cluster)
            {
                fault(in, l, std::string(mapa ? "maps " : "asks the rank of ") + (generic ? "generic" : "shared::cluster") +
                                 " address " + hex(address) + ", which is not in the shared memory of any block of its cluster (" +
                                 std::to_string(size) + (size == 1 ? " block" : " blocks") + " of " +
                                 std::to_string(m_block.shared_bytes) + " bytes of shared memory each)");
            }
            if (!mapa)
            {
                d[l] = owner;
                continue;
            }
            const std::uint64_t rank = r.p[r.stride * l] & 0xffffffffu;
            if (rank >= size)
            {
                fault(in, l, "maps an address to the shared memory of block rank " + std::to_string(rank) +
                                 " of its cluster, which has " + std::to_string(size) + (size == 1 ? " block" : " blocks") +
                                 " (ranks 0 to " + std::to_string(size - 1) + ")");
            }
            std::uint64_t mapped = generic ? reinterpret_cast<std::uintptr_t>(cluster->blocks[rank]->shared) + offset
                                           : ((rank + 1) << cluster_state::rank_shift) | offset;
            d[l] = in.type.bits == 32 ? mapped & 0xffffffffu : mapped;
        }
    }

    // A generic address's space as the generic loads find it (warp_interpreter::translate): the block's window (for
    // .shared::cluster any window of the cluster), the lane's own local memory, else an allocation or the device heap.
    bool warp_interpreter::in_space(state_space space, std::uint64_t address, unsigned lane) const
    {
        auto within = [&](const std::uint8_t* base, std::size_t bytes) {
            return bytes && address >= reinterpret_cast<std::uintptr_t>(base) &&
                   address < reinterpret_cast<std::uintptr_t>(base) + bytes;
        };
        bool shared = within(m_block.shared, m_block.shared_bytes);
        for (unsigned b = 0; m_block.cluster && b < m_block.cluster->size; ++b)
        {
            shared = shared || (space == state_space::shared_cluster &&
                                within(m_block.cluster->blocks[b]->shared, m_block.cluster->blocks[b]->shared_bytes));
        }
        bool local = false;
        for (std::size_t k = 0; k < m_depth; ++k)
        {
            const std::size_t per_lane = m_frames[k].local.size() / 32;
            local = local || within(m_frames[k].local.data() + lane * per_lane, per_lane);
        }
        switch (space)
        {
        case state_space::shared:
        case state_space::shared_cluster: return shared;
        case state_space::local: return local;
        default:
            return !shared && !local && (m_launch.memory->containing(static_cast<std::uintptr_t>(address)) ||
                                         (m_launch.heap && m_launch.heap->in_arena(address)));
        }
    }

    std::uint8_t* warp_interpreter::cluster_shared(const instruction& in, std::uint64_t address, unsigned lane, unsigned bytes,
                                                   bool write)
    {
        const cluster_state* cluster = m_block.cluster;
        const std::uint64_t owner = address >> cluster_state::rank_shift ? (address >> cluster_state::rank_shift) - 1
                                                                         : m_block.cluster_rank;
        const std::uint64_t offset = address & cluster_offset_mask;
        const unsigned size = cluster ? cluster->size : 1;
        const std::string access = std::string(write ? "writes " : "reads ") + std::to_string(bytes) +
                                   " bytes at shared::cluster address " + hex(address);
        if (owner >= size || address >> 32)
        {
            fault(in, lane, access + ", in block rank " + std::to_string(owner) + " of a cluster of " + std::to_string(size) +
                                (size == 1 ? " block" : " blocks"));
        }
        if (owner == m_block.cluster_rank)
        {
            return translate(state_space::shared, offset, lane, bytes, write, in, false);  // its own: the race check too
        }
        const block_state& block = *cluster->blocks[owner];
        if (cluster->exited[owner])
        {
            fault(in, lane, access + ", in the shared memory of block rank " + std::to_string(owner) +
                                " of the cluster, which has exited (a block's shared memory ends with it: a cluster.sync() "
                                "before the end keeps it)");
        }
        if (offset + bytes > block.shared_bytes)
        {
            fault(in, lane, access + ", outside the " + std::to_string(block.shared_bytes) +
                                " bytes of shared memory of block rank " + std::to_string(owner) + " of the cluster");
        }
        if (block.shared_checks)
        {
            check_remote_shared(*cluster->blocks[owner], in, offset, bytes, lane, write);
        }
        return block.shared + offset;
    }

    // A generic address no allocation holds: another block's window of this cluster, or near one (a fault naming it),
    // else nullptr (the caller's fault). Own-window addresses never come here.
    std::uint8_t* warp_interpreter::cluster_generic(const instruction& in, std::uint64_t address, unsigned lane, unsigned bytes,
                                                    bool write)
    {
        const cluster_state& cluster = *m_block.cluster;
        const std::string access = std::to_string(bytes) + " bytes at generic address " + hex(address);
        auto whose = [&](unsigned b) {
            return "the shared memory of block rank " + std::to_string(b) + " of the cluster (" +
                   std::to_string(cluster.blocks[b]->shared_bytes) + " bytes)";
        };
        // The windows may lie next to each other in host memory: one that holds the address first, then one it is near.
        for (int near = 0; near < 2; ++near)
        {
            for (unsigned b = 0; b < cluster.size; ++b)
            {
                const block_state& block = *cluster.blocks[b];
                auto base = reinterpret_cast<std::uintptr_t>(block.shared);
                if (!block.shared_bytes || address < base || address >= base + block.shared_bytes + (near ? 4096 : 0))
                {
                    continue;
                }
                if (address + bytes > base + block.shared_bytes)
                {
                    fault(in, lane, "accesses " + access + ", " + std::to_string(address + bytes - base - block.shared_bytes) +
                                        " bytes past the end of " + whose(b));
                }
                if (cluster.exited[b])
                {
                    fault(in, lane, "accesses " + access + ", in " + whose(b) +
                                        ", which has exited (a block's shared memory ends with it: a cluster.sync() before "
                                        "the end keeps it)");
                }
                if (block.shared_checks)
                {
                    check_remote_shared(*cluster.blocks[b], in, address - base, bytes, lane, write);
                }
                return block.shared + (address - base);
            }
        }
        return nullptr;
    }
    shared_place warp_interpreter::shared_window(const instruction& in, const operand& o, unsigned lane, unsigned bytes,
                                                 unsigned align, bool remote)
    {
        const cluster_state* cluster = m_block.cluster;
        std::uint64_t a = o.value;
        if (o.reg >= 0)
        {
            a += m_registers[static_cast<std::size_t>(o.reg) * 32 + lane];
        }
        else if (o.symbol >= 0)
        {
            a += symbol_value(m_launch.program->symbols[static_cast<std::size_t>(o.symbol)], lane);
        }
        if (in.space == state_space::generic || !cluster || !(a >> cluster_state::rank_shift))
        {
            return {&m_block, m_block.cluster_rank, shared_operand(in, o, lane, bytes, align)};
        }
        const std::uint64_t rank = (a >> cluster_state::rank_shift) - 1;
        const std::uint64_t offset = a & cluster_offset_mask;
        const unsigned size = cluster->size;
        const std::string at = "uses shared::cluster address " + hex(a);
        if (!remote)
        {
            fault(in, lane, at + " (block rank " + std::to_string(rank) + " of its cluster): this operand is the executing "
                                 "block's own shared memory (.shared::cta; PTX has no form of it for another block)");
        }
        if (a >> 32)
        {
            fault(in, lane, at + ", which is no .shared::cluster address (they are 32 bits: a generic pointer? "
                                 "__cvta_generic_to_shared or mapa.shared::cluster makes one)");
        }
        if (rank >= size)
        {
            fault(in, lane, at + ", which names block rank " + std::to_string(rank) + " of a cluster of " +
                                std::to_string(size) + (size == 1 ? " block" : " blocks") + " (ranks 0 to " +
                                std::to_string(size - 1) + "): another block's address comes from mapa.shared::cluster");
        }
        block_state& block = *cluster->blocks[rank];
        if (cluster->exited[rank])
        {
            fault(in, lane, at + ", in the shared memory of block rank " + std::to_string(rank) +
                                " of the cluster, which has exited (a cluster.sync() before the end keeps it)");
        }
        if (offset % align != 0)
        {
            fault(in, lane, at + ", which is not aligned to " + std::to_string(align) + " bytes");
        }
        if (offset + bytes > block.shared_bytes)
        {
            fault(in, lane, at + ": " + std::to_string(bytes) + " bytes there lie outside the " +
                                std::to_string(block.shared_bytes) + " bytes of shared memory of block rank " +
                                std::to_string(rank) + " of the cluster");
        }
        return {&block, static_cast<unsigned>(rank), static_cast<std::uint32_t>(offset)};
    }
}
