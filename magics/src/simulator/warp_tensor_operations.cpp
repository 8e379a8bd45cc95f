// warp_interpreter's TMA family (issue 45 item 3): cp.async.bulk.tensor loads and stores through a tensor map,
// cp.reduce.async.bulk(.tensor), cp.async.bulk from shared to global memory and its groups. The model
// (docs/simulator.md, "TMA: tensor maps and bulk tensor copies"):
// - a load lands at issue: every element of the box (tiled) or of the im2col column is read, the ones outside
//   the tensor filled with zeros (NaN with the map's OOB fill), written to shared memory in the box's order at
//   the swizzled address, then the copy's bytes complete on the mbarrier;
// - a store (or reduction) reads shared memory at issue and writes the elements inside the tensor; the ones
//   outside are dropped. commit_group / wait_group have nothing left to wait for;
// - the map is the shim's descriptor (tensor_map_descriptor), read from the 128 bytes the operand points at.
// Kept apart from warp_operations.cpp: nothing here is on the path of ordinary instructions.

#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "float_formats.hpp"
#include "tensor_map_descriptor.hpp"
#include "warp_interpreter.hpp"
#include "warp_values.hpp"

namespace xcuda::sim
{
    namespace
    {
        // The swizzle modes place each 16-byte chunk of a 32/64/128-byte span at the chunk index XOR the address'
        // bits 7.. (CUTLASS's Swizzle<1|2|3, 4, 3>): bits [4, 4 + s) ^= bits [7, 7 + s), from the shared address.
        std::uint32_t swizzled(std::uint32_t a, unsigned swizzle)
        {
            if (!swizzle)
            {
                return a;
            }
            std::uint32_t mask = (1u << swizzle) - 1;
            return a ^ (((a >> 7) & mask) << 4);
        }

        // Calls visit(index, coordinates) for each element a copy moves, in shared memory's order: the box
        // (tiled: box[i] / element_strides[i] elements per dimension, innermost fastest; dimension 0 takes every
        // element without interleave) or the im2col column (pixels x channels: the pixels walk the bounding box
        // W, then H, then D, then N, from the copy's coordinates, each read at its coordinates plus the offsets).
        using visitor = std::function<void(std::uint64_t, const std::int64_t*)>;
        std::uint64_t walk(const tensor_map_descriptor& m, const std::int64_t* start, const std::int64_t* offsets,
                           const visitor& visit)
        {
            std::int64_t x[5] = {};
            std::uint64_t index = 0;
            if (m.im2col)
            {
                const unsigned n = m.rank - 1;  // the batch dimension; 1 .. n - 1 are W, H, D
                std::int64_t pixel[5] = {};
                std::copy(start, start + m.rank, pixel);
                for (std::uint32_t p = 0; p < m.pixels; ++p)
                {
                    for (unsigned k = 1; k < n; ++k)
                    {
                        x[k] = pixel[k] + offsets[k - 1];
                    }
                    x[n] = pixel[n];
                    for (std::uint32_t c = 0; c < m.channels; ++c, ++index)
                    {
                        x[0] = start[0] + c;
                        visit(index, x);
                    }
                    for (unsigned k = 1; k <= n; ++k)  // the next pixel: W first, wrapping inside the bounding box
                    {
                        pixel[k] += k < n ? m.element_strides[k] : 1;
                        if (k == n || pixel[k] <= static_cast<std::int64_t>(m.dims[k]) - 1 + m.upper[k - 1])
                        {
                            break;
                        }
                        pixel[k] = m.lower[k - 1];
                    }
                }
                return index;
            }
            std::uint64_t count[5] = {1, 1, 1, 1, 1};
            std::uint32_t step[5] = {1, 1, 1, 1, 1};
            for (unsigned i = 0; i < m.rank; ++i)
            {
                step[i] = i == 0 && m.interleave == 0 ? 1 : m.element_strides[i];
                count[i] = (m.box[i] + step[i] - 1) / step[i];
            }
            for (std::uint64_t e4 = 0; e4 < count[4]; ++e4)
                for (std::uint64_t e3 = 0; e3 < count[3]; ++e3)
                    for (std::uint64_t e2 = 0; e2 < count[2]; ++e2)
                        for (std::uint64_t e1 = 0; e1 < count[1]; ++e1)
                            for (std::uint64_t e0 = 0; e0 < count[0]; ++e0, ++index)
                            {
                                const std::uint64_t e[5] = {e0, e1, e2, e3, e4};
                                for (unsigned i = 0; i < 5; ++i)
                                {
                                    x[i] = start[i] + static_cast<std::int64_t>(e[i] * step[i]);
                                }
                                visit(index, x);
                            }
            return index;
        }

