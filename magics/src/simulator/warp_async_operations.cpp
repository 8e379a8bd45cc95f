// warp_interpreter's asynchronous copies and their barriers (issue 46): cp.async with its commit groups,
// cp.async.bulk, and mbarrier. The model (docs/simulator.md, "Asynchronous copies and mbarriers"):
// - a cp.async reads its source when it is issued and writes shared memory when the thread waits for its
//   group (wait_group, wait_all) or hands it to an mbarrier (cp.async.mbarrier.arrive): a read of the
//   destination before the wait sees the old bytes, the bug a GPU may hide by finishing early;
// - a bulk copy lands at issue and completes its transaction bytes on the mbarrier then;
// - an mbarrier is 8 bytes of the block's shared memory holding its state (below); a wait whose phase has
//   not completed makes the warp yield, so that the block's other warps run and arrive.
// Kept apart from warp_operations.cpp: nothing here is on the path of ordinary instructions.

#include <cstdint>
#include <cstring>

#include "sim_checker.hpp"
#include "warp_interpreter.hpp"
#include "warp_values.hpp"

namespace xcuda::sim
{
    namespace
    {
        // An mbarrier's 64 bits here (the PTX ISA leaves the layout opaque): arrivals pending in the current
        // phase (bits 0-19), the expected count each phase starts with (20-39), the transaction count, signed
        // (40-60), the phase's parity (62) and whether it is initialised (63).
        struct barrier_state
        {
            bool valid = false;
            unsigned phase = 0;
            std::int64_t pending = 0;
            std::int64_t expected = 0;
            std::int64_t tx = 0;

            static barrier_state of(std::uint64_t w)
            {
                barrier_state b;
                b.valid = (w >> 63) & 1;
                b.phase = (w >> 62) & 1;
                b.pending = static_cast<std::int64_t>(w & 0xfffff);
                b.expected = static_cast<std::int64_t>((w >> 20) & 0xfffff);
                std::int64_t tx = static_cast<std::int64_t>((w >> 40) & 0x1fffff);
                b.tx = tx >= (1 << 20) ? tx - (1 << 21) : tx;
                return b;
            }
            std::uint64_t word() const
            {
                return (static_cast<std::uint64_t>(valid) << 63) | (static_cast<std::uint64_t>(phase) << 62) |
                       (static_cast<std::uint64_t>(tx) & 0x1fffff) << 40 | (static_cast<std::uint64_t>(expected) & 0xfffff) << 20 |
                       (static_cast<std::uint64_t>(pending) & 0xfffff);
            }
        };

        const std::int64_t max_count = (1 << 20) - 1;  // PTX: counts and transaction counts within +-(2^20 - 1)
    }

    void warp_interpreter::async_copy_operation(const instruction& in, std::uint32_t active)
    {
        if (in.var >= variant::bulk_tensor_load && in.var <= variant::bulk_wait)
        {
            tensor_copy_operation(in, active);  // TMA and the bulk copies to global memory: warp_tensor_operations.cpp
            return;
        }
        XCUDA_SIM_LANES(active)
        {
            switch (in.var)
            {
            case variant::cp_async:
                issue_copy(in, l);
                break;
            case variant::cp_async_commit:
                ++m_groups[l];
                break;
            case variant::cp_async_wait_group:
            {
                // wait until at most N of the most recent committed groups are pending; uncommitted copies stay
                std::uint64_t n = in.operands[0].value;
                complete_copies(l, n >= m_groups[l] ? 0 : m_groups[l] - static_cast<std::uint32_t>(n));
                break;
            }
            case variant::cp_async_wait_all:
                ++m_groups[l];  // wait_all is commit_group and wait_group 0
                complete_copies(l, m_groups[l]);
                break;
            case variant::cp_async_bulk:
                bulk_copy(in, l);
                break;
            default:
            {
                // cp.async.mbarrier.arrive: the mbarrier tracks every earlier cp.async of the thread, which are
                // completed here. Without .noinc the pending count goes up by one and the copies' arrive takes it
                // down again; with .noinc that arrive counts as one of the phase's arrivals.
                std::uint64_t& word = mbarrier_word(in, in.operands[0], l);
                complete_copies(l, 0xffffffffu);
                mbarrier_change(in, l, word, in.var == variant::cp_async_arrive_noinc ? 1 : 0, 0, 0);
                break;
            }
            }
        }
    }

