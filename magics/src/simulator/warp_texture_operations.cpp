// warp_interpreter's texture and surface family (issue 46): tex, tld4, suld.b, sust.b, txq and suq over the
// texture and surface objects of the launch's texture_registry (docs/textures.md). The sampling itself is
// texture_sampler's; this file reads the operands, finds each lane's object and writes the results. Kept apart
// from the arithmetic so that its switch stays as it was.

#include <algorithm>
#include <cstring>

#include "texture_decoder.hpp"
#include "texture_sampler.hpp"
#include "warp_interpreter.hpp"
#include "warp_values.hpp"

namespace xcuda::sim
{
    namespace
    {
        // A surface access's byte offset in its array, after the clamp mode; false when it is dropped
        // (.zero). `at` is x in bytes, y, and z or the layer; a .trap access outside is reported by `outside`.
        template <class Outside>
        bool surface_offset(const sim_array& a, texture_geometry g, long long at[3], unsigned bytes, surface_clamp clamp,
                            std::size_t& offset, Outside outside)
        {
            long long limit[3] = {static_cast<long long>(a.row_bytes()), static_cast<long long>(a.rows()),
                                  static_cast<long long>(a.slices())};
            unsigned dims = texture_decoder::dimensions(g);
            bool inside = at[0] >= 0 && at[0] + static_cast<long long>(bytes) <= limit[0];
            for (unsigned d = 1; d < 3; ++d)
            {
                bool used = d < dims || (d == 2 && texture_decoder::layered(g));
                at[d] = used ? at[d] : 0;
                inside = inside && at[d] >= 0 && at[d] < limit[d];
            }
            if (!inside)
            {
                if (clamp == surface_clamp::zero)
                {
                    return false;
                }
                if (clamp == surface_clamp::trap)
                {
                    outside();
                }
                at[0] = std::min(std::max(at[0], 0ll), limit[0] - static_cast<long long>(bytes)) / bytes * bytes;
                for (unsigned d = 1; d < 3; ++d)
                {
                    at[d] = std::min(std::max(at[d], 0ll), limit[d] - 1);
                }
            }
            offset = (static_cast<std::size_t>(at[2]) * a.rows() + static_cast<std::size_t>(at[1])) * a.row_bytes() +
                     static_cast<std::size_t>(at[0]);
            return true;
        }

        std::uint32_t query(const texture_view& view, texture_query what)
        {
            const sim_array& a = *view.array;
            switch (what)
            {
            case texture_query::width: return static_cast<std::uint32_t>(a.width);
            case texture_query::height: return static_cast<std::uint32_t>(a.height);
            case texture_query::depth: return a.layered ? 0u : static_cast<std::uint32_t>(a.depth);
            case texture_query::array_size: return a.layered ? static_cast<std::uint32_t>(a.depth) : 0u;
            case texture_query::normalized_coords: return view.sampler.normalized_coordinates ? 1u : 0u;
            case texture_query::filter_mode: return view.sampler.linear ? 1u : 0u;
            case texture_query::num_mipmap_levels: return 1u;
            default: return 0u;  // num_samples: not a multisample texture
            }
        }
    }

