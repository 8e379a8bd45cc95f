#pragma once
// One warp of 32 lanes running PTX: every instruction is executed for all active lanes before the next
// (lanes in an inner loop), with divergence handled by a reconvergence stack.
//
// The stack holds entries {pc, mask, reconvergence pc}. A branch whose active lanes disagree parks the
// current entry at the branch's immediate post-dominator (ptx_program::compute_reconvergence) and pushes
// the two sides; an entry that reaches its reconvergence pc is popped, so the lanes continue together
// there. `call` pushes a frame (the callee's registers, its per-lane parameter bytes and local window);
// `ret` in a .func removes the returning lanes from the callee's entries, and when none is left the
// frame is popped and the caller goes on after the call.
//
// Not thread-safe: one warp is run by one thread at a time (block_executor).

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "check_options.hpp"
#include "check_plugin.hpp"
#include "cluster_state.hpp"
#include "ptx_program.hpp"
#include "sim_memory.hpp"

namespace xcuda::sim
{
    class device_heap;
    class sim_checker;
    class texture_registry;
    struct tensor_map_descriptor;
    class written_memory;

    // One thread's instructions, in the order it ran them (launch_context::trace): each with its cell
    // line and the registers it wrote, as "name = value" in the instruction's type.
    struct trace_step
    {
        std::string function;
        std::uint32_t pc = 0;
        std::string text;            // the PTX instruction
        std::uint32_t line = 0;      // from .loc, 0 when none
        std::string file;
        bool executed = true;        // false: its guard predicate was false for this thread
        std::vector<std::string> writes;
    };
    struct thread_trace
    {
        unsigned thread[3] = {0, 0, 0};
        unsigned block[3] = {0, 0, 0};
        std::size_t limit = 100000;  // steps kept; more set `truncated`
        bool truncated = false;
        bool reached = false;        // the thread existed in the launch and started
        std::vector<trace_step> steps;
    };

    // Warnings of one launch (a behaviour PTX leaves undefined that the simulator runs as GPUs do), each kept
    // once: the key names what it is about (the two bar.sync instructions). Shared by the pool's threads.
    struct launch_warnings
    {
        std::mutex lock;
        std::vector<std::string> keys;
        std::vector<std::string> messages;
        void add(const std::string& key, const std::string& message)
        {
            std::lock_guard<std::mutex> held(lock);
            for (const std::string& k : keys)
            {
                if (k == key)
                {
                    return;
                }
            }
            keys.push_back(key);
            messages.push_back(message);
        }
    };

