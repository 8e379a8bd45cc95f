"""Mutation check of the PTX simulator's C++ tests: each entry breaks one behaviour of the simulator on
purpose (a small edit of one source file), rebuilds xcuda_simulator_tests, runs the tests of that family
and prints which failed. A mutation that no test catches is a gap in the tests. Not a test itself (it
edits the tree); run it by hand:

    /usr/bin/python3 tests/simulator/simulator_mutations.py [LABEL|INDEX ...]   # all when none is given
    /usr/bin/python3 tests/simulator/simulator_mutations.py --check     # each edit's text once in its file; no build
    /usr/bin/python3 tests/simulator/simulator_mutations.py --restore   # put back what an interrupted run left
    /usr/bin/python3 tests/simulator/simulator_mutations.py --list      # index, label, file

An entry is (label: what it breaks, file, old, new, gtest filter); old and new are one text or tuples of texts
(each old replaced by its new, all in the one file), each old occurring exactly once in the file
(tests/simulator/test_simulator_mutation_anchors.py checks that, so an entry cannot go stale unseen).
The source is restored whatever happens: the original text is written to a journal in the build folder before
the edit, restored in a `finally`, SIGTERM and SIGHUP end the run through that `finally` too, and a run killed
outright (SIGKILL, a lost machine) is undone by the next run, or by --restore, from the journal.

It uses the build folder build/ of this checkout (XCUDA_BUILD_DIR to use another) and builds with -j1
(--jobs N for more).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

R = Path(__file__).resolve().parent.parent.parent
BUILD = Path(os.environ.get("XCUDA_BUILD_DIR", R / "build"))
JOURNAL = BUILD / "simulator_mutations.journal"
M = [
 ("a: fma rounded twice (the fast path: fma.rn.f32 of registers)", "magics/src/simulator/warp_fast_operations.cpp", "d[l] = bits<float>(std::fma(as<float>(a[l]), as<float>(b[l]), as<float>(c[l]))))", "d[l] = bits<float>(std::fma(as<float>(a[l]), as<float>(b[l]), 0.0f) + as<float>(c[l])))", "simulator_basics.*:simulator_fast_path.*"),
 ("a5: shr.s made logical (the fast path)", "magics/src/simulator/warp_fast_operations.cpp", "return bits<T>(static_cast<T>(x >> s));", "return bits<T>(static_cast<T>(static_cast<std::make_unsigned_t<T>>(x) >> s));", "simulator_basics.*:simulator_fast_path.*"),
 ("a4: shr.s made logical (the general path: an immediate first operand, a sub-word type)", "magics/src/simulator/warp_operations.cpp", "d[l] = bits<T>(static_cast<T>(x >> n));", "d[l] = bits<T>(static_cast<T>(static_cast<std::make_unsigned_t<T>>(x) >> n));", "simulator_basics.*:simulator_fast_path.*"),
 ("a6: a whole warp's global access not checked against its allocation", "magics/src/simulator/warp_fast_operations.cpp", "if (all_inside(r, offset, hit->start, hit->end - hit->start - sizeof(U), sizeof(U) - 1))", "if (all_inside(r, offset, hit->start, ~0ull, 0))", "simulator_fast_path.*"),
 ("h6: ld/st's inline shared path skips the race check (and the other shared checks)", "magics/src/simulator/warp_load_store.cpp", "const bool checked = m_block.shared_checks != nullptr;", "const bool checked = false && m_block.shared_checks != nullptr;", "simulator_shared_memory.*:simulator_checks.*"),
 ("b: %tid.y wrong", "magics/src/simulator/warp_interpreter.cpp", "set(special_register::tid_y, t / b[0] % b[1]);", "set(special_register::tid_y, t % b[1]);", "simulator_special_registers.*"),
 ("c: bar.sync a no-op", "magics/src/simulator/warp_interpreter.cpp", "                m_barrier = &in;\n                return status::at_barrier;", "                m_barrier = &in;\n                continue;", "simulator_shared_memory.*"),
 ("d: no reconvergence (every branch joins at the exit)", "magics/src/simulator/ptx_program.cpp", "function.code[i].reconverge = ipdom[i] == undefined ? exit : ipdom[i];", "function.code[i].reconverge = exit;", "simulator_warps.*"),
 ("e: atom.max keeps the minimum", "magics/src/simulator/warp_operations.cpp", "case variant::atom_max: r = x > old ? x : old; break;", "case variant::atom_max: r = x < old ? x : old; break;", "simulator_atomics.*"),
 ("f: div.rn.f32 as a*(1/b)", "magics/src/simulator/warp_operations.cpp", "FLOAT_OP(static_cast<T>(x / y)); });\n                return;", "FLOAT_OP(static_cast<T>(x * (T(1) / y))); });\n                return;", "simulator_math.*"),
 ("c2: early-returning lanes wait at the join (no early exit)", "magics/src/simulator/warp_interpreter.cpp", "if (exits_at(target) || exits_at(next))", "if (false && (exits_at(target) || exits_at(next)))", "simulator_shared_memory.*"),
 ("d2: one member mask for the whole warp", "magics/src/simulator/warp_operations.cpp", "std::uint32_t members = static_cast<std::uint32_t>(masks.p[masks.stride * l]) & active;", "std::uint32_t members = static_cast<std::uint32_t>(masks.p[0]) & active;", "simulator_warps.*"),
 ("a2: bfe.s without sign extension", "magics/src/simulator/warp_operations.cpp", "std::uint64_t sign = t.is_signed() ? (v >> std::min(pos + len - 1, msb)) & 1 : 0;", "std::uint64_t sign = 0;", "simulator_basics.*"),
 ("f2: f16 conversion rounds ties away from zero", "magics/src/simulator/warp_float_rounding.cpp", "default: up = fraction > 0.5 || (fraction == 0.5 && std::fmod(whole, 2.0) != 0); break;", "default: up = fraction >= 0.5; break;", "simulator_math.*"),
 ("h: the shared-memory race check never runs", "magics/src/simulator/sim_checker.cpp", "{ return o.race; }", "{ return false && o.race; }", "simulator_shared_memory.*:simulator_fast_path.*"),
 ("h2: shared reads not recorded by the race check", "magics/src/simulator/race_check.cpp", "                s.read = now;", "                (void)now;", "simulator_shared_memory.*"),
 ("h3: shared atomics counted as races (checked as stores)", "magics/src/simulator/race_check.cpp", "if (access.kind == access_kind::atomic || access.remote)\n        {\n            return;", "if (access.kind == access_kind::atomic && !access.remote)\n        {\n            memory_access store = access;\n            store.kind = access_kind::store;\n            return shared_access(block, store);\n        }\n        if (access.remote)\n        {\n            return;", "simulator_shared_memory.*"),
 ("h4: lanes of one warp race with each other", "magics/src/simulator/race_check.cpp", "return x.epoch == epoch && x.thread / 32 != warp;", "return x.epoch == epoch && x.thread != access.thread();", "simulator_shared_memory.*"),
 ("h5: a barrier does not start a new race interval", "magics/src/simulator/block_executor.cpp", "m_block.sync_checks->synchronised(sync_scope::block, 0);", "(void)m_block.sync_checks;", "simulator_shared_memory.*:simulator_checks.*"),
 ("c3: strict mode lets warps at two different barriers through", "magics/src/simulator/block_executor.cpp", "if (m_launch.strict_barriers)", "if (false)", "simulator_shared_memory.*"),
 ("c4: warps at two different barriers fail without strict mode", "magics/src/simulator/block_executor.cpp", "if (m_launch.strict_barriers)", "if (true)", "simulator_shared_memory.*"),
 ("m: f64 directed roundings in the nearest mode", "magics/src/simulator/warp_float_rounding.cpp", "            host_rounding scope(in.round);", "            // no mode", "simulator_float_families.*"),
 ("m2: setp of a pair writes the low halves to q", "magics/src/simulator/warp_half_operations.cpp", "pair_of_halves ? join(raw[1]) : join(!raw[0])", "pair_of_halves ? join(raw[0]) : join(!raw[0])", "simulator_float_families.*"),
 ("m3: cvt to a pair packs a in the low half", "magics/src/simulator/warp_float_rounding.cpp", "std::uint64_t high = from_pair ? (x >> from_width) & element : x;\n            std::uint64_t low = from_pair ? x & element : b.p[b.stride * l];", "std::uint64_t high = from_pair ? (x >> from_width) & element : b.p[b.stride * l];\n            std::uint64_t low = from_pair ? x & element : x;", "simulator_float_families.*"),
 ("n: a failed assert refused as an undefined call", "magics/src/simulator/warp_interpreter.cpp", "callee.name == \"__assertfail\" && in.call_arguments.size() == 5", "callee.name == \"__assertfail\" && false", "simulator_device_runtime.*"),
 ("f3: cvt.rm narrowing rounds up", "magics/src/simulator/warp_operations.cpp", ": in.round == rounding::rm ? back > x", ": in.round == rounding::rm ? back < x", "simulator_math.*"),
 ("a3: a signed sub-word load into a .b64 register keeps 32 bits", "magics/src/simulator/warp_load_store.cpp", "const bool narrow = size < 4 && !wide;", "const bool narrow = size < 4;", "simulator_basics.*"),
 ("i: atomics of parallel blocks without the lock", "magics/src/simulator/warp_operations.cpp", "        if (m_launch.atomic_lock)\n", "        if (false)\n", "simulator_parallel_blocks.*"),
 ("i2: the fault of the highest block reported", "magics/src/simulator/block_executor.cpp", "return a.block < b.block; });", "return a.block > b.block; });", "simulator_parallel_blocks.*"),
 ("j: prmt.b4e read forwards", "magics/src/simulator/warp_integer_operations.cpp", "return (s + 8 - k) & 7; ", "return (s + k) & 7; ", "simulator_integer_families.*"),
 ("j2: dp4a's bytes never signed", "magics/src/simulator/warp_integer_operations.cpp", "const bool a_signed = in.type.is_signed(), b_signed = in.source_type.is_signed();", "const bool a_signed = false, b_signed = false;", "simulator_integer_families.*"),
 ("j3: addc ignores the carry flag", "magics/src/simulator/warp_integer_operations.cpp", "unsigned __int128 in_carry = in.carry_in ? (carry >> l) & 1 : 0;", "unsigned __int128 in_carry = 0 * carry;", "simulator_integer_families.*"),
 ("k: bar.red gives each warp its own count", "magics/src/simulator/block_executor.cpp", "m_warps[w]->finish_reduction(votes, threads);", "m_warps[w]->finish_reduction(m_warps[w]->arrival().votes, threads);", "simulator_barriers.*"),
 ("k2: a named barrier lets its first warp through", "magics/src/simulator/block_executor.cpp", "(count ? arrived * 32 + m_block.arrivals[id] < count : arrived < remaining)", "(count ? arrived < 1 : arrived < remaining)", "simulator_barriers.*"),
 ("k3: bar.arrive counts nothing", "magics/src/simulator/warp_interpreter.cpp", "m_block.arrivals[m_arrival.id] += 32;", "(void)m_block.arrivals;", "simulator_barriers.*"),
 ("g: a call's result not copied back", "magics/src/simulator/warp_interpreter.cpp", "if (done.call && done.call->call_result >= 0 && callee.result >= 0)", "if (false && done.call && done.call->call_result >= 0 && callee.result >= 0)", "simulator_calls.*"),
 ("t: linear filtering weights not quantised to 1/256 (the exact fractions weigh the texels)", "magics/src/simulator/texture_sampler.cpp",
  ("int fraction[3] = {0, 0, 0};  // 9-bit weights, 1/256 units",
   "fraction[d] = weight_units(u - 0.5 - below);",
   "w *= static_cast<float>(upper ? fraction[d] : 256 - fraction[d]) / 256.0f;",
   "w = static_cast<float>(corner_2d[k]) / 256.0f;"),
  ("int fraction[3] = {0, 0, 0};  // 9-bit weights, 1/256 units\n        double exact[3] = {0, 0, 0};",
   "fraction[d] = weight_units(u - 0.5 - below);\n                exact[d] = u - 0.5 - below;",
   "w *= static_cast<float>(upper ? exact[d] : 1 - exact[d]);",
   "w = static_cast<float>(((k & 1) ? exact[0] : 1 - exact[0]) * ((k & 2) ? exact[1] : 1 - exact[1]));"),
  "simulator_textures.*"),
 ("t2: wrap addresses clamp", "magics/src/simulator/texture_sampler.cpp", "case address_mode::wrap: return ((i % n) + n) % n;", "case address_mode::wrap: return std::min(std::max(i, 0ll), n - 1);", "simulator_textures.*"),
 ("t3: normalised reads of signed bytes not clamped to -1", "magics/src/simulator/texture_sampler.cpp", "out.real = std::max(static_cast<float>(out.integer) / scale, -1.0f);", "out.real = static_cast<float>(out.integer) / scale;", "simulator_textures.*"),
 ("t4: surface .trap outside the array lets the store through", "magics/src/simulator/warp_texture_operations.cpp", "                if (clamp == surface_clamp::trap)", "                if (false)", "simulator_textures.*"),
 ("o: barrier.cluster.wait never waits (the cluster barrier a no-op)", "magics/src/simulator/warp_cluster_operations.cpp", "        if (cluster->phase <= m_cluster_phase)", "        if (false && cluster->phase <= m_cluster_phase)", "simulator_clusters.*"),
 ("o2: mapa keeps the executing block's window", "magics/src/simulator/warp_cluster_operations.cpp", "reinterpret_cast<std::uintptr_t>(cluster->blocks[rank]->shared) + offset", "reinterpret_cast<std::uintptr_t>(m_block.shared) + offset", "simulator_clusters.*"),
 ("o3: a cluster phase does not start a new race interval", "magics/src/simulator/block_clusters.cpp", "                block->m_block.sync_checks->synchronised(sync_scope::block, 0);", "                (void)block;  // the cluster barrier", "simulator_clusters.*"),
 ("o4: an ended block's shared memory stays readable", "magics/src/simulator/warp_cluster_operations.cpp", "                if (cluster.exited[b])", "                if (false)", "simulator_clusters.*"),
 ("o5: %clusterid is the block's id", "magics/src/simulator/warp_cluster_operations.cpp", "case special_register::clusterid_x: v = id[0] / dims[0]; break;", "case special_register::clusterid_x: v = id[0]; break;", "simulator_clusters.*"),
 ("o6: isspacep.shared::cluster sees only the block's own window", "magics/src/simulator/warp_cluster_operations.cpp", "            shared = shared || (space == state_space::shared_cluster &&", "            shared = shared || (false &&", "simulator_clusters.*"),
 ("t5: tld4 in the wrong order", "magics/src/simulator/texture_sampler.cpp", "const int offsets[4][2] = {{0, 1}, {1, 1}, {1, 0}, {0, 0}};", "const int offsets[4][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};", "simulator_textures.*"),
 ("p: the shared initcheck never reports", "magics/src/simulator/init_check.cpp", "                    m_pending = true;", "                    m_pending = false;", "simulator_checks.*"),
 ("p2: a shared read reported at once, not at the next barrier (before the race it is part of)", "magics/src/simulator/init_check.cpp", "                    m_pending_byte = i;", "                    m_pending_byte = i;\n                    report_pending(block);", "simulator_shared_memory.*:simulator_parallel_blocks.*"),
 ("p3: the global initcheck never reports", "magics/src/simulator/init_check.cpp", "            if (first >= 0)", "            if (false && first >= 0)", "simulator_checks.*"),
 ("p4: a kernel's global stores not marked written", "magics/src/simulator/init_check.cpp", "        written_memory::mark(*r, offset, access.bytes);", "        (void)offset;", "simulator_checks.*"),
 ("p5: a copy between allocations carries nothing", "magics/src/simulator/written_memory.cpp", "                mark(*target, to - target->start + i, 1);", "                (void)target;", "simulator_checks.*"),
 ("q: the warp race check never runs", "magics/src/simulator/sim_checker.cpp", "{ return o.warp_race; }", "{ return false && o.warp_race; }", "simulator_checks.*"),
 ("q2: __syncwarp() does not end a warp's interval", "magics/src/simulator/warp_race_check.cpp", "            m_interval[warp] = ++m_clock;", "            (void)warp;", "simulator_checks.*"),
 ("r: another block's generic writes to a block's shared memory not seen by its checks", "magics/src/simulator/warp_cluster_operations.cpp", "                    check_remote_shared(*cluster.blocks[b], in, address - base, bytes, lane, write);", "                    (void)write;", "simulator_clusters.*"),
 ("r2: another block's shared::cluster writes not seen by its checks", "magics/src/simulator/warp_cluster_operations.cpp", "            check_remote_shared(*cluster->blocks[owner], in, offset, bytes, lane, write);", "            (void)write;", "simulator_clusters.*:simulator_checks.*"),
 ("s: the async-copy check never runs", "magics/src/simulator/sim_checker.cpp", "{ return o.async_copy; }", "{ return false && o.async_copy; }", "simulator_async_hazards.*"),
 ("s2: a landed copy's bytes stay pending", "magics/src/simulator/async_hazard_check.cpp", "                owner[i] = 0;\n                --m_pending;", "                --m_pending;", "simulator_async_hazards.*"),
 ("u: a multicast lands only in the issuing block", "magics/src/simulator/warp_cluster_copies.cpp", "            return cta_mask(in, in.operands[mask_operand], lane);", "            return static_cast<std::uint16_t>(cta_mask(in, in.operands[mask_operand], lane) & (1u << m_block.cluster_rank));", "simulator_tma_clusters.*"),
 ("u2: a .shared::cluster mbarrier address is the executing block's", "magics/src/simulator/warp_cluster_operations.cpp", "        block_state& block = *cluster->blocks[rank];", "        block_state& block = m_block;", "simulator_tma_clusters.*"),
 ("u3: an f16 sum rounded toward zero", "magics/src/simulator/warp_tensor_operations.cpp", "case opcode::add: r = two_sum(x, y, tail), r = round_to(f, r, tail, rounding::rn); break;", "case opcode::add: r = two_sum(x, y, tail), r = round_to(f, r, tail, rounding::rz); break;", "simulator_tma_clusters.*"),
 ("u4: a cluster pass sees only each block's own barrier changes", "magics/src/simulator/block_clusters.cpp", "            progress = progress || (yielded && mbarrier_changes() != changes);", "            progress = progress || (yielded && false && mbarrier_changes() != changes);", "simulator_tma_clusters.*"),
 ("u5: .inc reductions wrap at the limit + 1", "magics/src/simulator/warp_tensor_operations.cpp", "case opcode::inc: return a >= b ? T(0) : static_cast<T>(a + 1);", "case opcode::inc: return a > b ? T(0) : static_cast<T>(a + 1);", "simulator_tma_clusters.*"),
 # TMA tensor copies (warp_tensor_operations.cpp)
 ("v: a tile's coordinates all read from the first coordinate register (y taken as x)", "magics/src/simulator/warp_tensor_operations.cpp", "m_registers[static_cast<std::size_t>(o.regs[i]) * 32 + lane] & 0xffffffffu)", "m_registers[static_cast<std::size_t>(o.regs[0]) * 32 + lane] & 0xffffffffu)", "simulator_tma.*"),
 ("v2: the NaN out-of-bounds fill ignored (zeros)", "magics/src/simulator/warp_tensor_operations.cpp", "const std::uint64_t fill = m.oob_fill ? nan_of(size) : 0;", "const std::uint64_t fill = 0;", "simulator_tma.*"),
 ("v3: the element at an extent counted inside the tensor", "magics/src/simulator/warp_tensor_operations.cpp", "static_cast<std::uint64_t>(x[i]) >= m.dims[i]", "static_cast<std::uint64_t>(x[i]) > m.dims[i]", "simulator_tma.*:simulator_tma_clusters.*"),
 ("v4: element strides ignored (every row of the box read)", "magics/src/simulator/warp_tensor_operations.cpp", "x[i] = start[i] + static_cast<std::int64_t>(e[i] * step[i]);", "x[i] = start[i] + static_cast<std::int64_t>(e[i]);", "simulator_tma.*"),
 ("v5: the swizzle XORs bits 8.. instead of 7..", "magics/src/simulator/warp_tensor_operations.cpp", "return a ^ (((a >> 7) & mask) << 4);", "return a ^ (((a >> 8) & mask) << 4);", "simulator_tma.*"),
 ("v6: im2col pixels wrap one before the upper corner", "magics/src/simulator/warp_tensor_operations.cpp", "pixel[k] <= static_cast<std::int64_t>(m.dims[k]) - 1 + m.upper[k - 1]", "pixel[k] < static_cast<std::int64_t>(m.dims[k]) - 1 + m.upper[k - 1]", "simulator_tma.*"),
 # multicast and remote mbarriers (warp_cluster_copies.cpp, warp_async_operations.cpp)
 ("w: a tile multicast ignores the ctaMask's bit 1 (no tile lands in rank 1; its barrier still completes)", "magics/src/simulator/warp_tensor_operations.cpp", "            if (!((mask >> rank) & 1))\n", "            if (!((mask >> rank) & 1) || rank == 1)\n", "simulator_tma_clusters.*"),
 ("w2: a bulk multicast ignores the ctaMask's bit 0 (no bytes land in rank 0; its barrier still completes)", "magics/src/simulator/warp_async_operations.cpp", "            if ((mask >> rank) & 1)\n            {\n                land_shared(", "            if ((mask >> rank) & 1 && rank != 0)\n            {\n                land_shared(", "simulator_tma_clusters.*"),
 ("x: mbarrier.complete_tx.shared::cluster changes the executing block's barrier, not the one its address names", "magics/src/simulator/warp_async_operations.cpp", "std::uint64_t& word = *reinterpret_cast<std::uint64_t*>(place.block->shared + place.offset);", "std::uint64_t& word = *reinterpret_cast<std::uint64_t*>((in.var == variant::mbar_complete_tx ? m_block.shared : place.block->shared) + place.offset);", "simulator_tma_clusters.*:simulator_mbarrier.*:simulator_async_copies.*"),
 ("x2: a copy's bytes complete on the executing block's barrier (not the destination's)", "magics/src/simulator/warp_cluster_copies.cpp", "block_state& target = cluster_member(rank);\n        auto& word", "block_state& target = m_block;\n        (void)rank;\n        auto& word", "simulator_tma_clusters.*"),
 ("x3: mbarrier.expect_tx done as complete_tx (its bytes subtracted)", "magics/src/simulator/warp_async_operations.cpp", "in.var == variant::mbar_expect_tx ? v : -v", "-v", "simulator_tma_clusters.*:simulator_mbarrier.*:simulator_async_copies.*"),
 # bulk and tensor reductions (warp_tensor_operations.cpp)
 ("y: .add reductions of integers and floats done as .min", "magics/src/simulator/warp_tensor_operations.cpp", "case opcode::add: return static_cast<T>(a + b);", "case opcode::add: return b < a ? b : a;", "simulator_tma.*:simulator_tma_clusters.*"),
 ("y2: .min.f16/.bf16 of a NaN and a number gives the NaN", "magics/src/simulator/warp_tensor_operations.cpp", "case opcode::min: r = std::isnan(x) ? y : std::isnan(y) ? x :", "case opcode::min: r = std::isnan(x) ? x : std::isnan(y) ? y :", "simulator_tma_clusters.*"),
 ("y3: .dec of 0 wraps (old == 0 not reset to the limit)", "magics/src/simulator/warp_tensor_operations.cpp", "case opcode::dec: return a == 0 || a > b ? b", "case opcode::dec: return a > b ? b", "simulator_tma_clusters.*"),
 ("y4: a bulk reduction into global memory copies instead", "magics/src/simulator/warp_tensor_operations.cpp", "                reduce_element(in.family_op, in.type.kind, element, target, m_block.shared + from + k);", "                std::memcpy(target, m_block.shared + from + k, element);", "simulator_tma.*:simulator_tma_clusters.*"),
 ("y5: .bf16 reductions computed as .f16", "magics/src/simulator/warp_tensor_operations.cpp", "const float_format& f = kind == 'h' ? binary16 : bfloat16;", "const float_format& f = binary16;", "simulator_tma_clusters.*"),
 # textures and surfaces
 ("t6: the 2-D corner weights' (1, 0) ties rounded up (an H100 rounds them down)", "magics/src/simulator/texture_sampler.cpp", "out[1] = (a * (256 - b) + 127) >> 8;", "out[1] = (a * (256 - b) + 128) >> 8;", "simulator_textures.*"),
 ("t7: surface .zero clamps instead of dropping", "magics/src/simulator/warp_texture_operations.cpp", "if (clamp == surface_clamp::zero)", "if (false)", "simulator_textures.*"),
 ("t8: mirror addresses wrap", "magics/src/simulator/texture_sampler.cpp", "return m < n ? m : 2 * n - 1 - m;", "return m % n;", "simulator_textures.*"),
 ("t9: wrap and mirror honoured with unnormalised coordinates (a GPU clamps)", "magics/src/simulator/texture_sampler.cpp", "if (!normalized && (mode == address_mode::wrap", "if (false && (mode == address_mode::wrap", "simulator_textures.*"),
 ("t10: txq/suq .height answers the width", "magics/src/simulator/warp_texture_operations.cpp", "case texture_query::height: return static_cast<std::uint32_t>(a.height);", "case texture_query::height: return static_cast<std::uint32_t>(a.width);", "simulator_textures.*"),
 ("q3: lanes of one store compared with each other", "magics/src/simulator/warp_race_check.cpp", " && r.step != access.step;", ";", "simulator_checks.*"),
]


def label(entry):
    return entry[0].split(":", 1)[0]


def edits(entry):
    """The (old, new) pairs of an entry."""
    _, _, old, new, _ = entry
    olds, news = (old,) if isinstance(old, str) else tuple(old), (new,) if isinstance(new, str) else tuple(new)
    if len(olds) != len(news):
        raise ValueError(f"{label(entry)}: {len(olds)} texts to replace, {len(news)} replacements")
    return list(zip(olds, news))


def stale(entries=M):
    """One line per problem: an old text not found exactly once in its file, a label used twice."""
    problems, seen = [], set()
    for entry in entries:
        name, path = label(entry), entry[1]
        if name in seen:
            problems.append(f"{name}: the label is used by another entry too")
        seen.add(name)
        source = R / path
        text = source.read_text() if source.exists() else None
        for k, (old, _) in enumerate(edits(entry)):
            count = 0 if text is None else text.count(old)
            if count != 1:
                where = "the file is missing" if text is None else f"found {count} times"
                problems.append(f"{name}: edit {k + 1} of {path}: {where} (wants once): {old.splitlines()[0][:80]!r}")
    return problems


def mutated(text, pairs):
    for old, new in pairs:
        assert text.count(old) == 1
        text = text.replace(old, new)
    return text


def restore_journal():
    """Writes back every file an interrupted run left mutated; True when there was one."""
    if not JOURNAL.exists():
        return False
    for path, text in json.loads(JOURNAL.read_text()).items():
        Path(path).write_text(text)
        print(f"restored {path} from {JOURNAL}")
    JOURNAL.unlink()
    return True


class Stopped(Exception):
    pass


def _stop(signum, frame):
    raise Stopped(f"signal {signum}")


def build(jobs):
    return subprocess.run(["cmake", "--build", str(BUILD), "--target", "xcuda_simulator_tests", f"-j{jobs}"],
                          capture_output=True, text=True)


def run_one(entry, jobs):
    """Mutates, builds, runs the entry's family; the source and the journal are put back in every case."""
    name, path, _, _, tests = entry
    source = R / path
    text = source.read_text()
    JOURNAL.write_text(json.dumps({str(source): text}))
    try:
        source.write_text(mutated(text, edits(entry)))
        built = build(jobs)
        if built.returncode:
            return f"{name}: the mutated source did not build\n{built.stdout[-2000:]}"
        ran = subprocess.run([str(BUILD / "bin" / "xcuda_simulator_tests"), "--gtest_filter=" + tests],
                             capture_output=True, text=True, timeout=600)
        failed = sorted({line.split()[3] for line in ran.stdout.splitlines()
                         if line.startswith("[  FAILED  ]") and "." in line and "listed" not in line})
        if ran.returncode and not failed:
            return f"{name}: caught: the test binary ended with {ran.returncode} ({ran.stdout[-300:]!r})"
        return f"{name}: {'caught by ' + ', '.join(failed) if failed else 'NOT CAUGHT'}"
    except subprocess.TimeoutExpired:
        return f"{name}: caught? the tests ran past 600 s (a hang)"
    finally:
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGHUP, signal.SIGINT})
        try:
            source.write_text(text)
            assert source.read_text() == text, f"{path} was not restored"
            JOURNAL.unlink()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