        // The global address of element x, or nothing when it lies outside the tensor.
        bool element_address(const tensor_map_descriptor& m, const std::int64_t* x, std::uint64_t& address)
        {
            address = m.address;
            for (unsigned i = 0; i < m.rank; ++i)
            {
                if (x[i] < 0 || static_cast<std::uint64_t>(x[i]) >= m.dims[i])
                {
                    return false;
                }
                address += static_cast<std::uint64_t>(x[i]) * m.strides[i];
            }
            return true;
        }

        // A NaN of the map's float type (the OOB fill NAN_REQUEST_ZERO_FMA; the GPU's bits are not claimed).
        std::uint64_t nan_of(unsigned bytes)
        {
            return bytes == 2 ? 0x7fffull : bytes == 4 ? 0x7fffffffull : 0x7fffffffffffffffull;
        }

        template <class T>
        T combine(opcode op, T a, T b)
        {
            switch (op)
            {
            case opcode::add: return static_cast<T>(a + b);
            case opcode::min: return b < a ? b : a;
            case opcode::max: return a < b ? b : a;
            case opcode::inc: return a >= b ? T(0) : static_cast<T>(a + 1);  // PTX: ((old >= b) ? 0 : old + 1)
            case opcode::dec: return a == 0 || a > b ? b : static_cast<T>(a - 1);  // ((old == 0 || old > b) ? b : old - 1)
            default: break;
            }
            if constexpr (std::is_integral_v<T>)
            {
                return op == opcode::and_ ? a & b : op == opcode::or_ ? a | b : a ^ b;
            }
            return a;
        }

        template <class T>
        void reduce_into(opcode op, std::uint8_t* to, const std::uint8_t* from)
        {
            T a, b;
            std::memcpy(&a, to, sizeof a);
            std::memcpy(&b, from, sizeof b);
            a = combine(op, a, b);
            std::memcpy(to, &a, sizeof a);
        }

        // A .f16 ('h') or .bf16 ('g') element: add rounded to nearest even once (the exact sum: a double and its tail),
        // subnormals kept (.noftz); min and max of a NaN and a number give the number, as min/max.f16 do.
        bool reduce_half(opcode op, char kind, std::uint8_t* to, const std::uint8_t* from)
        {
            const float_format& f = kind == 'h' ? binary16 : bfloat16;
            std::uint16_t a, b;
            std::memcpy(&a, to, 2);
            std::memcpy(&b, from, 2);
            const double x = decode(f, a), y = decode(f, b);
            double r;
            int tail = 0;
            switch (op)
            {
            case opcode::add: r = two_sum(x, y, tail), r = round_to(f, r, tail, rounding::rn); break;
            case opcode::min: r = std::isnan(x) ? y : std::isnan(y) ? x : (y < x || (y == x && std::signbit(y)) ? y : x); break;
            case opcode::max: r = std::isnan(x) ? y : std::isnan(y) ? x : (y > x || (y == x && !std::signbit(y)) ? y : x); break;
            default: return false;
            }
            const std::uint16_t bits = static_cast<std::uint16_t>(encode(f, r));
            std::memcpy(to, &bits, 2);
            return true;
        }