    void warp_interpreter::texture_family(const instruction& in, std::uint32_t active)
    {
        const bool store = in.op == opcode::sust;
        const bool wants_surface = in.op == opcode::suld || in.op == opcode::sust || in.op == opcode::suq;
        const operand& handle = in.operands[store ? 0 : 1];
        const operand& value = in.operands[store ? 1 : 0];
        const texture_geometry g = texture_decoder::geometry(in);
        const bool layered = texture_decoder::layered(g);
        const unsigned dims = texture_decoder::dimensions(g);
        texture_view view;
        std::uint64_t found = 0;  // the handle `view` holds (0: none yet)
        auto reg = [&](std::int32_t r, unsigned lane) -> std::uint64_t& {
            return m_registers[static_cast<std::size_t>(r) * 32 + lane];
        };
        XCUDA_SIM_LANES(active)
        {
            std::uint64_t h = reg(handle.reg, l);
            if (h != found || found == 0)
            {
                if (h == 0 || !m_launch.textures || !m_launch.textures->view(h, view) || view.surface != wants_surface)
                {
                    fault(in, l, "uses the handle " + hex(h) + ", which is no live " +
                                     (wants_surface ? "surface object (xcuda.surface)" : "texture object (xcuda.texture)"));
                }
                found = h;
            }
            if (in.op == opcode::txq || in.op == opcode::suq)
            {
                reg(value.reg, l) = query(view, static_cast<texture_query>(texture_decoder::mode(in)));
                continue;
            }
            const std::int32_t* c = handle.regs;
            int layer = layered ? static_cast<std::int32_t>(reg(c[0], l)) : -1;
            const std::int32_t* coordinates = layered ? c + 1 : c;
            if (in.op == opcode::tex || in.op == opcode::tld4)
            {
                texture_sampler::result r;
                if (in.source_type.kind == 'f')
                {
                    float u[3] = {0, 0, 0};
                    for (unsigned d = 0; d < dims; ++d)
                    {
                        u[d] = as<float>(reg(coordinates[d], l));
                    }
                    r = in.op == opcode::tld4 ? texture_sampler::gather(view, texture_decoder::mode(in), u, layer)
                                              : texture_sampler::sample(view, dims, u, layer);
                }
                else
                {
                    std::int32_t i[3] = {0, 0, 0};
                    for (unsigned d = 0; d < dims; ++d)
                    {
                        i[d] = static_cast<std::int32_t>(reg(coordinates[d], l));
                    }
                    r = texture_sampler::fetch(view, dims, i, layer);
                }
                for (unsigned k = 0; k < 4; ++k)
                {
                    if (value.regs[k] >= 0)
                    {
                        reg(value.regs[k], l) = r.bits[k];
                    }
                }
                continue;
            }
            unsigned element = in.type.bytes();
            unsigned bytes = element * in.vector;
            long long at[3] = {0, 0, 0};
            for (unsigned d = 0; d < dims; ++d)
            {
                at[d] = static_cast<std::int32_t>(reg(coordinates[d], l));
            }
            if (layered)
            {
                at[2] = layer;
            }
            if (at[0] % bytes != 0)
            {
                fault(in, l, "accesses a surface at byte " + std::to_string(at[0]) + " of a row, which is not aligned to " +
                                 std::to_string(bytes) + " bytes (x is in bytes: multiply the index by the element's size)");
            }
            sim_array& a = *view.array;
            std::size_t offset = 0;
            bool kept = surface_offset(a, g, at, bytes, static_cast<surface_clamp>(texture_decoder::mode(in)), offset, [&] {
                fault(in, l, "accesses a surface of " + std::to_string(a.width) + " x " + std::to_string(a.rows()) + " x " +
                                 std::to_string(a.slices()) + " elements of " + std::to_string(a.texel_bytes()) +
                                 " bytes outside it, at byte " + std::to_string(at[0]) + " of row " + std::to_string(at[1]) +
                                 ", slice " + std::to_string(at[2]) + " (.trap)");
            });
            std::int32_t single[4] = {value.reg, -1, -1, -1};
            const std::int32_t* regs = value.what == operand::kind::vector ? value.regs : single;
            for (unsigned k = 0; k < in.vector; ++k)
            {
                if (store)
                {
                    std::uint64_t v = value.what == operand::kind::imm ? value.value : regs[k] >= 0 ? reg(regs[k], l) : 0;
                    if (kept && (value.what == operand::kind::imm || regs[k] >= 0))
                    {
                        std::memcpy(a.bytes.data() + offset + k * element, &v, element);
                    }
                }
                else if (regs[k] >= 0)
                {
                    std::uint64_t v = 0;
                    if (kept)
                    {
                        std::memcpy(&v, a.bytes.data() + offset + k * element, element);
                    }
                    reg(regs[k], l) = v;
                }
            }
        }
    }
}
