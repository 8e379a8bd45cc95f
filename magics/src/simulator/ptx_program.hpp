#pragma once
// A PTX module as the simulator runs it: the functions with their decoded instructions, the module's
// variables, and for every conditional branch its reconvergence point.
//
// ptx_parser makes one from PTX text; after that it is immutable and shared by every launch of the
// module (read-only, so launches on several threads may share it). Registers are numbered per
// function (every register, predicates included, is one 64-bit slot per lane); symbols are numbered per
// module, each with its state space and its offset or address.

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace xcuda::sim
{
    // Every failure of the simulator: the message is what the user reads (the driver shim returns it
    // through cuGetErrorString). `kind` picks the CUresult.
    class sim_error : public std::runtime_error
    {
    public:
        enum class kind
        {
            invalid_ptx,        // the parser refused the text
            unsupported,        // parsed, but an instruction or form the simulator does not implement
            illegal_address,    // an access outside every allocation
            barrier_divergence,
            illegal_instruction,  // trap, a shfl/vote whose member lanes are not all there
            launch_failed,      // a step limit, bad launch parameters
            shared_race,        // two threads of different warps, one writing, one shared byte, no barrier between
            interrupted,        // the launch's cancel flag was set (an interrupt): stopped between or inside blocks
            assertion,          // a device assert failed (__assertfail): CUDA_ERROR_ASSERT
            uninitialised,      // initcheck: a read of shared or global memory never written (init_check)
        };
        sim_error(kind k, const std::string& message) : std::runtime_error(message), m_kind(k) {}
        kind what_kind() const noexcept { return m_kind; }

    private:
        kind m_kind;
    };

    // A PTX fundamental type: 'b', 'u', 's', 'f', 'p' (pred), 'h' (.f16; 32 bits: .f16x2) or 'g' (.bf16; 32
    // bits: .bf16x2), and its width in bits.
    struct ptx_type
    {
        char kind = 'b';
        std::uint8_t bits = 32;
        unsigned bytes() const { return kind == 'p' ? 1u : bits / 8u; }
        bool is_float() const { return kind == 'f'; }
        bool is_signed() const { return kind == 's'; }
        bool is_half() const { return kind == 'h' || kind == 'g'; }  // .f16, .bf16 and their x2 pairs
    };

    enum class state_space : std::uint8_t
    {
        generic,
        global,
        constant,
        shared,
        local,
        param,        // an entry's parameter (the launch's packed bytes)
        func_param,   // a .func's parameter or return value, or a call's argument: per-lane frame bytes
        shared_cluster,  // .shared::cluster: a block's own shared offsets, or another block's (mapa; cluster_state.hpp)
    };
    const char* space_name(state_space space);

    enum class special_register : std::uint8_t
    {
        tid_x, tid_y, tid_z, ntid_x, ntid_y, ntid_z,
        ctaid_x, ctaid_y, ctaid_z, nctaid_x, nctaid_y, nctaid_z,
        laneid, warpid, nwarpid, smid, nsmid, gridid,
        lanemask_eq, lanemask_le, lanemask_lt, lanemask_ge, lanemask_gt,
        clock, clock64, globaltimer, dynamic_smem_size,
        envreg,  // %envreg0, %envreg3..31: the driver's environment, 0 here
        envreg1, envreg2,  // the cooperative grid's workspace address, high and low halves (0 outside a cooperative launch)
        // The block's reserved shared memory (cooperative groups' multi-warp scratch on sm_80+):
        // %reserved_smem_offset_begin/_end/_cap/_0/_1, laid out by reserved_shared.hpp.
        reserved_smem_begin, reserved_smem_end, reserved_smem_cap, reserved_smem_0, reserved_smem_1,
        // The thread-block cluster's (warp_cluster_operations.cpp: read when used, the same for every lane of a block)
        cluster_ctarank, cluster_nctarank, cluster_ctaid_x, cluster_ctaid_y, cluster_ctaid_z, cluster_nctaid_x,
        cluster_nctaid_y, cluster_nctaid_z, clusterid_x, clusterid_y, clusterid_z, nclusterid_x, nclusterid_y,
        nclusterid_z, is_explicit_cluster,
        count
    };

    struct operand
    {
        enum class kind : std::uint8_t
        {
            none,
            reg,      // reg
            imm,      // value (the bits, in the instruction's type)
            special,  // special
            symbol,   // symbol: its address in its space
            address,  // [reg + value] or [symbol + value] (reg or symbol may be absent)
            vector,   // {regs[0..count)}; a sink '_' element is -1
            texture,  // [reg, {regs[0..count)}]: a texture or surface handle and its coordinates
            label,    // value: the target pc
            sink,     // '_'
        };
        kind what = kind::none;
        bool negate = false;  // !%p
        std::int32_t reg = -1;
        std::int32_t symbol = -1;
        std::uint64_t value = 0;
        special_register special = special_register::count;
        std::uint8_t count = 0;
        std::int32_t regs[8] = {-1, -1, -1, -1, -1, -1, -1, -1};  // 8: a wmma fragment
    };

    enum class opcode : std::uint8_t
    {
        ld, st, mov, cvt, cvta,
        add, sub, mul, mad, fma, div, rem, min, max, abs, neg,
        and_, or_, xor_, not_, cnot, shl, shr, shf, popc, clz, brev, bfe, bfi, bfind, prmt,
        setp, selp, copysign,
        rcp, sqrt, rsqrt, ex2, lg2, sin, cos, tanh, testp, lop3,
        bra, ret, exit, call, trap,
        bar, membar, shfl, vote, activemask, atom, red, redux, match,
        dp4a, dp2a,                   // dot products of bytes (and halves): warp_integer_operations.cpp
        bmsk,                         // bmsk.{clamp,wrap}.b32, a bit-field mask: warp_integer_operations.cpp
        add_carry, sub_carry, mad_carry,  // add.cc/addc, sub.cc/subc, mad.cc/madc: the per-lane carry flag
        async_copy,                   // cp.async and its groups, cp.async.bulk: warp_async_operations.cpp
        mbarrier,                     // mbarrier.*: warp_async_operations.cpp (a failed wait yields the warp)
        matrix,                       // wmma, mma.sync, ldmatrix: warp_matrix_operations.cpp
        cluster_barrier,              // barrier.cluster.arrive/wait: warp_cluster_operations.cpp (a wait not complete yields)
        cluster_address,              // mapa, getctarank, isspacep: warp_cluster_operations.cpp (cluster_decoder)
        tex, tld4, suld, sust, txq, suq,  // textures and surfaces: warp_texture_operations.cpp (texture_decoder)
        set,                          // set.cmp.dtype.stype: a comparison written as a value (runs as half_arithmetic)
        half_arithmetic,              // .f16/.bf16(x2) arithmetic and set: warp_half_operations.cpp (family_op says which)
        rounded_arithmetic,           // f32/f64 add..sqrt with .rz/.rm/.rp, rcp/rsqrt.approx.ftz.f64: warp_float_rounding.cpp
        rounded_convert,              // cvt with a half type or a directed rounding: warp_float_rounding.cpp
        inc, dec,                     // cp.reduce.async.bulk(.tensor)'s .inc/.dec: only ever a family_op
        nop,
        unsupported,  // decoded but not implemented: running it raises sim_error naming it (text)
    };

    // Modifiers the interpreter needs, decoded once.
    enum class compare : std::uint8_t { none, eq, ne, lt, le, gt, ge, lo, ls, hi, hs, equ, neu, ltu, leu, gtu, geu, num, nan };
    enum class rounding : std::uint8_t { none, rn, rz, rm, rp, rni, rzi, rmi, rpi };
    enum class variant : std::uint8_t
    {
        none,
        lo, hi, wide,                    // mul, mad
        approx, full,                    // div, rcp, sqrt, ...
        shfl_up, shfl_down, shfl_bfly, shfl_idx,
        vote_all, vote_any, vote_uni, vote_ballot,
        atom_add, atom_min, atom_max, atom_inc, atom_dec, atom_and, atom_or, atom_xor, atom_exch, atom_cas,
        shiftamt,                        // bfind.shiftamt
        shf_l_wrap, shf_l_clamp, shf_r_wrap, shf_r_clamp,
        testp_finite, testp_infinite, testp_number, testp_notanumber, testp_normal, testp_subnormal,
        prmt_f4e, prmt_b4e, prmt_rc8, prmt_ecl, prmt_ecr, prmt_rc16,  // prmt's modes (none: the default)
        bar_red_popc, bar_red_and, bar_red_or,                        // bar.red (__syncthreads_count/and/or)
        bar_arrive,                                                   // bar.arrive: counts, does not wait
        min_max_nan,                                                  // min/max.NaN: a NaN operand gives NaN
        satfinite,                                                    // cvt.satfinite: out of range to the largest finite
        bmsk_clamp, bmsk_wrap,                                        // bmsk's modes
        // cp.async (async_decoder): a copy, its groups, its arrive on an mbarrier, the bulk copy
        cp_async, cp_async_commit, cp_async_wait_group, cp_async_wait_all, cp_async_arrive, cp_async_arrive_noinc,
        cp_async_bulk,
        // tensor_copy_decoder: TMA tensor copies (instruction::texture_form: the rank | 8 for im2col; family_op: a
        // reduction's operation), the bulk copies from shared to global memory and their groups
        bulk_tensor_load, bulk_tensor_store, bulk_tensor_reduce, bulk_store, bulk_reduce, bulk_commit, bulk_wait,
        // mbarrier.* (async_decoder)
        mbar_init, mbar_arrive, mbar_arrive_expect_tx, mbar_arrive_drop, mbar_expect_tx, mbar_complete_tx,
        mbar_test_wait, mbar_try_wait, mbar_test_wait_parity, mbar_try_wait_parity, mbar_pending_count, mbar_inval,
        // matrix_decoder: the warp's matrix operations (their shape and types in instruction::shape)
        wmma_load, wmma_store, wmma_mma, mma_sync, ldmatrix,
        tf32_convert,  // cvt.rna.tf32.f32 (wmma::__float_to_tf32): a tensor core's input rounding
        // cluster_decoder: barrier.cluster.arrive{.aligned}, barrier.cluster.wait{.aligned}, mapa, getctarank
        cluster_arrive, cluster_arrive_aligned, cluster_wait, cluster_wait_aligned, mapa, getctarank,
        isspacep,  // isspacep.space p, a (in.space: which space; __isShared, __isClusterShared, __isGlobal, __isLocal)
    };

    // A matrix operation's form (matrix_decoder): the shape, which matrix a load or store moves ('a', 'b', 'c',
    // 'd'), the element types of A, B, C, D ('h' f16, 'b' bf16, 't' tf32, 'f' f32, 's' s8, 'u' u8, 'i' s32),
    // whether A and B (or a load's, a store's matrix) are column-major in memory; for ldmatrix, `m` is the
    // count of 8x8 matrices and `transposed` says .trans.
    struct matrix_shape
    {
        std::uint8_t m = 0, n = 0, k = 0;
        char role = 0;
        char a = 0, b = 0, c = 0, d = 0;
        bool column = false;      // a load's or store's memory layout
        bool transposed = false;  // ldmatrix .trans
        bool satfinite = false;
    };

    struct instruction
    {
        opcode op = opcode::nop;
        opcode family_op = opcode::nop;  // half_arithmetic, rounded_arithmetic: the operation (add, fma, setp, ...)
        ptx_type type;        // the operation's type (for cvt: the destination type)
        ptx_type source_type; // cvt's source type
        state_space space = state_space::generic;
        compare cmp = compare::none;
        compare combine = compare::none;  // setp's .and/.or/.xor, as eq (and), ne (or), lt (xor)
        rounding round = rounding::none;
        variant var = variant::none;
        bool ftz = false;
        bool sat = false;
        bool to = false;            // cvta.to
        bool warp = false;          // bar.warp.sync
        bool pair = false;          // a second destination: setp p|q, shfl d|p
        bool carry_in = false;      // addc, subc, madc: reads the lane's carry flag
        bool carry_out = false;     // .cc: writes it
        bool releases = false;      // atom/red.release or .acq_rel: orders the block's accesses (warp_block_spin.cpp)
        bool strong = false;        // ld.acquire/.relaxed/.volatile: may spin on another block's store (cooperative grid)
        bool no_complete = false;   // mbarrier.arrive(_drop).noComplete: the arrive must not complete the phase
        std::uint8_t file = 0;      // the .loc file
        std::uint8_t vector = 1;    // ld/st .v2 .v4
        std::uint8_t texture_form = 0;  // tex, tld4, suld, sust, txq, suq: geometry and mode (texture_decoder.hpp)
        std::uint8_t bulk_form = 0;     // a TMA / bulk copy's cluster form: bulk_multicast, bulk_to_cluster (below)
        std::int32_t guard = -1;    // @%p: the predicate register, or -1
        bool guard_negated = false;
        std::int32_t callee = -1;   // call: function index
        std::uint32_t reconverge = 0;  // a conditional bra: its immediate post-dominator's pc
        std::uint32_t line = 0;     // the source line from .loc, 0 when none
        std::uint8_t operand_count = 0;
        operand operands[6];
        std::vector<std::int32_t> call_arguments;  // call: the argument symbols; call_result: the result symbol
        std::int32_t call_result = -1;
        matrix_shape shape;         // wmma, mma, ldmatrix
        std::string text;           // the instruction as written, for error messages
    };

    // instruction::bulk_form: .multicast::cluster (the last operand before a cache policy is a ctaMask), and a
    // copy or reduction from the CTA's own shared memory into a .shared::cluster window with an mbarrier there.
    inline constexpr std::uint8_t bulk_multicast = 1;
    inline constexpr std::uint8_t bulk_to_cluster = 2;

    struct ptx_symbol
    {
        std::string name;
        state_space space = state_space::global;
        std::uint64_t offset = 0;      // shared/local/param: the offset in its window or area
        std::uint64_t size = 0;        // bytes (0 for an extern shared array: the dynamic part)
        std::uint32_t align = 1;
        std::int32_t function = -1;    // the function whose scope declares it, -1 for module scope
        std::vector<std::uint8_t> initial;  // a .global/.const initialiser
        bool dynamic_shared = false;
    };

    struct ptx_function
    {
        std::string name;
        bool entry = false;
        bool has_body = false;
        std::vector<std::int32_t> params;  // symbols, in order
        std::int32_t result = -1;          // a .func's return value symbol, or -1
        std::uint32_t param_bytes = 0;     // entry: the packed parameters
        std::uint32_t frame_bytes = 0;     // per lane: a .func's parameters and result, and every call's arguments
        std::uint32_t local_bytes = 0;     // per lane
        std::uint32_t register_count = 0;
        std::uint32_t max_threads = 0;            // .maxntid / .reqntid (__launch_bounds__): their product; 0: none
        std::uint32_t cluster_dims[3] = {0, 0, 0};  // .reqnctapercluster (__cluster_dims__); 0s: none
        std::uint32_t max_cluster_rank = 0;         // .maxclusterrank (__launch_bounds__'s third value); 0: none
        std::vector<std::string> register_names;  // by index, as written (%r3), for traces
        std::vector<std::uint8_t> register_bits;  // by index: the declared width (.b64: 64, .pred: 1)
        std::vector<instruction> code;
        std::map<std::string, std::uint32_t> labels;
        // Not empty: the parser could not read this function's body (the message names the PTX line, its
        // text and the cell line); the module loads, and a launch that would run it is refused. code is empty.
        std::string refused;
        std::uint32_t refused_line = 0;  // the source line (.loc) where it could not be read, 0 when none
        std::uint8_t refused_file = 0;
    };

    struct ptx_program
    {
        std::string version;
        std::map<int, std::string> files;  // .file N "name"
        std::string target;
        std::vector<ptx_function> functions;
        std::vector<ptx_symbol> symbols;
        std::uint64_t static_shared_bytes = 0;  // every .shared variable, laid out in one window
        std::uint32_t dynamic_shared_align = 1;
        bool uses_reserved_shared = false;  // a %reserved_smem_offset_* register is read: blocks get the region

        // The function named `name`, or -1.
        int find_function(const std::string& name) const;

        // Why `function` cannot run: its own body or that of a function it calls could not be read
        // (ptx_function::refused), as the message of the refused launch; "" when it can run.
        std::string refusal(int function) const;

        // Fills every conditional branch's `reconverge` from the function's control-flow graph: the
        // immediate post-dominator of the branch (ret/exit lead to a virtual exit, pc = code.size()).
        static void compute_reconvergence(ptx_function& function);
    };
}
