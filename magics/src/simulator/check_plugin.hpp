#pragma once
// A check of the simulator (docs/simulator.md, "Checks"): a listener of the events the interpreter announces,
// as Oclgrind's plugins are (src/core/Plugin.h there). The core decodes and executes; each diagnostic (races
// between warps, races inside a warp, uninitialised reads) is a plugin of its own file that subscribes to the
// events it needs (events()), and reports by throwing sim_error. An event no plugin of the launch wants costs
// the core one test of a null pointer (block_state's *_checks, set by sim_checker).
//
// Lifetime and threads: sim_checker makes one instance of each chosen plugin per block_executor, that is per
// host thread of the launch's pool, when the executor is prepared (the launch begins for it), and drops it
// when the executor goes (the launch ends for it). An instance is only ever called from its executor's thread;
// what plugins of several threads share (written_memory) is thread-safe itself.

#include <cstdint>

namespace xcuda::sim
{
    struct instruction;
    struct ptx_function;
    struct block_state;

    enum class access_kind : std::uint8_t
    {
        load,
        store,
        atomic,  // atom, red: a read and a write in one, never a race
    };

    // One lane's access of memory, once the interpreter has checked it against its space's bounds.
    struct memory_access
    {
        std::uint64_t address = 0;  // shared: the offset in the block's window; global: the host address
        unsigned bytes = 0;
        unsigned warp = 0;          // in the block
        unsigned lane = 0;
        access_kind kind = access_kind::load;
        const instruction* at = nullptr;
        const ptx_function* function = nullptr;
        // The executor's count of warp-instructions when the access ran: the lanes of one execution of an
        // instruction share it, so a plugin can tell "the same instruction, together" from "a later one".
        std::uint64_t step = 0;
        // A thread of another block of the cluster (distributed shared memory): announced to the owner block's
        // plugins, whose thread ids it does not share (warp and lane are the other block's).
        bool remote = false;
        unsigned thread() const noexcept { return warp * 32 + lane; }  // linear thread id in the block
    };

    // Where a synchronisation orders memory: a whole block (bar.sync's release, an mbarrier phase completing) or
    // the lanes of one warp (bar.warp.sync, __syncwarp()).
    enum class sync_scope : std::uint8_t
    {
        block,
        warp,
    };

    class check_plugin
    {
    public:
        // What a plugin subscribes to (events()): a bit each.
        enum event : unsigned
        {
            shared_accesses = 1,
            global_accesses = 2,   // .global/.const, and generic addresses of allocations
            synchronisations = 4,
            blocks = 8,            // block_begin, block_end
            async_copies = 16,     // copy_issued, copy_landed (cp.async; announced where shared_accesses are)
        };

        virtual ~check_plugin() = default;
        virtual unsigned events() const noexcept = 0;
        // A block starts on this executor: its shared window is there and zeroed, its warps not yet run.
        virtual void block_begin(const block_state&) {}
        // Every warp of the block has exited (not called when the block failed).
        virtual void block_end(const block_state&) {}
        virtual void shared_access(const block_state&, const memory_access&) {}
        virtual void global_access(const block_state&, const memory_access&) {}
        // `warp` is the warp of a warp-scope synchronisation (unused for a block's).
        virtual void synchronised(const block_state&, sync_scope, unsigned /*warp*/) {}
        // A cp.async's destination (shared, `at` the cp.async) when the thread issues it, and when its bytes land
        // (the thread's wait; before the landing's own shared_access, which is a store of that cp.async).
        virtual void copy_issued(const block_state&, const memory_access&) {}
        virtual void copy_landed(const block_state&, const memory_access&) {}
    };

    struct launch_context;

    // What every check of sim_checker keeps (race_check, warp_race_check, init_check, async_hazard_check): the
    // launch it runs in and reports on (its program, kernel name, block shape, options), which outlives it.
    class launch_check : public check_plugin
    {
    protected:
        explicit launch_check(const launch_context& launch) noexcept : m_launch(launch) {}
        const launch_context& m_launch;
    };
}