    // The shared address of operand o for `lane`, checked: inside the block's window and aligned.
    std::uint32_t warp_interpreter::shared_operand(const instruction& in, const operand& o, unsigned lane, unsigned bytes,
                                                   unsigned align)
    {
        std::uint64_t a = o.value;
        if (o.reg >= 0)
        {
            a += m_registers[static_cast<std::size_t>(o.reg) * 32 + lane];
        }
        else if (o.symbol >= 0)
        {
            a += symbol_value(m_launch.program->symbols[static_cast<std::size_t>(o.symbol)], lane);
        }
        auto shared = reinterpret_cast<std::uintptr_t>(m_block.shared);
        if (in.space == state_space::generic && m_block.shared_bytes && a >= shared && a < shared + m_block.shared_bytes)
        {
            a -= shared;  // a generic address of the block's shared window
        }
        else if (in.space == state_space::generic)
        {
            fault(in, lane, "uses generic address " + hex(a) + ", which is not in the block's shared memory (an mbarrier lives there)");
        }
        if (a % align != 0)
        {
            fault(in, lane, "uses shared address " + hex(a) + ", which is not aligned to " + std::to_string(align) + " bytes");
        }
        if (a + bytes > m_block.shared_bytes || a + bytes < a)
        {
            fault(in, lane, "uses " + std::to_string(bytes) + " bytes at shared address " + hex(a) + ", outside the block's " +
                                std::to_string(m_block.shared_bytes) + " bytes of shared memory");
        }
        return static_cast<std::uint32_t>(a);
    }

    // cp.async [d], [s], cp-size{, src-size | ignore-src}: the first src-size bytes of the source (checked
    // now, like a load), the rest zeros, kept until the thread waits for the copy.
    void warp_interpreter::issue_copy(const instruction& in, unsigned lane)
    {
        async_copy copy;
        copy.bytes = static_cast<std::uint8_t>(in.operands[2].value);
        copy.shared = shared_operand(in, in.operands[0], lane, copy.bytes, copy.bytes);
        copy.group = m_groups[lane];
        copy.at = &in;
        std::uint64_t source_bytes = copy.bytes;
        if (in.operand_count == 4)
        {
            const operand& extra = in.operands[3];
            source s = fetch(extra, 0);
            std::uint64_t v = s.p[s.stride * lane];
            const std::vector<std::uint8_t>& widths = m_function->register_bits;
            bool predicate = extra.what == operand::kind::reg && static_cast<std::size_t>(extra.reg) < widths.size() &&
                             widths[static_cast<std::size_t>(extra.reg)] == 1;
            if (predicate)
            {
                source_bytes = ((v & 1) != extra.negate) ? 0 : copy.bytes;  // ignore-src: zeros
            }
            else if ((source_bytes = v & 0xffffffffu) > copy.bytes)
            {
                fault(in, lane, "gives a src-size of " + std::to_string(source_bytes) + " bytes, over its cp-size of " +
                                    std::to_string(copy.bytes) + " (PTX: src-size <= cp-size)");
            }
        }
        if (source_bytes)
        {
            std::uint64_t a = in.operands[1].value;
            if (in.operands[1].reg >= 0)
            {
                a += m_registers[static_cast<std::size_t>(in.operands[1].reg) * 32 + lane];
            }
            if (a % copy.bytes != 0)
            {
                fault(in, lane, "reads global address " + hex(a) + ", which is not aligned to its cp-size of " +
                                    std::to_string(copy.bytes) + " bytes");
            }
            bool whole = (source_bytes & (source_bytes - 1)) == 0;  // 1, 2, 4, 8, 16: one check; else byte by byte
            for (std::uint64_t k = 0; k < source_bytes; k += whole ? source_bytes : 1)
            {
                unsigned n = whole ? static_cast<unsigned>(source_bytes) : 1u;
                std::memcpy(copy.data + k, translate(state_space::global, a + k, lane, n, false, in, false), n);
            }
        }
        if (m_block.shared_checks)  // the async-copy check marks the destination pending (async_hazard_check)
        {
            m_block.shared_checks->copy_issued(
                memory_access{copy.shared, copy.bytes, m_warp, lane, access_kind::store, &in, m_function, m_launch.warp_steps});
        }
        m_copies[lane].push_back(copy);
    }

    // Writes the lane's copies of the groups before `before_group` into shared memory (checked by the race
    // check as writes of the cp.async that issued them), in issue order.
    void warp_interpreter::complete_copies(unsigned lane, std::uint32_t before_group)
    {
        std::vector<async_copy>& copies = m_copies[lane];
        std::size_t kept = 0;
        for (std::size_t k = 0; k < copies.size(); ++k)
        {
            const async_copy& c = copies[k];
            if (c.group >= before_group)
            {
                copies[kept++] = c;
                continue;
            }
            if (m_block.shared_checks)  // landed: no longer pending (async_hazard_check), before the landing's own write
            {
                m_block.shared_checks->copy_landed(
                    memory_access{c.shared, c.bytes, m_warp, lane, access_kind::store, c.at, m_function, m_launch.warp_steps});
            }
            std::memcpy(translate(state_space::shared, c.shared, lane, c.bytes, true, *c.at, false), c.data, c.bytes);
        }
        copies.resize(kept);
    }

    // cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{.multicast::cluster} [d], [s], size, [mbar]
    // {, ctaMask}, and cp.async.bulk.shared::cluster.shared::cta... (the source in the CTA's own shared memory): size
    // bytes (a multiple of 16, both addresses 16-aligned), copied now into each destination block (the ctaMask's, else
    // the one d names: warp_cluster_copies.cpp); then `size` transaction bytes complete on each one's mbarrier.
    void warp_interpreter::bulk_copy(const instruction& in, unsigned lane)
    {
        source s = fetch(in.operands[2], 0);
        std::uint64_t size = s.p[s.stride * lane] & 0xffffffffu;
        if (size == 0 || size % 16 != 0)
        {
            fault(in, lane, "copies " + std::to_string(size) + " bytes (PTX: a multiple of 16)");
        }
        const shared_place to = shared_window(in, in.operands[0], lane, static_cast<unsigned>(size), 16, true);
        const shared_place bar = shared_window(in, in.operands[3], lane, 8, 8, true);
        const void* from = nullptr;
        if (in.bulk_form == bulk_to_cluster)
        {
            std::uint32_t own = shared_operand(in, in.operands[1], lane, static_cast<unsigned>(size), 16);
            if (m_block.shared_checks)
            {
                check_shared(in, own, static_cast<unsigned>(size), lane, false);
            }
            from = m_block.shared + own;
        }
        else
        {
            std::uint64_t address = in.operands[1].value;
            if (in.operands[1].reg >= 0)
            {
                address += m_registers[static_cast<std::size_t>(in.operands[1].reg) * 32 + lane];
            }
            if (address % 16 != 0)
            {
                fault(in, lane, "reads global address " + hex(address) + ", which is not aligned to 16 bytes");
            }
            if (!m_launch.memory->find(static_cast<std::uintptr_t>(address), size))
            {
                fault(in, lane, "reads " + std::to_string(size) + " bytes at global address " + hex(address) + ", " +
                                    m_launch.memory->describe(static_cast<std::uintptr_t>(address), size) + argument_near(address));
            }
            from = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(address));
        }
        const std::uint16_t mask = destinations(in, lane, to, bar, in.bulk_form == bulk_multicast ? 4 : -1);
        for (unsigned rank = 0; rank < 16; ++rank)
        {
            if ((mask >> rank) & 1)
            {
                land_shared(in, lane, cluster_member(rank), to.offset, static_cast<unsigned>(size), from);
            }
        }
        for (unsigned rank = 0; rank < 16; ++rank)
        {
            if ((mask >> rank) & 1)
            {
                complete_bytes(in, lane, rank, bar.offset, size);
            }
        }
    }

    // The 8 bytes of the mbarrier that operand o names, for `lane`: in the block's shared memory, aligned.
    std::uint64_t& warp_interpreter::mbarrier_word(const instruction& in, const operand& o, unsigned lane)
    {
        std::uint32_t a = shared_operand(in, o, lane, 8, 8);
        return *reinterpret_cast<std::uint64_t*>(m_block.shared + a);
    }

    // Arrivals (and drops of the expected count) and transaction bytes on an initialised mbarrier; when no
    // arrival and no byte is left pending, its phase completes: the parity flips, the next phase expects the
    // expected count, and a new race-check interval begins (the barrier orders the block's accesses).
    void warp_interpreter::mbarrier_change(const instruction& in, unsigned lane, std::uint64_t& word, int arrivals, int drops,
                                           std::int64_t tx, block_state* owner)
    {
        block_state& block = owner ? *owner : m_block;
        barrier_state b = barrier_state::of(word);
        if (!b.valid)
        {
            throw sim_error(sim_error::kind::launch_failed,
                            "kernel '" + m_launch.kernel + "', " + thread_name(lane) +
                                ": an mbarrier that is not initialised (no mbarrier.init, or after mbarrier.inval; "
                                "cuda::barrier needs init() before use), at " + where(in));
        }
        if (arrivals > b.pending)
        {
            throw sim_error(sim_error::kind::launch_failed,
                            "kernel '" + m_launch.kernel + "', " + thread_name(lane) + ": " + std::to_string(arrivals) +
                                " arrival(s) at an mbarrier whose phase has " + std::to_string(b.pending) +
                                " pending (more threads arrive than the barrier was initialised for), at " + where(in));
        }
        b.pending -= arrivals;
        b.expected -= drops;
        b.tx += tx;
        if (b.tx > max_count || b.tx < -max_count)
        {
            throw sim_error(sim_error::kind::launch_failed,
                            "kernel '" + m_launch.kernel + "', " + thread_name(lane) + ": an mbarrier's transaction count of " +
                                std::to_string(b.tx) + " bytes (PTX: within +-(2^20 - 1)), at " + where(in));
        }
        if (b.pending == 0 && b.tx == 0 && in.no_complete)
        {
            throw sim_error(sim_error::kind::launch_failed,
                            "kernel '" + m_launch.kernel + "', " + thread_name(lane) + ": an mbarrier.arrive.noComplete "
                                "that completes the barrier's phase (PTX leaves it undefined: .noComplete is for arrivals "
                                "that leave others pending), at " + where(in));
        }
        if (b.pending == 0 && b.tx == 0)
        {
            b.phase ^= 1;
            b.pending = b.expected;
            if (block.sync_checks)  // a phase completed: the threads that waited for it are ordered after (in its block)
            {
                block.sync_checks->synchronised(sync_scope::block, m_warp);
            }
        }
        word = b.word();
        ++block.mbarrier_changes;
    }

    bool warp_interpreter::mbarrier_operation(const instruction& in, std::uint32_t active)
    {
        const bool has_destination = in.var != variant::mbar_init && in.var != variant::mbar_expect_tx &&
                                     in.var != variant::mbar_complete_tx && in.var != variant::mbar_inval;
        std::uint64_t* d = has_destination ? destination(in.operands[0]) : nullptr;
        if (in.var == variant::mbar_pending_count)
        {
            source state = fetch(in.operands[1], 0);
            XCUDA_SIM_LANES(active)
            {
                d[l] = static_cast<std::uint64_t>(barrier_state::of(state.p[state.stride * l]).pending);
            }
            return false;
        }
        const operand& address = in.operands[has_destination ? 1 : 0];
        const bool has_value = in.operand_count > (has_destination ? 2 : 1);
        source value = has_value ? fetch(in.operands[has_destination ? 2 : 1], 1) : source{nullptr, 0};
        bool yield = false;
        const bool remote = in.space == state_space::shared_cluster;  // arrive, expect_tx, complete_tx of any block's barrier
        XCUDA_SIM_LANES(active)
        {
            const shared_place place = shared_window(in, address, l, 8, 8, remote);
            std::uint64_t& word = *reinterpret_cast<std::uint64_t*>(place.block->shared + place.offset);
            const std::int64_t v = has_value ? static_cast<std::int64_t>(value.p[value.stride * l] & 0xffffffffu) : 1;
            const barrier_state now = barrier_state::of(word);
            switch (in.var)
            {
            case variant::mbar_init:
                if (v < 1 || v > max_count)
                {
                    throw sim_error(sim_error::kind::launch_failed, "kernel '" + m_launch.kernel + "', " + thread_name(l) +
                                                                        ": mbarrier.init with a count of " + std::to_string(v) +
                                                                        " (PTX: 1 to 2^20 - 1), at " + where(in));
                }
                word = barrier_state{true, 0, v, v, 0}.word();
                ++m_block.mbarrier_changes;
                break;
            case variant::mbar_inval:
                word = 0;
                ++m_block.mbarrier_changes;
                break;
            case variant::mbar_arrive:
            case variant::mbar_arrive_drop:
            case variant::mbar_arrive_expect_tx:
            {
                const bool expect = in.var == variant::mbar_arrive_expect_tx;
                d[l] = word;  // the state before the arrival: its phase is what a wait on it waits for
                mbarrier_change(in, l, word, expect ? 1 : static_cast<int>(v), in.var == variant::mbar_arrive_drop ? static_cast<int>(v) : 0,
                                expect ? v : 0, place.block);
                break;
            }
            case variant::mbar_expect_tx:
            case variant::mbar_complete_tx:
                mbarrier_change(in, l, word, 0, 0, in.var == variant::mbar_expect_tx ? v : -v, place.block);
                break;
            default:
            {
                // test_wait/try_wait: done when the phase the state (or the parity) names has completed
                if (!now.valid)
                {
                    mbarrier_change(in, l, word, 0, 0, 0);  // reports the uninitialised barrier
                }
                const bool parity = in.var == variant::mbar_test_wait_parity || in.var == variant::mbar_try_wait_parity;
                source waited = fetch(in.operands[2], 2);
                std::uint64_t token = waited.p[waited.stride * l];
                unsigned phase = parity ? static_cast<unsigned>(token & 1) : static_cast<unsigned>((token >> 62) & 1);
                bool done = phase != now.phase;
                d[l] = done ? 1 : 0;
                yield = yield || !done;
                break;
            }
            }
        }
        return yield;
    }
}