        // One element of `kind` ('u', 's', 'f'; 'b' as 'u'; 'h' .f16, 'g' .bf16) and `bytes` combined into `to`; false
        // when PTX has no such reduction.
        bool reduce_element(opcode op, char kind, unsigned bytes, std::uint8_t* to, const std::uint8_t* from)
        {
            if (kind == 'h' || kind == 'g')
            {
                return reduce_half(op, kind, to, from);
            }
            const bool integer_only = op == opcode::and_ || op == opcode::or_ || op == opcode::xor_ || op == opcode::inc ||
                                      op == opcode::dec;
            if ((kind == 'f' && integer_only) || ((op == opcode::inc || op == opcode::dec) && (bytes != 4 || kind == 's')))
            {
                return false;
            }
            switch (bytes * 256 + static_cast<unsigned char>(kind))
            {
            case 4 * 256 + 'u': case 4 * 256 + 'b': reduce_into<std::uint32_t>(op, to, from); return true;
            case 4 * 256 + 's': reduce_into<std::int32_t>(op, to, from); return true;
            case 8 * 256 + 'u': case 8 * 256 + 'b': reduce_into<std::uint64_t>(op, to, from); return true;
            case 8 * 256 + 's': reduce_into<std::int64_t>(op, to, from); return true;
            case 4 * 256 + 'f': reduce_into<float>(op, to, from); return true;
            case 8 * 256 + 'f': reduce_into<double>(op, to, from); return true;
            default: return false;
            }
        }

        // A map's data type as reduce_element's kind: CU_TENSOR_MAP_DATA_TYPE_FLOAT16 (6) 'h', BFLOAT16 (9) 'g'.
        char kind_of(unsigned data_type)
        {
            return data_type == 6 ? 'h' : data_type == 9 ? 'g' : data_type == 3 || data_type == 5 ? 's'
                                                            : tensor_map_descriptor::floating(data_type) ? 'f' : 'u';
        }
    }

    void warp_interpreter::tensor_copy_operation(const instruction& in, std::uint32_t active)
    {
        XCUDA_SIM_LANES(active)
        {
            switch (in.var)
            {
            case variant::bulk_tensor_load:
                tensor_load(in, l);
                break;
            case variant::bulk_tensor_store:
            case variant::bulk_tensor_reduce:
                tensor_store(in, l);
                break;
            case variant::bulk_store:
            case variant::bulk_reduce:
                bulk_store(in, l);
                break;
            default:
                break;  // commit_group, wait_group(.read): every bulk copy completed when it was issued
            }
        }
    }

    // The map operand [map, {coordinates}] of `lane`: the descriptor behind it (read as 16 words, so that a map in
    // the parameters, global or constant memory is found like any generic address) and the coordinates.
    tensor_map_descriptor warp_interpreter::tensor_map_of(const instruction& in, const operand& o, unsigned lane,
                                                          std::int64_t* coordinates)
    {
        std::uint64_t a = o.value;
        if (o.reg >= 0)
        {
            a += m_registers[static_cast<std::size_t>(o.reg) * 32 + lane];
        }
        else if (o.symbol >= 0)
        {
            a += symbol_value(m_launch.program->symbols[static_cast<std::size_t>(o.symbol)], lane);
        }
        std::uint8_t bytes[128];
        for (unsigned k = 0; k < 128; k += 8)
        {
            std::memcpy(bytes + k, translate(state_space::generic, a + k, lane, 8, false, in, false), 8);
        }
        tensor_map_descriptor m;
        if (!tensor_map_descriptor::read(bytes, m))
        {
            fault(in, lane, "reads a tensor map at generic address " + hex(a) + " that is not one: its 128 bytes were not "
                            "written by the simulator's cuTensorMapEncodeTiled/Im2col (pass an xcuda.tensor_map made in this "
                            "session, or the CUtensorMap parameter's address)");
        }
        const unsigned dims = in.texture_form & 7u;
        const bool im2col = (in.texture_form & 8u) != 0;
        if (m.rank != dims || (in.var == variant::bulk_tensor_load && m.im2col != im2col) ||
            (in.var != variant::bulk_tensor_load && m.im2col))
        {
            fault(in, lane, "copies a " + std::to_string(dims) + "d " + (im2col ? "im2col" : "tile") + " box through a " +
                                std::string(m.im2col ? "im2col" : "tiled") + " tensor map of rank " + std::to_string(m.rank) +
                                " (the instruction's .Nd and mode must match the map)");
        }
        for (unsigned i = 0; i < 5; ++i)
        {
            coordinates[i] = i < dims ? static_cast<std::int32_t>(
                                            m_registers[static_cast<std::size_t>(o.regs[i]) * 32 + lane] & 0xffffffffu)
                                      : 0;
        }
        return m;
    }

