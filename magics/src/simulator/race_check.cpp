#include "race_check.hpp"

#include "check_report.hpp"
#include "warp_interpreter.hpp"

namespace xcuda::sim
{
    race_check::race_check(const launch_context& launch) : launch_check(launch) {}

    void race_check::block_begin(const block_state& block)
    {
        m_shadow.resize(block.shared_bytes);
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
        const std::uint32_t epoch = m_epoch;
        const unsigned warp = access.warp;
        const shared_access_record now{epoch, access.thread(), access.at};
        auto other_warp = [&](const shared_access_record& x) { return x.epoch == epoch && x.thread / 32 != warp; };
        auto report = [&](std::uint64_t offset, const shared_access_record& earlier, bool earlier_wrote) {
            race(block, offset, earlier, earlier_wrote, access);
        };
        m_shadow.compare(access, other_warp, report, [&](shared_byte_shadow<shared_access_record>& s, bool write) {
            if (write)
            {
                s.write = now;
            }
            else if (s.read.epoch != epoch)
            {
                s.read = now;
            }
            else if (s.read.thread / 32 != warp)
            {
                s.other_read = now;
            }
        });
    }

    void race_check::race(const block_state& block, std::uint64_t offset, const shared_access_record& earlier,
                          bool earlier_wrote, const memory_access& access) const
    {
        const ptx_program& program = *m_launch.program;
        const bool write = access.kind == access_kind::store;
        throw sim_error(sim_error::kind::shared_race,
                        "kernel '" + m_launch.kernel + "': a shared-memory race in " + check_report::block(block.ctaid) + " on " +
                            check_report::shared_address(program, offset) + ": " +
                            check_report::access(program, *access.function, m_launch.block, access.thread(),
                                                 write ? " writes it at " : " reads it at ", *access.at) +
                            ", and " +
                            check_report::access(program, check_report::function_of(program, m_launch.entry, *earlier.at),
                                                 m_launch.block, earlier.thread, earlier_wrote ? " wrote it at " : " read it at ",
                                                 *earlier.at) +
                            ", with no barrier (__syncthreads()) between (XCUDA_SIM_RACECHECK=0 turns this check off)");
    }
}
