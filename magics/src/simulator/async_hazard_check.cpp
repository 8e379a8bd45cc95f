#include "async_hazard_check.hpp"

#include <algorithm>

#include "check_report.hpp"
#include "warp_interpreter.hpp"

namespace xcuda::sim
{
    async_hazard_check::async_hazard_check(const launch_context& launch) : launch_check(launch)
    {
        for (const ptx_function& f : launch.program->functions)
        {
            m_has_copies = m_has_copies || std::any_of(f.code.begin(), f.code.end(), [](const instruction& in) {
                               return in.op == opcode::async_copy && in.var == variant::cp_async;
                           });
        }
    }

    unsigned async_hazard_check::events() const noexcept
    {
        return m_has_copies ? shared_accesses | async_copies | blocks : 0u;
    }

    void async_hazard_check::block_begin(const block_state& block)
    {
        if (m_owner.size() != block.shared_bytes)
        {
            m_owner.assign(block.shared_bytes, 0);
        }
        else if (m_pending)  // the last block left copies never waited for (never written): forget them
        {
            std::fill(m_owner.begin(), m_owner.end(), 0u);
        }
        m_copies.clear();
        m_free.clear();
        m_pending = 0;
    }

    void async_hazard_check::copy_issued(const block_state& block, const memory_access& copy)
    {
        if (m_pending)
        {
            shared_access(block, copy);  // a second copy into a pending byte: the two may land in either order
        }
        std::uint32_t index;
        if (m_free.empty())
        {
            m_copies.emplace_back();
            index = static_cast<std::uint32_t>(m_copies.size() - 1);
        }
        else
        {
            index = m_free.back();
            m_free.pop_back();
        }
        m_copies[index] = pending_copy{copy.thread(), copy.at, copy.bytes};
        std::fill_n(m_owner.begin() + static_cast<std::ptrdiff_t>(copy.address), copy.bytes, index + 1);
        m_pending += copy.bytes;
    }

    void async_hazard_check::copy_landed(const block_state&, const memory_access& copy)
    {
        std::uint32_t* owner = m_owner.data() + copy.address;
        for (unsigned i = 0; i < copy.bytes; ++i)
        {
            if (owner[i])
            {
                if (--m_copies[owner[i] - 1].bytes == 0)
                {
                    m_free.push_back(owner[i] - 1);
                }
                owner[i] = 0;
                --m_pending;
            }
        }
    }

    void async_hazard_check::shared_access(const block_state& block, const memory_access& access)
    {
        if (!m_pending || access.remote)
        {
            return;  // another block's threads (distributed shared memory) are not compared: a missed report, never a false one
        }
        const std::uint32_t* owner = m_owner.data() + access.address;
        for (unsigned i = 0; i < access.bytes; ++i)
        {
            if (owner[i])
            {
                hazard(block, access.address + i, m_copies[owner[i] - 1], access);
            }
        }
    }

    void async_hazard_check::hazard(const block_state& block, std::uint64_t offset, const pending_copy& copy,
                                    const memory_access& access) const
    {
        const ptx_program& program = *m_launch.program;
        const bool another_copy = access.at->op == opcode::async_copy;
        const char* does = another_copy                           ? " copies into shared bytes at "
                           : access.kind == access_kind::load ? " reads shared bytes at "
                           : access.kind == access_kind::store ? " writes shared bytes at "
                                                                 : " does an atomic on shared bytes at ";
        const char* because = another_copy ? "the two copies may land in either order"
                              : access.kind == access_kind::load
                                  ? "the copy may land before or after this read, which sees the old bytes or the new"
                                  : "the copy may land before or after this write, overwriting it or not";
        throw sim_error(sim_error::kind::shared_race,
                        "kernel '" + m_launch.kernel + "': a cp.async hazard in " + check_report::block(block.ctaid) + " on " +
                            check_report::shared_address(program, offset) + ": " +
                            check_report::access(program, *access.function, m_launch.block, access.thread(), does, *access.at) +
                            ", the destination of the cp.async at " +
                            check_report::place(program, check_report::function_of(program, m_launch.entry, *copy.at), *copy.at) +
                            ", which " + check_report::thread_in_block(m_launch.block, copy.thread) +
                            " issued and has not waited for (cp.async.wait_group, wait_all, or an mbarrier): on a GPU " + because +
                            " (XCUDA_SIM_CHECKS=-async-copy turns this check off)");
    }
}