    struct launch_context
    {
        const ptx_program* program = nullptr;
        int entry = -1;
        std::string kernel;                  // the entry's name, for messages
        const std::uint8_t* params = nullptr;  // the packed parameters (entry's layout)
        std::size_t param_bytes = 0;
        unsigned grid[3] = {1, 1, 1};
        unsigned block[3] = {1, 1, 1};
        std::uint32_t dynamic_shared = 0;
        const sim_memory* memory = nullptr;
        std::uint64_t step_limit = 0;        // warp-instructions per launch before it is stopped; 0: none
        std::uint64_t warp_steps = 0;        // counted (per host thread of the pool: each has its own copy)
        // warp_steps at which run() next looks at the cancel flag and the step limit (warp_interpreter::
        // checkpoint): one comparison per instruction keeps both off the hot path.
        std::uint64_t next_checkpoint = 0;
        // Set from another thread (the shim's watch, an interrupt) to stop the launch: looked at between
        // blocks and every few thousand warp-instructions inside one; the launch then throws
        // sim_error(interrupted). nullptr: never cancelled.
        const std::atomic<bool>* cancel = nullptr;
        std::atomic<std::uint64_t>* blocks_progress = nullptr;  // counted up as blocks finish, for progress (may be null)
        std::uint64_t thread_instructions = 0;
        std::string* printf_output = nullptr;  // device printf's text goes here (nullptr: printf is refused)
        check_options checks;                // the checks the launch runs (sim_checker: one set of plugins per executor)
        written_memory* written = nullptr;   // what the global initcheck reads and marks (nullptr: that check is off)
        thread_trace* trace = nullptr;       // record one thread's instructions (nullptr: none)
        unsigned threads = 1;                // host threads running blocks (block_executor's pool)
        std::mutex* atomic_lock = nullptr;   // taken by every atom/red while blocks run in parallel
        const texture_registry* textures = nullptr;  // the texture and surface objects (nullptr: none exist)
        launch_warnings* warnings = nullptr; // where warnings go (nullptr: none kept)
        bool strict_barriers = false;        // warps at different bar.sync 0 fail the launch (else: one barrier, a warning)
        device_heap* heap = nullptr;         // the context's, for malloc/free (nullptr: they are refused)
        // A cooperative launch (cuLaunchCooperativeKernel): every block resident at once on a host thread of its
        // own (block_executor::run_grid), the grid's workspace at %envreg1:%envreg2, and what a spinning warp
        // watches: whether another block failed (it then stops), how many blocks have finished, how many poll a
        // value that has stopped changing.
        bool cooperative = false;
        std::uint64_t grid_workspace = 0;
        const std::atomic<bool>* grid_failed = nullptr;
        const std::atomic<unsigned long long>* blocks_done = nullptr;
        std::atomic<unsigned long long>* blocks_stuck = nullptr;
        // Thread-block clusters (block_clusters.cpp): blocks per cluster on each axis, and whether the launch named them
        // (a launch attribute or __cluster_dims__: %is_explicit_cluster); {1, 1, 1}: each block its own cluster.
        unsigned cluster[3] = {1, 1, 1};
        bool explicit_cluster = false;
    };

    // Thrown by a warp of a cooperative launch that stops because another block failed: not a failure of its own.
    struct launch_cancelled
    {
    };

    class warp_interpreter;
    // The fast path of one instruction (warp_fast_operations.cpp): the instruction for the active lanes, nothing else.
    using fast_handler = void (*)(warp_interpreter&, const instruction&, std::uint32_t);
    // Its handler, or nullptr where the general path (warp_interpreter::execute) runs it.
    fast_handler warp_fast_path(const instruction& in);

    struct block_state
    {
        unsigned ctaid[3] = {0, 0, 0};
        std::uint8_t* shared = nullptr;
        std::size_t shared_bytes = 0;
        std::uint32_t reserved_shared = 0;  // where the reserved region starts, when the program has one (reserved_shared.hpp)
        // The executor's checker for each kind of event some check plugin of the launch wants, else nullptr (one
        // test of a pointer on the interpreter's path): shared and global accesses, synchronisations.
        sim_checker* shared_checks = nullptr;
        sim_checker* global_checks = nullptr;
        sim_checker* sync_checks = nullptr;
        unsigned arrivals[16] = {};       // threads counted at each barrier by bar.arrive since its last release
        std::uint64_t mbarrier_changes = 0;  // grows at every change of an mbarrier (block_executor: is a spin hopeless?)
        cluster_state* cluster = nullptr;  // the block's cluster while its cluster runs (block_clusters.cpp), else nullptr
        unsigned cluster_rank = 0;         // its rank there (%cluster_ctarank)
        // Each function's fast_handler by pc (warp_fast_path), made when a warp of the block first runs the function:
        // per block_executor, so that its host thread alone writes it.
        std::vector<std::vector<fast_handler>> fast_code;
    };

    // Where a shared-memory operand lies: the block of the cluster (the executing one, or another through a
    // .shared::cluster address) whose window holds it, its rank there, and the offset in that window.
    struct shared_place
    {
        block_state* block = nullptr;
        unsigned rank = 0;
        std::uint32_t offset = 0;
    };

