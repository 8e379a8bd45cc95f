#pragma once
// The texture family's opcodes and modifiers -> an instruction (ptx_decoder hands them here):
//   tex.{1d,2d,3d,a1d,a2d}.v4.{f32,s32,u32}.{f32,s32}  d, [handle, {coordinates}]
//   tld4.{r,g,b,a}.{2d,a2d}.v4.{f32,s32,u32}.f32       d, [handle, {coordinates}]
//   suld.b.{1d,2d,3d,a1d,a2d}{.v2,.v4}.{b8,b16,b32,b64}{.trap,.clamp,.zero}  d, [handle, {coordinates}]
//   sust.b.... the same                                [handle, {coordinates}], value
//   txq.{width,height,depth,normalized_coords,filter_mode,array_size,num_mipmap_levels,num_samples}.b32  d, [handle]
//   suq.{width,height,depth,array_size}.b32            d, [handle]
// The handle must be a register (a texture or surface object); a module's .texref/.surfref, mipmap levels
// (tex.level, tex.grad), formatted surface access (suld.p, sust.p), half-precision results and the other
// queries are refused with the reason. The geometry and the mode are packed into instruction::texture_form.
// Stateless.

#include <cstdint>
#include <string>
#include <vector>

#include "ptx_program.hpp"

namespace xcuda::sim
{
    enum class texture_geometry : std::uint8_t
    {
        none, d1, d2, d3, a1d, a2d
    };
    enum class surface_clamp : std::uint8_t
    {
        trap, clamp, zero
    };
    enum class texture_query : std::uint8_t
    {
        width, height, depth, normalized_coords, filter_mode, array_size, num_mipmap_levels, num_samples
    };

    class texture_decoder
    {
    public:
        // Whether `base` ("tex", "suld", ...) is an opcode of this family.
        static bool owns(const std::string& base);
        // Fills in's opcode, types and texture_form from the opcode's parts ("tex", "2d", "v4", "f32", "f32")
        // and checks its operands; "" when the simulator can run it, else why not.
        static std::string decode(const std::vector<std::string>& parts, instruction& in);

        // instruction::texture_form's parts: the low 3 bits the geometry, the high 5 the clamp mode (suld,
        // sust), the component (tld4) or the query (txq, suq).
        static std::uint8_t form(texture_geometry geometry, unsigned mode)
        {
            return static_cast<std::uint8_t>(static_cast<unsigned>(geometry) | (mode << 3));
        }
        static texture_geometry geometry(const instruction& in) { return static_cast<texture_geometry>(in.texture_form & 7); }
        static unsigned mode(const instruction& in) { return in.texture_form >> 3; }
        // The coordinates a geometry takes (a layered one's layer not counted), and whether it has a layer.
        static unsigned dimensions(texture_geometry geometry);
        static bool layered(texture_geometry geometry) { return geometry == texture_geometry::a1d || geometry == texture_geometry::a2d; }
    };
}
