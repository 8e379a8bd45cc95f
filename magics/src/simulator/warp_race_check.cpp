#include "warp_race_check.hpp"

#include "check_report.hpp"
#include "warp_interpreter.hpp"

namespace xcuda::sim
{
    warp_race_check::warp_race_check(const launch_context& launch) : launch_check(launch)
    {
        const unsigned threads = launch.block[0] * launch.block[1] * launch.block[2];
        m_interval.assign((threads + 31) / 32, 0);
    }

    void warp_race_check::block_begin(const block_state& block)
    {
        m_shadow.resize(block.shared_bytes);
        synchronised(block, sync_scope::block, 0);  // a new block: nothing of the last one's accesses counts
    }

    void warp_race_check::synchronised(const block_state&, sync_scope scope, unsigned warp)
    {
        if (scope == sync_scope::warp)
        {
            m_interval[warp] = ++m_clock;
            return;
        }
        ++m_clock;
        for (std::uint32_t& i : m_interval)
        {
            i = m_clock;
        }
    }

    void warp_race_check::shared_access(const block_state& block, const memory_access& access)
    {
        if (access.kind == access_kind::atomic || access.remote)
        {
            return;  // another block's lanes are not this block's warps
        }
        const std::uint32_t me = access.thread();
        const std::uint32_t interval = m_interval[access.warp];
        // An earlier access by another lane of this warp, in this interval, at another execution of an instruction.
        auto hazard = [&](const record& r) {
            return r.interval == interval && r.thread != me && r.thread / 32 == access.warp && r.step != access.step;
        };
        const record now{interval, me, access.step, access.at};
        auto report = [&](std::uint64_t offset, const record& earlier, bool earlier_wrote) {
            race(block, offset, earlier, earlier_wrote, access);
        };
        m_shadow.compare(access, hazard, report, [&](shared_byte_shadow<record>& s, bool write) {
            if (write)
            {
                s.write = now;
                s.read = s.other_read = record{};  // later writers are compared with this write
            }
            else if (s.read.interval != interval || s.read.thread / 32 != access.warp || s.read.thread == me)
            {
                s.read = now;
            }
            else
            {
                s.other_read = now;
            }
        });
    }

    void warp_race_check::race(const block_state& block, std::uint64_t offset, const record& earlier, bool earlier_wrote,
                               const memory_access& access) const
    {
        const ptx_program& program = *m_launch.program;
        const bool write = access.kind == access_kind::store;
        throw sim_error(sim_error::kind::shared_race,
                        "kernel '" + m_launch.kernel + "': a shared-memory race between lanes of one warp in " +
                            check_report::block(block.ctaid) + ", warp " + std::to_string(access.warp) + ", on " +
                            check_report::shared_address(program, offset) + ": " +
                            check_report::access(program, *access.function, m_launch.block, access.thread(),
                                                 write ? " writes it at " : " reads it at ", *access.at) +
                            ", and " +
                            check_report::access(program, check_report::function_of(program, m_launch.entry, *earlier.at),
                                                 m_launch.block, earlier.thread,
                                                 earlier_wrote ? " wrote it before at " : " read it before at ", *earlier.at) +
                            ", with no __syncwarp() or barrier between: since Volta the lanes of a warp are "
                            "scheduled independently, so the order of the two is not defined (the simulator runs the "
                            "lanes in lockstep and gives the pre-Volta result; XCUDA_SIM_CHECKS=-warp-race turns this "
                            "check off)");
    }
}