    // A cp.async that has been issued and not yet waited for (warp_async_operations.cpp): the source's bytes,
    // read at issue, land in shared memory when the thread waits for its group.
    struct async_copy
    {
        std::uint32_t shared = 0;   // the destination's shared address
        std::uint32_t group = 0;    // the lane's commit-group number it belongs to
        std::uint8_t bytes = 0;
        std::uint8_t data[16] = {};
        const instruction* at = nullptr;
    };

    class warp_interpreter
    {
    public:
        enum class status
        {
            at_barrier,
            exited,
            yielded,  // an mbarrier wait failed: run the block's other warps, then this one again
        };

        warp_interpreter(launch_context& launch, block_state& block, unsigned warp_index);

        // Starts the warp over for the current block: lanes [first thread, first thread + lanes).
        void reset(unsigned lanes);

        // Runs until the warp reaches a bar.sync (all its live lanes there) or every lane has exited.
        // Throws sim_error for a fault, barrier divergence, or an instruction not implemented.
        status run();

        // Lanes that have not exited; the warp's lanes in the block (32 but in a last, partial warp).
        std::uint32_t live() const noexcept { return m_live; }
        unsigned lanes() const noexcept { return m_lanes; }

        // The bar.sync the warp waits at after run() returned at_barrier (the mbarrier wait after yielded).
        const instruction* waiting_at() const noexcept { return m_barrier; }

        // What the warp brought to that barrier: its id (0..15), the thread count it names (0: every
        // thread of the block), and for bar.red how many of its lanes arrived with the predicate true.
        struct barrier_arrival
        {
            unsigned id = 0;
            unsigned count = 0;
            unsigned votes = 0;
            std::uint32_t lanes = 0;
        };
        const barrier_arrival& arrival() const noexcept { return m_arrival; }

        // bar.red, once the barrier completes: writes the block's result (votes true of `threads`) to the
        // lanes that arrived.
        void finish_reduction(unsigned votes, unsigned threads);

        std::string where(const instruction& in) const;     // 'text' in function, line N of file

        // barrier.cluster (warp_cluster_operations.cpp): the lanes that have arrived in the cluster's current phase.
        std::uint32_t cluster_arrived() const noexcept;

    private:
        friend struct warp_fast_access;  // the fast path's handlers read and write the registers

        struct entry
        {
            std::uint32_t pc;
            std::uint32_t mask;
            std::uint32_t reconverge;
        };
        struct frame
        {
            int function = -1;
            std::vector<std::uint64_t> registers;  // register * 32 + lane
            std::vector<std::uint8_t> params;      // lane * frame_bytes
            std::vector<std::uint8_t> local;       // lane * local_bytes
            std::size_t stack_base = 0;            // the first stack entry of this frame
            const instruction* call = nullptr;     // the caller's call instruction
        };
        struct source
        {
            const std::uint64_t* p;
            unsigned stride;
        };

        struct cached_range
        {
            std::uintptr_t start = 0, end = 0;
        };
        // The cached allocation that holds [a, a + bytes), or nullptr.
        const cached_range* cached(std::uint64_t a, unsigned bytes) const
        {
            for (const cached_range& r : m_cached)
            {
                if (a >= r.start && a + bytes <= r.end)
                {
                    return &r;
                }
            }
            return nullptr;
        }
        // The allocation of sim_memory that holds [a, a + bytes), now cached; nullptr when none does.
        const cached_range* cache(std::uint64_t a, unsigned bytes);
        void push_frame(int function, std::uint32_t mask, const instruction* call);
        const fast_handler* fast_code(int function);
        void return_lanes(std::uint32_t mask);
        void exit_lanes(std::uint32_t mask);
        void settle();