def run_all(entries, jobs):
    """Each entry in turn; SIGTERM and SIGHUP end the run through run_one's restoring `finally`."""
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)
    try:
        for entry in entries:
            print(run_one(entry, jobs), flush=True)
    finally:
        build(jobs)  # the binary of the restored sources


def chosen(names):
    by_label = {label(e): e for e in M}
    picked = []
    for n in names:
        if n in by_label:
            picked.append(by_label[n])
        elif n.isdigit() and int(n) < len(M):
            picked.append(M[int(n)])
        else:
            sys.exit(f"no mutation {n!r}: give a label ({', '.join(by_label)}) or an index below {len(M)}")
    return picked or M


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("which", nargs="*", help="labels or indexes (all when none)")
    parser.add_argument("--check", action="store_true", help="only check each edit's text occurs once; no build")
    parser.add_argument("--restore", action="store_true", help="restore what an interrupted run left mutated")
    parser.add_argument("--list", action="store_true", help="print index, label and file of each entry")
    parser.add_argument("--jobs", type=int, default=1, help="build jobs (default 1)")
    args = parser.parse_args()
    if args.list:
        for k, e in enumerate(M):
            print(f"{k:3} {label(e):4} {e[1]}  {e[0].split(':', 1)[1].strip()}")
        return 0
    restored = restore_journal()
    if args.restore:
        print("restored" if restored else "nothing to restore")
        return 0
    problems = stale(chosen(args.which) if args.which else M)
    if args.check or problems:
        print("\n".join(problems) or f"all {len(M)} entries: each edit's text occurs once in its file")
        return 1 if problems else 0
    run_all(chosen(args.which), args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
