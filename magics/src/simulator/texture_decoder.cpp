#include "texture_decoder.hpp"

#include <map>

namespace xcuda::sim
{
    namespace
    {
        // The types this family takes: .f32, .s32, .u32 (results, coordinates, queries) and .b8-.b64 (surfaces).
        bool texture_type_named(const std::string& name, ptx_type& type)
        {
            static const std::map<std::string, ptx_type> types = {
                {"f32", {'f', 32}}, {"s32", {'s', 32}}, {"u32", {'u', 32}}, {"b8", {'b', 8}},
                {"b16", {'b', 16}}, {"b32", {'b', 32}}, {"b64", {'b', 64}}};
            auto found = types.find(name);
            if (found == types.end())
            {
                return false;
            }
            type = found->second;
            return true;
        }

        bool geometry_named(const std::string& m, texture_geometry& g)
        {
            static const std::map<std::string, texture_geometry> names = {
                {"1d", texture_geometry::d1}, {"2d", texture_geometry::d2}, {"3d", texture_geometry::d3},
                {"a1d", texture_geometry::a1d}, {"a2d", texture_geometry::a2d}};
            auto found = names.find(m);
            if (found == names.end())
            {
                return false;
            }
            g = found->second;
            return true;
        }

        // The handle operand: [register] or [register, {coordinates}] with at least `coordinates` of them.
        std::string check_handle(const operand& o, bool with_coordinates, unsigned coordinates)
        {
            bool shape = with_coordinates ? o.what == operand::kind::texture : o.what == operand::kind::address;
            if (!shape || o.reg < 0 || o.value != 0)
            {
                return o.symbol >= 0 ? "a module's .texref/.surfref (texture and surface references) is not implemented by "
                                       "the simulator; pass a texture or surface object (cudaTextureObject_t) instead"
                                     : "its texture or surface operand is not a handle register" +
                                           std::string(with_coordinates ? " with its coordinates" : "");
            }
            if (with_coordinates && o.count < coordinates)
            {
                return "it gives " + std::to_string(o.count) + " coordinates where its geometry needs " +
                       std::to_string(coordinates);
            }
            return "";
        }

        std::string decode_tex(const std::vector<std::string>& parts, instruction& in, std::size_t k, unsigned component)
        {
            texture_geometry g;
            if (k >= parts.size() || !geometry_named(parts[k], g))
            {
                return "only tex.1d/2d/3d/a1d/a2d are implemented by the simulator (mipmap levels, cube maps and "
                       "multisample textures are not)";
            }
            if (in.op == opcode::tld4 && g != texture_geometry::d2 && g != texture_geometry::a2d)
            {
                return "tld4 takes a 2d or a2d texture";
            }
            if (parts.size() != k + 4 || parts[k + 1] != "v4" || !texture_type_named(parts[k + 2], in.type) ||
                !texture_type_named(parts[k + 3], in.source_type) || in.type.bits != 32 || in.type.kind == 'b' ||
                in.source_type.bits != 32 || (in.source_type.kind != 'f' && in.source_type.kind != 's'))
            {
                return "only the .v4 forms with .f32/.s32/.u32 results and .f32/.s32 coordinates are implemented by the "
                       "simulator";
            }
            if (in.op == opcode::tld4 && in.source_type.kind != 'f')
            {
                return "tld4 takes .f32 coordinates";
            }
            in.vector = 4;
            in.texture_form = texture_decoder::form(g, component);
            unsigned needed = texture_decoder::dimensions(g) + (texture_decoder::layered(g) ? 1 : 0);
            if (in.operands[0].what != operand::kind::vector || in.operands[0].count != 4)
            {
                return "its result is not a vector of four registers";
            }
            return check_handle(in.operands[1], true, needed);
        }