        source fetch(const operand& o, unsigned slot);
        std::uint64_t* destination(const operand& o);
        std::uint64_t symbol_value(const ptx_symbol& symbol, unsigned lane) const;
        std::uint8_t* address(const instruction& in, const operand& o, unsigned lane, unsigned bytes, bool write);
        std::uint8_t* translate(state_space space, std::uint64_t address, unsigned lane, unsigned bytes, bool write,
                                const instruction& in, bool frame_param);
        [[noreturn]] void fault(const instruction& in, unsigned lane, const std::string& what) const;
        // warp_check_events.cpp: the events the check plugins subscribe to (sim_checker), announced only where the
        // block's pointer for them is set.
        void check_shared(const instruction& in, std::uint64_t offset, unsigned bytes, unsigned lane, bool write);
        void check_global(const instruction& in, std::uint64_t address, unsigned bytes, unsigned lane, bool write);
        // Another block of the cluster's shared memory (distributed shared memory): its own plugins see the access.
        void check_remote_shared(block_state& owner, const instruction& in, std::uint64_t offset, unsigned bytes,
                                 unsigned lane, bool write);
        void announce_sync(sync_scope scope);
        void trace(const instruction& in, bool executed);
        void trace_writes(const instruction& in);
        std::string argument_near(std::uint64_t address) const;
        std::string location(const instruction& in) const;  // in function, line N of file
        std::string thread_name(unsigned lane) const;
        source member_mask(const instruction& in, const operand& o, std::uint32_t active, const char* what);

        // run()'s parts. On the per-instruction path (inlined): the guard, bra and ret. Off it: the two
        // errors that end a run.
        [[gnu::always_inline]] inline std::uint32_t guarded_lanes(const instruction& in, std::uint32_t mask) const;
        [[gnu::always_inline]] inline void branch(entry& top, const instruction& in, std::uint32_t active);
        [[gnu::always_inline]] inline void ret(entry& top, std::uint32_t active);
        [[noreturn]] void step_limit_reached(const instruction& in) const;
        void checkpoint(const instruction& in);  // the step limit and the cancel flag, every k_checkpoint_steps
        [[noreturn]] void barrier_divergence(const instruction& in, std::uint32_t active) const;