    // The box lands in each destination block (the ctaMask's with .multicast::cluster, else the one the destination
    // names: warp_cluster_copies.cpp) at the destination's offset, then its bytes complete on each one's mbarrier.
    void warp_interpreter::tensor_load(const instruction& in, unsigned lane)
    {
        std::int64_t start[5], offsets[3] = {};
        tensor_map_descriptor m = tensor_map_of(in, in.operands[1], lane, start);
        if (m.im2col)
        {
            const operand& v = in.operands[3];
            for (unsigned k = 0; k < v.count; ++k)
            {
                offsets[k] = static_cast<std::int64_t>(m_registers[static_cast<std::size_t>(v.regs[k]) * 32 + lane] & 0xffffu);
            }
        }
        const unsigned size = tensor_map_descriptor::element_bytes(m.data_type);
        const std::uint64_t elements = walk(m, start, offsets, [](std::uint64_t, const std::int64_t*) {});
        const std::uint64_t bytes = elements * size;
        const shared_place to = shared_window(in, in.operands[0], lane, static_cast<unsigned>(bytes), 128, true);
        const shared_place bar = shared_window(in, in.operands[2], lane, 8, 8, true);
        const int mask_operand = in.bulk_form == bulk_multicast ? (m.im2col ? 4 : 3) : -1;
        const std::uint16_t mask = destinations(in, lane, to, bar, mask_operand);
        const std::uint64_t fill = m.oob_fill ? nan_of(size) : 0;
        for (unsigned rank = 0; rank < 16; ++rank)
        {
            if (!((mask >> rank) & 1))
            {
                continue;
            }
            block_state& target = cluster_member(rank);
            walk(m, start, offsets, [&](std::uint64_t index, const std::int64_t* x) {
                std::uint32_t at = swizzled(to.offset + static_cast<std::uint32_t>(index * size), m.swizzle);
                if (at + size > target.shared_bytes)
                {
                    fault(in, lane, "lands the swizzled element " + std::to_string(index) + " at shared address " + hex(at) +
                                        ", outside the block's " + std::to_string(target.shared_bytes) + " bytes");
                }
                std::uint64_t from = 0;
                const void* value = &fill;
                if (element_address(m, x, from))
                {
                    value = translate(state_space::global, from, lane, size, false, in, false);
                }
                land_shared(in, lane, target, at, size, value);
            });
        }
        for (unsigned rank = 0; rank < 16; ++rank)
        {
            if ((mask >> rank) & 1)
            {
                complete_bytes(in, lane, rank, bar.offset, bytes);
            }
        }
    }

