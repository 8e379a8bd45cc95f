#pragma once
// The checker core of one block_executor (docs/simulator.md, "Checks"): makes the check plugins the launch's
// check_options choose, from a registry of every check the simulator has (sim_checker.cpp), and hands each event
// the interpreter announces to the plugins subscribed to it. The executor's block_state points at it for each kind
// of event some plugin wants (shared_checks, global_checks, sync_checks) and holds nullptr for the others, so an
// event nobody wants costs the interpreter one test of a pointer.
//
// Not thread-safe: one per executor, called from its thread only (check_plugin).

#include <memory>
#include <vector>

#include "check_plugin.hpp"

namespace xcuda::sim
{
    struct launch_context;

    class sim_checker
    {
    public:
        // Makes the launch's plugins (none: the block's pointers stay null) and points block's at this checker.
        sim_checker(const launch_context& launch, block_state& block);
        ~sim_checker();
        sim_checker(const sim_checker&) = delete;
        sim_checker& operator=(const sim_checker&) = delete;

        bool empty() const noexcept { return m_plugins.empty(); }
        void block_begin();
        void block_end();
        // Per access: inline, one call of each subscribed plugin.
        void shared_access(const memory_access& access)
        {
            for (check_plugin* p : m_shared)
            {
                p->shared_access(m_block, access);
            }
        }
        void global_access(const memory_access& access)
        {
            for (check_plugin* p : m_global)
            {
                p->global_access(m_block, access);
            }
        }
        void synchronised(sync_scope scope, unsigned warp)
        {
            for (check_plugin* p : m_sync)
            {
                p->synchronised(m_block, scope, warp);
            }
        }

        // A cp.async issued and landed (check_plugin::async_copies): called where shared_checks is set, which it
        // is whenever a plugin subscribes to these (sim_checker.cpp).
        void copy_issued(const memory_access& copy)
        {
            for (check_plugin* p : m_async)
            {
                p->copy_issued(m_block, copy);
            }
        }
        void copy_landed(const memory_access& copy)
        {
            for (check_plugin* p : m_async)
            {
                p->copy_landed(m_block, copy);
            }
        }

    private:
        block_state& m_block;
        std::vector<std::unique_ptr<check_plugin>> m_plugins;
        std::vector<check_plugin*> m_shared, m_global, m_sync, m_blocks, m_async;
    };
}
