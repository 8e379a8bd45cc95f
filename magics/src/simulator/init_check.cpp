#include "init_check.hpp"

#include <algorithm>
#include <cstring>

#include "check_report.hpp"
#include "warp_interpreter.hpp"

namespace xcuda::sim
{
    init_check::init_check(const launch_context& launch)
        : launch_check(launch), m_shared(launch.checks.init_shared), m_written(launch.checks.init_global ? launch.written : nullptr)
    {
    }

    unsigned init_check::events() const noexcept
    {
        return (m_shared ? shared_accesses | synchronisations | blocks : 0u) | (m_written ? global_accesses : 0u);
    }

    void init_check::block_begin(const block_state& block)
    {
        m_written_shared.assign(block.shared_bytes, 0);
        if (m_launch.program->uses_reserved_shared)  // the system's region (reserved_shared.hpp): cooperative groups use it unset, as a
        {                           // GPU's block starts with it set up
            std::fill(m_written_shared.begin() + block.reserved_shared, m_written_shared.end(), 1);
        }
        m_pending = false;
    }

    void init_check::synchronised(const block_state& block, sync_scope scope, unsigned)
    {
        if (scope == sync_scope::block)
        {
            report_pending(block);
        }
    }

    void init_check::block_end(const block_state& block)
    {
        report_pending(block);
    }

    void init_check::report_pending(const block_state& block) const
    {
        if (!m_pending)
        {
            return;
        }
        const memory_access& access = m_pending_access;
        const std::uint64_t at = access.address + m_pending_byte;
        uninitialised(block, access,
                      "shared memory: byte " + std::to_string(m_pending_byte) + " of the " + std::to_string(access.bytes) +
                          " it reads, " + check_report::shared_variable(*m_launch.program, at) + " at shared address " +
                          hex(at) + ", has not been written by any thread of the block (a GPU's shared memory starts "
                                    "undefined; the simulator's starts zeroed, so the read sees 0 here and what was left "
                                    "there on a GPU)");
    }

    void init_check::shared_access([[maybe_unused]] const block_state& block, const memory_access& access)
    {
        std::uint8_t* flags = m_written_shared.data() + access.address;
        if (access.kind != access_kind::store && !access.remote)  // another block's read: only its writes count here
        {
            for (unsigned i = 0; i < access.bytes && !m_pending; ++i)
            {
                if (!flags[i])
                {
                    m_pending = true;
                    m_pending_access = access;
                    m_pending_byte = i;
                }
            }
        }
        std::memset(flags, 1, access.bytes);
    }

    void init_check::global_access(const block_state& block, const memory_access& access)
    {
        const std::uintptr_t a = static_cast<std::uintptr_t>(access.address);
        written_memory::region* r = m_region;
        if (!r || a < r->start || a + access.bytes > r->start + r->bytes)
        {
            r = m_written->find(a);
            if (!r)
            {
                return;  // not tracked: counts as written
            }
            m_region = r;
        }
        const std::size_t offset = a - r->start;
        if (access.kind != access_kind::store)
        {
            long long first = written_memory::first_unwritten(*r, offset, access.bytes);
            if (first >= 0)
            {
                uninitialised(block, access,
                              "global memory: byte " + std::to_string(static_cast<std::size_t>(first) - offset) + " of the " +
                                  std::to_string(access.bytes) + " it reads at " + hex(access.address) + ", byte " +
                                  std::to_string(first) + " of the device allocation at " + hex(r->start) + " (" +
                                  std::to_string(r->bytes) + " bytes)" + check_report::argument_near(*m_launch.program, m_launch.entry, m_launch.params,
                                                              m_launch.param_bytes, *m_launch.memory, access.address) +
                                  ", has never been written: no copy, memset or kernel store since it was allocated");
            }
        }
        written_memory::mark(*r, offset, access.bytes);
    }

    void init_check::uninitialised(const block_state& block, const memory_access& access, const std::string& what) const
    {
        const char* verb = access.kind == access_kind::atomic ? "an atomic of uninitialised " : "a read of uninitialised ";
        throw sim_error(sim_error::kind::uninitialised,
                        "kernel '" + m_launch.kernel + "', " + check_report::thread(m_launch.block, block.ctaid, access.thread()) + ": " +
                            verb + what + ", at " + check_report::place(*m_launch.program, *access.function, *access.at) +
                            "; XCUDA_SIM_INITCHECK=0 turns this check off");
    }
}
