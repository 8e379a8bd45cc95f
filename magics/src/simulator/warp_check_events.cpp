// warp_interpreter's announcements to the check plugins (sim_checker, check_plugin.hpp): off the interpreter's
// path, which calls them only where the block's pointer for the event is set.
#include "sim_checker.hpp"
#include "warp_interpreter.hpp"

namespace xcuda::sim
{
    namespace
    {
        access_kind kind_of(const instruction& in, bool write)
        {
            return in.op == opcode::atom || in.op == opcode::red ? access_kind::atomic
                   : write                                       ? access_kind::store
                                                                 : access_kind::load;
        }
    }

    void warp_interpreter::check_shared(const instruction& in, std::uint64_t offset, unsigned bytes, unsigned lane, bool write)
    {
        m_block.shared_checks->shared_access(
            memory_access{offset, bytes, m_warp, lane, kind_of(in, write), &in, m_function, m_launch.warp_steps});
    }

    void warp_interpreter::check_global(const instruction& in, std::uint64_t address, unsigned bytes, unsigned lane, bool write)
    {
        m_block.global_checks->global_access(
            memory_access{address, bytes, m_warp, lane, kind_of(in, write), &in, m_function, m_launch.warp_steps});
    }

    void warp_interpreter::check_remote_shared(block_state& owner, const instruction& in, std::uint64_t offset, unsigned bytes,
                                               unsigned lane, bool write)
    {
        memory_access access{offset, bytes, m_warp, lane, kind_of(in, write), &in, m_function, m_launch.warp_steps};
        access.remote = true;
        owner.shared_checks->shared_access(access);
    }

    void warp_interpreter::announce_sync(sync_scope scope)
    {
        m_block.sync_checks->synchronised(scope, m_warp);
    }
}