        std::string decode_surface(const std::vector<std::string>& parts, instruction& in)
        {
            texture_geometry g;
            std::size_t k = 1;
            if (parts.size() < 4 || parts[k++] != "b" || !geometry_named(parts[k++], g))
            {
                return "only the unformatted surface accesses (suld.b, sust.b) over 1d, 2d, 3d, a1d and a2d surfaces are "
                       "implemented by the simulator";
            }
            in.vector = 1;
            if (parts[k] == "v2" || parts[k] == "v4")
            {
                in.vector = parts[k++] == "v2" ? 2 : 4;
            }
            if (k >= parts.size() || !texture_type_named(parts[k++], in.type) || in.type.kind != 'b')
            {
                return "a surface access takes .b8, .b16, .b32 or .b64";
            }
            surface_clamp clamp = surface_clamp::trap;
            if (k < parts.size())
            {
                const std::string& m = parts[k++];
                clamp = m == "trap" ? surface_clamp::trap : m == "clamp" ? surface_clamp::clamp : m == "zero" ? surface_clamp::zero
                                                                                                           : surface_clamp(7);
                if (clamp == surface_clamp(7))
                {
                    return "the modifier ." + m + " of a surface access is not implemented by the simulator";
                }
            }
            if (k != parts.size())
            {
                return "the modifier ." + parts[k] + " of a surface access is not implemented by the simulator";
            }
            in.texture_form = texture_decoder::form(g, static_cast<unsigned>(clamp));
            unsigned needed = texture_decoder::dimensions(g) + (texture_decoder::layered(g) ? 1 : 0);
            bool store = in.op == opcode::sust;
            const operand& value = in.operands[store ? 1 : 0];
            bool shaped = value.what == operand::kind::vector ? value.count == in.vector
                                                              : in.vector == 1 && (value.what == operand::kind::reg ||
                                                                                   (store && value.what == operand::kind::imm));
            if (!shaped)
            {
                return "its value operand does not match its vector width";
            }
            return check_handle(in.operands[store ? 0 : 1], true, needed);
        }

        std::string decode_query(const std::vector<std::string>& parts, instruction& in)
        {
            static const std::map<std::string, texture_query> names = {
                {"width", texture_query::width}, {"height", texture_query::height}, {"depth", texture_query::depth},
                {"normalized_coords", texture_query::normalized_coords}, {"filter_mode", texture_query::filter_mode},
                {"array_size", texture_query::array_size}, {"num_mipmap_levels", texture_query::num_mipmap_levels},
                {"num_samples", texture_query::num_samples}};
            auto found = parts.size() == 3 ? names.find(parts[1]) : names.end();
            if (found == names.end() || !texture_type_named(parts[2], in.type) || in.type.bits != 32)
            {
                return "only txq/suq .width, .height, .depth, .normalized_coords, .filter_mode, .array_size, "
                       ".num_mipmap_levels and .num_samples (.b32) are implemented by the simulator";
            }
            if (in.op == opcode::suq && found->second != texture_query::width && found->second != texture_query::height &&
                found->second != texture_query::depth && found->second != texture_query::array_size)
            {
                return "suq ." + parts[1] + " is not a surface query";
            }
            in.texture_form = texture_decoder::form(texture_geometry::none, static_cast<unsigned>(found->second));
            if (in.operand_count != 2 || in.operands[0].what != operand::kind::reg)
            {
                return "its destination is not a register";
            }
            return check_handle(in.operands[1], false, 0);
        }
    }

    bool texture_decoder::owns(const std::string& base)
    {
        return base == "tex" || base == "tld4" || base == "suld" || base == "sust" || base == "txq" || base == "suq";
    }

    unsigned texture_decoder::dimensions(texture_geometry geometry)
    {
        switch (geometry)
        {
        case texture_geometry::d1:
        case texture_geometry::a1d: return 1;
        case texture_geometry::d2:
        case texture_geometry::a2d: return 2;
        case texture_geometry::d3: return 3;
        default: return 0;
        }
    }

    std::string texture_decoder::decode(const std::vector<std::string>& parts, instruction& in)
    {
        const std::string& base = parts[0];
        in.op = base == "tex" ? opcode::tex : base == "tld4" ? opcode::tld4 : base == "suld" ? opcode::suld
                : base == "sust" ? opcode::sust : base == "txq" ? opcode::txq : opcode::suq;
        std::string why;
        if (in.op == opcode::tex)
        {
            why = decode_tex(parts, in, 1, 0);
        }
        else if (in.op == opcode::tld4)
        {
            static const std::string components = "rgba";
            std::size_t c = parts.size() > 1 && parts[1].size() == 1 ? components.find(parts[1][0]) : std::string::npos;
            why = c == std::string::npos ? "tld4 needs its component (.r, .g, .b or .a)"
                                         : decode_tex(parts, in, 2, static_cast<unsigned>(c));
        }
        else if (in.op == opcode::suld || in.op == opcode::sust)
        {
            why = decode_surface(parts, in);
        }
        else
        {
            why = decode_query(parts, in);
        }
        return why.empty() ? why : "'" + parts[0] + "' as written: " + why;
    }
}
