#include "sim_checker.hpp"

#include "async_hazard_check.hpp"
#include "init_check.hpp"
#include "race_check.hpp"
#include "warp_interpreter.hpp"
#include "warp_race_check.hpp"

namespace xcuda::sim
{
    namespace
    {
        // The registry: every check, and whether a launch's options choose it. A new check is a plugin of its own
        // file and one row here.
        struct registered_check
        {
            bool (*chosen)(const check_options&);
            std::unique_ptr<check_plugin> (*make)(const launch_context&);
        };
        const registered_check k_registry[] = {
            {[](const check_options& o) { return o.race; },
             [](const launch_context& l) -> std::unique_ptr<check_plugin> { return std::make_unique<race_check>(l); }},
            {[](const check_options& o) { return o.warp_race; },
             [](const launch_context& l) -> std::unique_ptr<check_plugin> { return std::make_unique<warp_race_check>(l); }},
            {[](const check_options& o) { return o.init_shared || o.init_global; },
             [](const launch_context& l) -> std::unique_ptr<check_plugin> { return std::make_unique<init_check>(l); }},
            {[](const check_options& o) { return o.async_copy; },
             [](const launch_context& l) -> std::unique_ptr<check_plugin> { return std::make_unique<async_hazard_check>(l); }},
        };
    }

    sim_checker::sim_checker(const launch_context& launch, block_state& block) : m_block(block)
    {
        for (const registered_check& c : k_registry)
        {
            if (!c.chosen(launch.checks))
            {
                continue;
            }
            m_plugins.push_back(c.make(launch));
            check_plugin* p = m_plugins.back().get();
            const unsigned events = p->events();
            if (events & check_plugin::shared_accesses)
            {
                m_shared.push_back(p);
            }
            if (events & check_plugin::global_accesses)
            {
                m_global.push_back(p);
            }
            if (events & check_plugin::synchronisations)
            {
                m_sync.push_back(p);
            }
            if (events & check_plugin::blocks)
            {
                m_blocks.push_back(p);
            }
            if (events & check_plugin::async_copies)
            {
                m_async.push_back(p);
            }
        }
        m_block.shared_checks = m_shared.empty() ? nullptr : this;
        m_block.global_checks = m_global.empty() ? nullptr : this;
        m_block.sync_checks = m_sync.empty() ? nullptr : this;
    }

    sim_checker::~sim_checker()
    {
        m_block.shared_checks = m_block.global_checks = m_block.sync_checks = nullptr;
    }

    void sim_checker::block_begin()
    {
        for (check_plugin* p : m_blocks)
        {
            p->block_begin(m_block);
        }
    }

    void sim_checker::block_end()
    {
        for (check_plugin* p : m_blocks)
        {
            p->block_end(m_block);
        }
    }
}