        void execute(const instruction& in, std::uint32_t active);
        void load_store(const instruction& in, std::uint32_t active);
        // Each active lane's pointer for an access of `bytes` at o, every check translate() makes made
        // (warp_load_store.cpp: the fast cases of ld and st, the hook of every check of a lane's access).
        void lane_pointers(const instruction& in, const operand& o, std::uint32_t active, unsigned bytes, bool write,
                           std::uint8_t** p);
        void convert(const instruction& in, std::uint32_t active);
        void arithmetic(const instruction& in, std::uint32_t active);
        // arithmetic's instruction families (warp_operations.cpp), given the destination and the operands it
        // fetched. On the per-instruction path: inlined into arithmetic's switch.
        [[gnu::always_inline]] inline void add_multiply(const instruction& in, std::uint32_t active, std::uint64_t* d,
                                                        source a, source b, source c);
        [[gnu::always_inline]] inline void min_max_sign(const instruction& in, std::uint32_t active, std::uint64_t* d,
                                                        source a, source b, source c);
        [[gnu::always_inline]] inline void bitwise_logic(const instruction& in, std::uint32_t active, std::uint64_t* d,
                                                         source a, source b, source c);
        [[gnu::always_inline]] inline void shifts(const instruction& in, std::uint32_t active, std::uint64_t* d,
                                                  source a, source b, source c);
        [[gnu::always_inline]] inline void bit_fields(const instruction& in, std::uint32_t active, std::uint64_t* d,
                                                      source a, source b, source c);
        [[gnu::always_inline]] inline void float_functions(const instruction& in, std::uint32_t active, std::uint64_t* d,
                                                           source a, source b, source c);
        void compare_set(const instruction& in, std::uint32_t active);
        void shuffle(const instruction& in, std::uint32_t active);
        void vote(const instruction& in, std::uint32_t active);
        void collective(const instruction& in, std::uint32_t active);
        void collective_group(const instruction& in, std::uint32_t members, std::uint64_t* d, std::uint64_t* p, source a);
        void atomic(const instruction& in, std::uint32_t active);
        void permute(const instruction& in, std::uint32_t active);           // prmt, every mode
        void bit_mask(const instruction& in, std::uint32_t active);          // bmsk.clamp / bmsk.wrap
        void dot_product(const instruction& in, std::uint32_t active);       // dp4a, dp2a
        void carry_arithmetic(const instruction& in, std::uint32_t active);  // add.cc, addc, sub.cc, subc, mad.cc, madc
        void texture_family(const instruction& in, std::uint32_t active);    // tex, tld4, suld, sust, txq, suq
        void half_arithmetic(const instruction& in, std::uint32_t active);   // .f16/.bf16(x2): warp_half_operations.cpp
        void half_compare(const instruction& in, std::uint32_t active);      // setp of halves, set of any type
        void rounded_arithmetic(const instruction& in, std::uint32_t active);  // directed roundings: warp_float_rounding.cpp
        void rounded_convert(const instruction& in, std::uint32_t active);     // cvt of halves, directed, .satfinite
        void address_convert(const instruction& in, std::uint32_t active);
        void move(const instruction& in, std::uint32_t active);
        void call(const instruction& in, std::uint32_t active);
        void arrive(const instruction& in, std::uint32_t active);  // fills m_arrival at a bar.sync / bar.red
        void device_printf(const instruction& in, std::uint32_t active);
        // warp_async_operations.cpp: cp.async (completed when the thread waits for it), mbarrier (true when a
        // wait found its phase not complete for some lane: the warp yields).
        // warp_heap_operations.cpp: malloc/free, and an access that falls in the device heap's arena.
        void heap_call(const instruction& in, std::uint32_t active, bool allocate);
        std::uint8_t* heap_address(const instruction& in, unsigned lane, std::uint64_t address, unsigned bytes, bool write);
        // warp_matrix_operations.cpp: wmma, mma.sync, ldmatrix (operations of the whole warp).
        void matrix_operation(const instruction& in, std::uint32_t active);
        void move_fragment(const instruction& in);
        void multiply_fragments(const instruction& in);
        void load_matrices(const instruction& in);
        // A strong load of a cooperative launch (the poll of a grid-wide sync): lets the other blocks' host threads
        // run, stops when another block failed, and reports a sync that can never complete.
        void spin_point(const instruction& in, std::uint32_t active);
        // A strong load that polls what another warp of the block writes: true when the warp should yield.
        bool block_spin(const instruction& in, std::uint32_t active);
        void async_copy_operation(const instruction& in, std::uint32_t active);
        bool mbarrier_operation(const instruction& in, std::uint32_t active);
        void issue_copy(const instruction& in, unsigned lane);
        void bulk_copy(const instruction& in, unsigned lane);
        // warp_tensor_operations.cpp: TMA tensor copies, the bulk copies to global memory and their groups.
        void tensor_copy_operation(const instruction& in, std::uint32_t active);
        tensor_map_descriptor tensor_map_of(const instruction& in, const operand& o, unsigned lane, std::int64_t* coordinates);
        void tensor_load(const instruction& in, unsigned lane);
        void tensor_store(const instruction& in, unsigned lane);
        void bulk_store(const instruction& in, unsigned lane);
        void complete_copies(unsigned lane, std::uint32_t before_group);
        std::uint32_t shared_operand(const instruction& in, const operand& o, unsigned lane, unsigned bytes, unsigned align);
        std::uint64_t& mbarrier_word(const instruction& in, const operand& o, unsigned lane);
        // `owner`: the block whose barrier it is (nullptr: the executing one), which sees the change.
        void mbarrier_change(const instruction& in, unsigned lane, std::uint64_t& word, int arrivals, int drops, std::int64_t tx,
                             block_state* owner = nullptr);
        // TMA and bulk copies into a cluster (warp_cluster_copies.cpp): the copy's bytes land in each block its ctaMask
        // names (or the one its destination names) at the destination's offset, and complete on each one's mbarrier.
        std::uint16_t cta_mask(const instruction& in, const operand& o, unsigned lane);
        std::uint16_t destinations(const instruction& in, unsigned lane, const shared_place& to, const shared_place& bar,
                                   int mask_operand);
        block_state& cluster_member(unsigned rank);
        void land_shared(const instruction& in, unsigned lane, block_state& target, std::uint32_t at, unsigned bytes,
                         const void* from);
        void complete_bytes(const instruction& in, unsigned lane, unsigned rank, std::uint32_t bar, std::uint64_t bytes);
        [[noreturn]] void device_assert(const instruction& in, std::uint32_t active);  // __assertfail: the launch fails
        // warp_cluster_operations.cpp: the cluster's special registers; barrier.cluster (true: a wait whose phase has
        // not completed, the warp yields and runs the wait again); mapa and getctarank; .shared::cluster addresses
        // and generic addresses into another block's window (nullptr: not one).
        source cluster_special(special_register special, unsigned slot);
        bool cluster_barrier(const instruction& in, std::uint32_t active);
        void cluster_address(const instruction& in, std::uint32_t active);
        bool in_space(state_space space, std::uint64_t address, unsigned lane) const;  // isspacep's answer
        std::uint8_t* cluster_shared(const instruction& in, std::uint64_t address, unsigned lane, unsigned bytes, bool write);
        std::uint8_t* cluster_generic(const instruction& in, std::uint64_t address, unsigned lane, unsigned bytes, bool write);
        // A shared operand's place: with `remote`, a .shared::cluster address may name another block of the cluster
        // (checked: a rank in the cluster, not exited, inside its window, aligned), else only the executing block's.
        shared_place shared_window(const instruction& in, const operand& o, unsigned lane, unsigned bytes, unsigned align,
                                   bool remote);
        std::string format(const instruction& in, unsigned lane, std::uint64_t format_address, std::uint64_t arguments,
                           std::int32_t& count);

