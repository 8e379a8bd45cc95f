#include "race_check.hpp"

#include "check_report.hpp"
#include "warp_interpreter.hpp"

namespace xcuda::sim
{
    race_check::race_check(const launch_context& launch) : m_launch(launch) {}

    void race_check::block_begin(const block_state& block)
    {
        if (m_shadow.size() != block.shared_bytes)
        {
            m_shadow.assign(block.shared_bytes, shared_shadow{});
        }
        ++m_epoch;  // a new block: nothing of the last one's accesses races with this one's
    }

    void race_check::synchronised(const block_state&, sync_scope scope, unsigned)
    {
        if (scope == sync_scope::block)
        {
            ++m_epoch;  // a barrier released: a new interval
        }
    }

    void race_check::shared_access(const block_state& block, const memory_access& access)
    {
        if (access.kind == access_kind::atomic || access.remote)
        {
            return;  // atomics do not race; another block's threads are not compared (a missed report, never a false one)
        }
        const bool write = access.kind == access_kind::store;
        const std::uint32_t epoch = m_epoch;
        const std::uint32_t me = access.thread();
        const unsigned warp = access.warp;
        auto other_warp = [&](const shared_access_record& x) { return x.epoch == epoch && x.thread / 32 != warp; };
        for (unsigned i = 0; i < access.bytes; ++i)
        {
            shared_shadow& s = m_shadow[access.address + i];
            if (other_warp(s.write))
            {
                race(block, access.address + i, s.write, true, access);
            }
            if (write)
            {
                if (other_warp(s.read))
                {
                    race(block, access.address + i, s.read, false, access);
                }
                if (other_warp(s.other_read))
                {
                    race(block, access.address + i, s.other_read, false, access);
                }
                s.write = {epoch, me, access.at};
            }
            else if (s.read.epoch != epoch)
            {
                s.read = {epoch, me, access.at};
            }
            else if (s.read.thread / 32 != warp)
            {
                s.other_read = {epoch, me, access.at};
            }
        }
    }

    void race_check::race(const block_state& block, std::uint64_t offset, const shared_access_record& earlier,
                          bool earlier_wrote, const memory_access& access) const
    {
        const ptx_program& program = *m_launch.program;
        const bool write = access.kind == access_kind::store;
        throw sim_error(sim_error::kind::shared_race,
                        "kernel '" + m_launch.kernel + "': a shared-memory race in " + check_report::block(block.ctaid) + " on " +
                            check_report::shared_variable(program, offset) + ", shared address " + hex(offset) + ": " +
                            check_report::thread_in_block(m_launch.block, access.thread()) +
                            (write ? " writes it at " : " reads it at ") +
                            check_report::place(program, *access.function, *access.at) + ", and " +
                            check_report::thread_in_block(m_launch.block, earlier.thread) +
                            (earlier_wrote ? " wrote it at " : " read it at ") +
                            check_report::place(program, check_report::function_of(*m_launch.program, m_launch.entry, *earlier.at), *earlier.at) +
                            ", with no barrier (__syncthreads()) between (XCUDA_SIM_RACECHECK=0 turns this check off)");
    }
}