    void warp_interpreter::tensor_store(const instruction& in, unsigned lane)
    {
        std::int64_t start[5], offsets[3] = {};
        tensor_map_descriptor m = tensor_map_of(in, in.operands[0], lane, start);
        const unsigned size = tensor_map_descriptor::element_bytes(m.data_type);
        const std::uint64_t elements = walk(m, start, offsets, [](std::uint64_t, const std::int64_t*) {});
        const std::uint32_t from = shared_operand(in, in.operands[1], lane, static_cast<unsigned>(elements * size), 128);
        const char kind = kind_of(m.data_type);
        walk(m, start, offsets, [&](std::uint64_t index, const std::int64_t* x) {
            std::uint32_t at = swizzled(from + static_cast<std::uint32_t>(index * size), m.swizzle);
            if (at + size > m_block.shared_bytes)
            {
                fault(in, lane, "reads the swizzled element " + std::to_string(index) + " at shared address " + hex(at) +
                                    ", outside the block's " + std::to_string(m_block.shared_bytes) + " bytes");
            }
            std::uint64_t to = 0;
            if (!element_address(m, x, to))
            {
                return;  // outside the tensor: not written
            }
            if (m_block.shared_checks)
            {
                check_shared(in, at, size, lane, false);
            }
            std::uint8_t* target = translate(state_space::global, to, lane, size, true, in, false);
            if (in.var == variant::bulk_tensor_store)
            {
                std::memcpy(target, m_block.shared + at, size);
            }
            else if (!reduce_element(in.family_op, kind, size, target, m_block.shared + at))
            {
                throw sim_error(sim_error::kind::unsupported,
                                "kernel '" + m_launch.kernel + "': '" + in.text + "' reduces elements of data type " +
                                    std::to_string(m.data_type) + " (" + std::to_string(size) + " bytes), which PTX "
                                    "does not (.add, .min, .max of integers, floats, .f16, .bf16; .inc, .dec of .u32; "
                                    ".and, .or, .xor of integers), at " + where(in));
            }
        });
    }

    // cp{.reduce}.async.bulk.global.shared::cta.bulk_group [global], [shared], size: size bytes (a multiple of 16,
    // both addresses 16-aligned), copied or reduced element by element now. cp.reduce.async.bulk.shared::cluster.
    // shared::cta.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]: reduced into a block's window of the
    // cluster, then size bytes complete on its mbarrier.
    void warp_interpreter::bulk_store(const instruction& in, unsigned lane)
    {
        source s = fetch(in.operands[2], 0);
        std::uint64_t size = s.p[s.stride * lane] & 0xffffffffu;
        if (size == 0 || size % 16 != 0)
        {
            fault(in, lane, "copies " + std::to_string(size) + " bytes (PTX: a multiple of 16)");
        }
        std::uint32_t from = shared_operand(in, in.operands[1], lane, static_cast<unsigned>(size), 16);
        if (m_block.shared_checks)
        {
            check_shared(in, from, static_cast<unsigned>(size), lane, false);
        }
        const unsigned element = in.var == variant::bulk_reduce ? in.type.bytes() : 16u;
        if (in.bulk_form == bulk_to_cluster)
        {
            const shared_place to = shared_window(in, in.operands[0], lane, static_cast<unsigned>(size), 16, true);
            const shared_place bar = shared_window(in, in.operands[3], lane, 8, 8, true);
            destinations(in, lane, to, bar, -1);
            std::vector<std::uint8_t> combined(to.block->shared + to.offset, to.block->shared + to.offset + size);
            for (std::uint64_t k = 0; k < size; k += element)
            {
                reduce_element(in.family_op, in.type.kind, element, combined.data() + k, m_block.shared + from + k);
            }
            land_shared(in, lane, *to.block, to.offset, static_cast<unsigned>(size), combined.data());
            complete_bytes(in, lane, to.rank, bar.offset, size);
            return;
        }
        std::uint64_t to = in.operands[0].value;
        if (in.operands[0].reg >= 0)
        {
            to += m_registers[static_cast<std::size_t>(in.operands[0].reg) * 32 + lane];
        }
        if (to % 16 != 0)
        {
            fault(in, lane, "writes global address " + hex(to) + ", which is not aligned to 16 bytes");
        }
        for (std::uint64_t k = 0; k < size; k += element)
        {
            std::uint8_t* target = translate(state_space::global, to + k, lane, element, true, in, false);
            if (in.var == variant::bulk_store)
            {
                std::memcpy(target, m_block.shared + from + k, element);
            }
            else
            {
                reduce_element(in.family_op, in.type.kind, element, target, m_block.shared + from + k);
            }
        }
    }
}