        launch_context& m_launch;
        block_state& m_block;
        unsigned m_warp;
        unsigned m_lanes = 0;
        std::uint32_t m_live = 0;
        std::vector<entry> m_stack;
        std::vector<frame> m_frames;
        std::size_t m_depth = 0;  // frames in use (m_frames keeps the others' storage)
        frame* m_frame = nullptr;
        const ptx_function* m_function = nullptr;
        const fast_handler* m_fast = nullptr;  // m_function's, by pc
        std::uint64_t* m_registers = nullptr;
        std::uint64_t m_specials[static_cast<int>(special_register::count)][32];
        std::uint64_t m_scratch[5][32];
        // The last allocations accesses hit (a matrix multiply reads two in turn): translate() and lane_pointers()
        // check these before sim_memory::find. Replaced in turn.
        cached_range m_cached[4];
        unsigned m_cache_next = 0;
        const instruction* m_barrier = nullptr;
        barrier_arrival m_arrival;
        std::uint32_t m_carry = 0;  // each lane's carry flag (CC.CF), bit l for lane l
        int m_trace_lane = -1;
        std::vector<async_copy> m_copies[32];  // each lane's cp.async not yet waited for
        std::uint32_t m_groups[32] = {};       // each lane's cp.async.commit_group count
        const instruction* m_spin_at = nullptr;  // the strong load this warp ran last, the value it read, how often
        std::uint64_t m_spin_value = 0;          // in a row it read that, and whether it counts in blocks_stuck
        std::uint64_t m_spins = 0;
        bool m_stuck = false;  // the traced thread's lane when it is in this warp and block, else -1
        std::uint32_t m_cluster_arrived = 0;  // lanes arrived at barrier.cluster in phase m_cluster_phase
        std::uint32_t m_cluster_pending = 0;  // lanes arrived that have not waited yet
        std::uint64_t m_cluster_phase = 0;
        struct poll
        {
            const instruction* at = nullptr;
            std::uint64_t where = 0, value = 0;
        };
        poll m_poll, m_poll_yielded;  // this warp's last strong load, and the one it last yielded at (warp_block_spin.cpp)
    };
}
