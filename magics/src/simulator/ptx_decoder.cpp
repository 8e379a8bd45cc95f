#include "ptx_decoder.hpp"

#include "async_decoder.hpp"
#include "cluster_decoder.hpp"
#include "matrix_decoder.hpp"
#include "texture_decoder.hpp"

#include <set>
#include <unordered_map>
#include <vector>

namespace xcuda::sim
{
    bool parse_type_name(const std::string& name, ptx_type& type)
    {
        static const std::unordered_map<std::string, ptx_type> types = {
            {"b8", {'b', 8}}, {"b16", {'b', 16}}, {"b32", {'b', 32}}, {"b64", {'b', 64}},
            {"u8", {'u', 8}}, {"u16", {'u', 16}}, {"u32", {'u', 32}}, {"u64", {'u', 64}},
            {"s8", {'s', 8}}, {"s16", {'s', 16}}, {"s32", {'s', 32}}, {"s64", {'s', 64}},
            {"f32", {'f', 32}}, {"f64", {'f', 64}}, {"pred", {'p', 1}},
            {"f16", {'h', 16}}, {"f16x2", {'h', 32}}, {"bf16", {'g', 16}}, {"bf16x2", {'g', 32}},
            {"e4m3x2", {'e', 16}}, {"e5m2x2", {'m', 16}},  // two 8-bit floats in a .b16: cvt only
        };
        auto it = types.find(name);
        if (it == types.end())
        {
            return false;
        }
        type = it->second;
        return true;
    }


    namespace
    {
        // "ld.global.nc.v4.f32" -> {"ld", "global", "nc", "v4", "f32"}.
        std::vector<std::string> split_at_dots(const std::string& text)
        {
            std::vector<std::string> parts;
            std::size_t start = 0;
            while (true)
            {
                std::size_t dot = text.find('.', start);
                parts.push_back(text.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
                if (dot == std::string::npos)
                {
                    break;
                }
                start = dot + 1;
            }
            return parts;
        }

        // The opcode a PTX instruction's base name stands for; false when the simulator has none.
        bool opcode_named(const std::string& base, opcode& op)
        {
            static const std::unordered_map<std::string, opcode> opcodes = {
                {"ld", opcode::ld}, {"ldu", opcode::ld}, {"st", opcode::st}, {"mov", opcode::mov}, {"cvt", opcode::cvt},
                {"cvta", opcode::cvta}, {"add", opcode::add}, {"sub", opcode::sub}, {"mul", opcode::mul},
                {"mad", opcode::mad}, {"fma", opcode::fma}, {"div", opcode::div}, {"rem", opcode::rem},
                {"min", opcode::min}, {"max", opcode::max}, {"abs", opcode::abs}, {"neg", opcode::neg},
                {"and", opcode::and_}, {"or", opcode::or_}, {"xor", opcode::xor_}, {"not", opcode::not_},
                {"cnot", opcode::cnot}, {"shl", opcode::shl}, {"shr", opcode::shr}, {"popc", opcode::popc},
                {"clz", opcode::clz}, {"brev", opcode::brev}, {"bfe", opcode::bfe}, {"bfi", opcode::bfi},
                {"prmt", opcode::prmt}, {"shf", opcode::shf}, {"bfind", opcode::bfind}, {"setp", opcode::setp}, {"selp", opcode::selp}, {"copysign", opcode::copysign},
                {"rcp", opcode::rcp}, {"sqrt", opcode::sqrt}, {"rsqrt", opcode::rsqrt}, {"ex2", opcode::ex2},
                {"lg2", opcode::lg2}, {"sin", opcode::sin}, {"cos", opcode::cos}, {"tanh", opcode::tanh}, {"testp", opcode::testp}, {"lop3", opcode::lop3}, {"bra", opcode::bra},
                {"ret", opcode::ret}, {"exit", opcode::exit}, {"call", opcode::call}, {"trap", opcode::trap},
                {"bar", opcode::bar}, {"barrier", opcode::bar}, {"membar", opcode::membar}, {"fence", opcode::membar},
                {"shfl", opcode::shfl}, {"vote", opcode::vote}, {"activemask", opcode::activemask},
                {"atom", opcode::atom}, {"red", opcode::red}, {"redux", opcode::redux}, {"match", opcode::match},
                {"dp4a", opcode::dp4a}, {"dp2a", opcode::dp2a}, {"bmsk", opcode::bmsk}, {"addc", opcode::add_carry}, {"subc", opcode::sub_carry},
                {"madc", opcode::mad_carry}, {"nanosleep", opcode::nop}, {"set", opcode::set},
            };
            auto found = opcodes.find(base);
            if (found == opcodes.end())
            {
                return false;
            }
            op = found->second;
            return true;
        }

        // What the modifiers read so far leave for the checks after them: how many types were named, and
        // shf's direction (l, r) and mode (wrap, clamp).
        struct modifier_state
        {
            int types = 0;
            std::string shf_direction;
            std::string shf_mode;
        };

        // A type modifier: the first is the instruction's type, the second its source type (cvt, set).
        bool read_type_modifier(const std::string& m, instruction& in, modifier_state& state)
        {
            ptx_type t;
            if (parse_type_name(m, t))
            {
                if (state.types == 0)
                {
                    in.type = t;
                }
                else if (state.types == 1)
                {
                    in.source_type = t;
                }
                ++state.types;
                return true;
            }
            return false;
        }

        bool is_unimplemented_type(const std::string& m)
        {
            return m == "tf32" || m == "e4m3" || m == "e5m2";
        }

        // A modifier that changes nothing in a one-thread-at-a-time machine (cache hints, memory order and
        // scope), or a state space.
        bool read_memory_modifier(const std::string& m, instruction& in)
        {
            static const std::set<std::string> ignored = {
                "weak", "volatile", "relaxed", "acquire", "release", "acq_rel", "sc", "gpu", "cta", "sys", "nc",
                "ca", "cg", "cs", "lu", "cv", "wb", "wt", "uni", "sync", "aligned", "noftz",
            };
            if ((m == "acquire" || m == "relaxed" || m == "volatile") && in.op == opcode::ld)
            {
                in.strong = true;  // a load a spin loop polls (a grid-wide sync): warp_interpreter::spin_point
            }
            if ((m == "release" || m == "acq_rel") && (in.op == opcode::atom || in.op == opcode::red))
            {
                in.releases = true;  // a sync between the block's warps without a barrier (warp_block_spin.cpp)
            }
            if (ignored.count(m) || m.rfind("L1::", 0) == 0 || (m.rfind("L2::", 0) == 0 && m != "L2::cache_hint"))
            {
                return true;
            }
            if (m == "shared::cluster" && (in.op == opcode::ld || in.op == opcode::st || in.op == opcode::atom || in.op == opcode::red))
            {
                in.space = state_space::shared_cluster;  // a block's shared memory in its cluster (mapa's addresses)
                return true;
            }
            if (m == "global" || m == "shared" || m == "shared::cta" || m == "local" || m == "param" || m == "const")
            {
                in.space = m == "global" ? state_space::global
                           : m == "local" ? state_space::local
                           : m == "param" ? state_space::param
                           : m == "const" ? state_space::constant
                                          : state_space::shared;
                return true;
            }
            return false;
        }

        // A modifier that says which operation: setp's comparison and combination, an atomic's operation,
        // the rounding, the variant (mul.hi, shfl.up, vote.any, ...), shf's direction and mode, testp's test,
        // bfind.shiftamt.
        bool read_operation_modifier(const std::string& m, instruction& in, modifier_state& state)
        {
            static const std::unordered_map<std::string, compare> compares = {
                {"eq", compare::eq}, {"ne", compare::ne}, {"lt", compare::lt}, {"le", compare::le},
                {"gt", compare::gt}, {"ge", compare::ge}, {"lo", compare::lo}, {"ls", compare::ls},
                {"hi", compare::hi}, {"hs", compare::hs}, {"equ", compare::equ}, {"neu", compare::neu},
                {"ltu", compare::ltu}, {"leu", compare::leu}, {"gtu", compare::gtu}, {"geu", compare::geu},
                {"num", compare::num}, {"nan", compare::nan},
            };
            static const std::unordered_map<std::string, rounding> roundings = {
                {"rn", rounding::rn}, {"rz", rounding::rz}, {"rm", rounding::rm}, {"rp", rounding::rp},
                {"rni", rounding::rni}, {"rzi", rounding::rzi}, {"rmi", rounding::rmi}, {"rpi", rounding::rpi},
            };
            static const std::unordered_map<std::string, variant> variants = {
                {"lo", variant::lo}, {"hi", variant::hi}, {"wide", variant::wide}, {"approx", variant::approx},
                {"full", variant::full}, {"up", variant::shfl_up}, {"down", variant::shfl_down},
                {"bfly", variant::shfl_bfly}, {"idx", variant::shfl_idx}, {"all", variant::vote_all},
                {"any", variant::vote_any}, {"ballot", variant::vote_ballot},
                {"inc", variant::atom_inc}, {"dec", variant::atom_dec}, {"exch", variant::atom_exch},
                {"cas", variant::atom_cas},
            };
            static const std::unordered_map<std::string, variant> atom_ops = {
                {"add", variant::atom_add}, {"min", variant::atom_min}, {"max", variant::atom_max},
                {"and", variant::atom_and}, {"or", variant::atom_or}, {"xor", variant::atom_xor},
            };
            static const std::unordered_map<std::string, variant> tests = {
                {"finite", variant::testp_finite}, {"infinite", variant::testp_infinite},
                {"number", variant::testp_number}, {"notanumber", variant::testp_notanumber},
                {"normal", variant::testp_normal}, {"subnormal", variant::testp_subnormal},
            };
            if ((in.op == opcode::setp || in.op == opcode::set) && compares.count(m) && in.cmp == compare::none)
            {
                in.cmp = compares.at(m);
                return true;
            }
            if ((in.op == opcode::setp || in.op == opcode::set) && (m == "and" || m == "or" || m == "xor"))
            {
                in.combine = m == "and" ? compare::eq : m == "or" ? compare::ne : compare::lt;
                return true;
            }
            if ((in.op == opcode::atom || in.op == opcode::red || in.op == opcode::redux) && atom_ops.count(m))
            {
                in.var = atom_ops.at(m);
                return true;
            }
            if (roundings.count(m))
            {
                in.round = roundings.at(m);
                return true;
            }
            if (variants.count(m) && !(in.op == opcode::bar && m == "sync"))
            {
                in.var = variants.at(m);
                return true;
            }
            if (m == "uni" && in.op == opcode::vote)
            {
                in.var = variant::vote_uni;
                return true;
            }
            if (in.op == opcode::shf && (m == "l" || m == "r" || m == "wrap" || m == "clamp"))
            {
                (m == "l" || m == "r" ? state.shf_direction : state.shf_mode) = m;
                return true;
            }
            if (in.op == opcode::testp && tests.count(m))
            {
                in.var = tests.at(m);
                return true;
            }
            if (in.op == opcode::bfind && m == "shiftamt")
            {
                in.var = variant::shiftamt;
                return true;
            }
            return false;
        }

        // A modifier of the integer families and barriers of round 2: prmt's mode, .cc (writes the carry
        // flag), bar.red's .red and its operation (.popc, .and, .or).
        bool read_family_modifier(const std::string& m, instruction& in)
        {
            static const std::unordered_map<std::string, variant> modes = {
                {"f4e", variant::prmt_f4e}, {"b4e", variant::prmt_b4e}, {"rc8", variant::prmt_rc8},
                {"ecl", variant::prmt_ecl}, {"ecr", variant::prmt_ecr}, {"rc16", variant::prmt_rc16},
            };
            if (in.op == opcode::prmt && modes.count(m))
            {
                in.var = modes.at(m);
                return true;
            }
            if (in.op == opcode::bmsk && (m == "clamp" || m == "wrap"))
            {
                in.var = m == "clamp" ? variant::bmsk_clamp : variant::bmsk_wrap;
                return true;
            }
            if ((in.op == opcode::min || in.op == opcode::max) && m == "NaN")
            {
                in.var = variant::min_max_nan;
                return true;
            }
            if (in.op == opcode::cvt && m == "satfinite")
            {
                in.var = variant::satfinite;
                return true;
            }
            if (m == "cc" && (in.op == opcode::add || in.op == opcode::sub || in.op == opcode::mad ||
                              in.op == opcode::add_carry || in.op == opcode::sub_carry || in.op == opcode::mad_carry))
            {
                in.carry_out = true;
                return true;
            }
            if (in.op == opcode::bar && m == "arrive")
            {
                in.var = variant::bar_arrive;
                return true;
            }
            if (in.op == opcode::bar && (m == "red" || m == "popc" || m == "and" || m == "or"))
            {
                if (m != "red")  // the form is checked with the operands, in check_warp_and_memory
                {
                    in.var = m == "popc" ? variant::bar_red_popc : m == "and" ? variant::bar_red_and : variant::bar_red_or;
                }
                return true;
            }
            return false;
        }

        // A flag: .ftz, .sat, cvta.to, bar.warp, and the vector width .v2 / .v4.
        bool read_flag_modifier(const std::string& m, instruction& in)
        {
            if (m == "ftz")
            {
                in.ftz = true;
                return true;
            }
            if (m == "sat")
            {
                in.sat = true;
                return true;
            }
            if (m == "to" && in.op == opcode::cvta)
            {
                in.to = true;
                return true;
            }
            if (m == "warp" && in.op == opcode::bar)
            {
                in.warp = true;
                return true;
            }
            if (m == "v2" || m == "v4")
            {
                in.vector = m == "v2" ? 2 : 4;
                return true;
            }
            return false;
        }

        // The modifiers taken together: .ftz only on .f32, the forms of testp, lop3, tanh and shf the
        // simulator knows (shf's variant set from its direction and mode). "" when they fit, else why not.
        std::string check_modifiers(const std::string& text, instruction& in, const modifier_state& state)
        {
            bool ftz_f64 = (in.op == opcode::rcp || in.op == opcode::rsqrt) && in.var == variant::approx && in.type.bits == 64;
            if (in.ftz && !(in.type.is_float() && in.type.bits == 32) && in.op != opcode::setp && in.op != opcode::cvt &&
                in.op != opcode::set && !in.type.is_half() && !ftz_f64)
            {
                return "'" + text + "': .ftz on a type other than .f32";
            }
            if (in.op == opcode::testp && (in.var < variant::testp_finite || !in.type.is_float()))
            {
                return "'" + text + "' is not a testp the simulator knows";
            }
            if (in.op == opcode::lop3 && (in.type.bits != 32 || in.operand_count != 5))
            {
                return "'" + text + "' is not a lop3.b32 the simulator knows";
            }
            if (in.op == opcode::tanh && (in.var != variant::approx || !(in.type.is_float() || in.type.is_half())))
            {
                return "'" + text + "' is not a tanh.approx the simulator knows";
            }
            if (in.op == opcode::shf)
            {
                if (state.shf_direction.empty() || state.shf_mode.empty() || in.type.bits != 32)
                {
                    return "'" + text + "' is not a shf the simulator knows (shf.{l,r}.{wrap,clamp}.b32)";
                }
                in.var = state.shf_direction == "l" ? (state.shf_mode == "wrap" ? variant::shf_l_wrap : variant::shf_l_clamp)
                                                    : (state.shf_mode == "wrap" ? variant::shf_r_wrap : variant::shf_r_clamp);
            }
            return "";
        }

        // What the integer families need: the carry instructions on 32- or 64-bit integers (mad with .lo or
        // .hi), dp4a/dp2a with two 32-bit integer types, prmt on .b32. "" when it fits, else why not.
        std::string check_integer_families(const std::string& text, const instruction& in, int types)
        {
            switch (in.op)
            {
            case opcode::add_carry:
            case opcode::sub_carry:
            case opcode::mad_carry:
                if (in.type.is_float() || (in.type.bits != 32 && in.type.bits != 64) || in.sat ||
                    (in.op == opcode::mad_carry && in.var != variant::lo && in.var != variant::hi) ||
                    (in.op != opcode::mad_carry && in.var != variant::none))
                {
                    return "'" + text + "' is not an extended-precision (carry) instruction the simulator knows";
                }
                break;
            case opcode::dp4a:
            case opcode::dp2a:
                if (types != 2 || in.type.bits != 32 || in.source_type.bits != 32 || in.type.is_float() ||
                    in.source_type.is_float() || (in.op == opcode::dp2a) != (in.var == variant::lo || in.var == variant::hi) ||
                    (in.op == opcode::dp4a && in.var != variant::none) || in.operand_count != 4)
                {
                    return "'" + text + "' is not a dp4a/dp2a the simulator knows";
                }
                break;
            case opcode::prmt:
                if (in.type.bits != 32 || in.operand_count != 4)
                {
                    return "'" + text + "' is not a prmt.b32 the simulator knows";
                }
                break;
            case opcode::bmsk:
                if (in.type.bits != 32 || in.operand_count != 3 ||
                    (in.var != variant::bmsk_clamp && in.var != variant::bmsk_wrap))
                {
                    return "'" + text + "' is not a bmsk.{clamp,wrap}.b32 the simulator knows";
                }
                break;
            default:
                break;
            }
            return "";
        }

        // The float families of round 2: arithmetic and comparisons of .f16/.bf16 and their pairs
        // (half_arithmetic, warp_half_operations.cpp), f32/f64 arithmetic with a directed rounding and the f64
        // approximations with .ftz (rounded_arithmetic), and every cvt with a half type or a rounding the plain
        // conversion does not do (rounded_convert, warp_float_rounding.cpp). Routes them by their opcode, so the
        // common arithmetic pays nothing. "" when it fits, else why not.
        std::string check_float_families(const std::string& text, instruction& in, int types)
        {
            const bool directed = in.round == rounding::rz || in.round == rounding::rm || in.round == rounding::rp;
            if (in.op == opcode::cvt)
            {
                bool fp8 = in.type.kind == 'e' || in.type.kind == 'm' || in.source_type.kind == 'e' || in.source_type.kind == 'm';
                if (fp8 && !((in.type.bits == 16 && in.var == variant::satfinite && in.round == rounding::rn &&
                              (in.operand_count == 3 ? in.source_type.is_float() && in.source_type.bits == 32
                                                     : in.source_type.kind == 'h' && in.source_type.bits == 32)) ||
                             (in.type.kind == 'h' && in.type.bits == 32 && in.round == rounding::rn && in.operand_count == 2)))
                {
                    return "'" + text + "' is not an 8-bit float conversion the simulator knows (cvt.rn.satfinite.e4m3x2.f32 "
                                        "d, a, b; cvt.rn.satfinite.e4m3x2.f16x2; cvt.rn.f16x2.e4m3x2; the same for e5m2x2)";
                }
                bool half = in.type.is_half() || in.source_type.is_half() || fp8;
                bool integer_to_float = in.type.is_float() && !in.source_type.is_float() && in.source_type.kind != 'p';
                if (types == 2 && (half || in.var == variant::satfinite || (integer_to_float && directed)))
                {
                    if (!fp8 && in.type.kind != in.source_type.kind && in.type.is_half() && in.type.bits == 32 &&
                        !(in.source_type.is_float() && in.source_type.bits == 32 && in.operand_count == 3))
                    {
                        return "'" + text + "': a cvt to a pair of halves takes two .f32 values";
                    }
                    in.op = opcode::rounded_convert;
                }
                return "";
            }
            if (in.type.is_half() || in.op == opcode::set)
            {
                switch (in.op)
                {
                case opcode::ld:
                case opcode::st:
                case opcode::mov:
                    return "";  // the bits as they are
                case opcode::add:
                case opcode::sub:
                case opcode::mul:
                case opcode::fma:
                case opcode::neg:
                case opcode::abs:
                case opcode::min:
                case opcode::max:
                case opcode::setp:
                case opcode::set:
                case opcode::ex2:
                case opcode::tanh:
                    if (in.round != rounding::none && in.round != rounding::rn)
                    {
                        return "'" + text + "': a half-precision operation rounds to nearest only (PTX)";
                    }
                    if ((in.op == opcode::ex2 || in.op == opcode::tanh) && in.var != variant::approx)
                    {
                        return "'" + text + "' is not an approximation the simulator knows (ex2.approx, tanh.approx)";
                    }
                    if (in.op == opcode::set && (types != 2 || in.type.kind == 'p'))
                    {
                        return "'" + text + "' is not a set the simulator knows (set.cmp.dtype.stype)";
                    }
                    in.family_op = in.op;
                    in.op = opcode::half_arithmetic;
                    return "";
                default:
                    return "'" + text + "': this operation on ." + std::string(in.type.kind == 'h' ? "f16" : "bf16") +
                           (in.type.bits == 32 ? "x2" : "") + " is not implemented by the simulator";
                }
            }
            bool rounded = in.type.is_float() && directed &&
                           (in.op == opcode::add || in.op == opcode::sub || in.op == opcode::mul || in.op == opcode::fma ||
                            in.op == opcode::mad || in.op == opcode::div || in.op == opcode::rcp || in.op == opcode::sqrt);
            bool approx_f64 = (in.op == opcode::rcp || in.op == opcode::rsqrt) && in.var == variant::approx &&
                              in.type.is_float() && in.type.bits == 64;
            if (rounded || approx_f64)
            {
                in.family_op = in.op == opcode::mad ? opcode::fma : in.op;  // mad.f32 is fma (one rounding)
                in.op = opcode::rounded_arithmetic;
            }
            if (in.var == variant::min_max_nan)
            {
                return "'" + text + "': .NaN on a type other than .f16/.bf16 is not implemented by the simulator";
            }
            return "";
        }

        // What the arithmetic and conversions need: the roundings implemented, mad.f32 as fma, an integer
        // mul/mad's width, cvt's two types. "" when it fits, else why not.
        std::string check_arithmetic(const std::string& text, instruction& in, int types)
        {
            switch (in.op)
            {
            case opcode::add:
            case opcode::sub:
            case opcode::mul:
            case opcode::fma:
            case opcode::mad:
            case opcode::div:
                if (in.type.is_float() && in.round != rounding::none && in.round != rounding::rn)
                {
                    return "'" + text + "': rounding other than .rn is not implemented by the simulator";
                }
                if (in.op == opcode::mad && in.type.is_float())
                {
                    in.op = opcode::fma;  // mad.rn.f32 is fma (one rounding) since sm_20
                }
                if ((in.op == opcode::mul || in.op == opcode::mad) && !in.type.is_float() && in.var == variant::none)
                {
                    return "'" + text + "': an integer mul/mad needs .lo, .hi or .wide";
                }
                break;
            case opcode::cvt:
                if (types != 2)
                {
                    return "'" + text + "' needs two types";
                }
                if (in.type.is_float() && !in.source_type.is_float() && in.round != rounding::none && in.round != rounding::rn)
                {
                    return "'" + text + "': an integer-to-float conversion rounding other than .rn is not implemented";
                }
                if (in.type.is_float() && in.source_type.is_float() && in.type.bits < in.source_type.bits &&
                    in.round != rounding::rn && in.round != rounding::none &&
                    !(in.type.bits == 32 && in.source_type.bits == 64 &&
                      (in.round == rounding::rz || in.round == rounding::rm || in.round == rounding::rp)))
                {
                    return "'" + text + "': narrowing a float with rounding other than .rn is not implemented";
                }
                break;
            case opcode::rcp:
            case opcode::sqrt:
                if (in.var != variant::approx && in.round != rounding::rn)
                {
                    return "'" + text + "': rounding other than .rn is not implemented";
                }
                break;
            default:
                break;
            }
            return "";
        }

        // What barriers, memory accesses, warp-wide operations, atomics and calls need: the forms the
        // simulator implements. "" when it fits, else why not.
        std::string check_warp_and_memory(const std::string& text, const instruction& in)
        {
            switch (in.op)
            {
            case opcode::bar:
                if (in.warp)
                {
                    break;
                }
                if (in.var == variant::bar_arrive)
                {
                    if (in.operand_count != 2)
                    {
                        return "'" + text + "' is not a bar.arrive the simulator knows (bar.arrive a, b: a barrier and a thread count)";
                    }
                    break;
                }
                if (in.var != variant::none)
                {
                    // bar.red.op.type d, a{, b}, {!}c: the block's reduction of the predicate c
                    bool popc = in.var == variant::bar_red_popc;
                    if (text.find(".red.") == std::string::npos || (in.operand_count != 3 && in.operand_count != 4) ||
                        (popc ? in.type.bits != 32 || in.type.is_float() : in.type.kind != 'p'))
                    {
                        return "'" + text + "' is not a bar.red the simulator knows (bar.red.popc.u32, bar.red.{and,or}.pred)";
                    }
                    break;
                }
                if (!(text == "bar.sync" || text == "barrier.sync" || text == "barrier.sync.aligned" || text == "bar.sync.aligned"))
                {
                    return "'" + text + "' is not implemented by the simulator (bar.sync / barrier.sync, bar.red)";
                }
                if (in.operand_count != 1 && in.operand_count != 2)
                {
                    return "'" + text + "' is not a bar.sync the simulator knows (a barrier and an optional thread count)";
                }
                break;
            case opcode::ld:
            case opcode::st:
                if (in.operand_count != 2)
                {
                    return "'" + text + "' with a cache-policy operand is not implemented by the simulator";
                }
                break;
            case opcode::shfl:
                if (in.var < variant::shfl_up || in.var > variant::shfl_idx || in.operand_count < 4)
                {
                    return "'" + text + "' is not a shfl.sync the simulator knows";
                }
                if (text.find("sync") == std::string::npos)
                {
                    return "'" + text + "': shfl without .sync (pre-Volta) is not implemented";
                }
                break;
            case opcode::vote:
                if (in.var < variant::vote_all || in.var > variant::vote_ballot || text.find("sync") == std::string::npos)
                {
                    return "'" + text + "' is not a vote.sync the simulator knows";
                }
                break;
            case opcode::atom:
            case opcode::red:
                if (in.var < variant::atom_add)
                {
                    return "'" + text + "' is not an atomic operation the simulator knows";
                }
                if (in.vector != 1 || (in.type.is_float() && in.var != variant::atom_add && in.var != variant::atom_exch))
                {
                    return "'" + text + "' is not implemented by the simulator";
                }
                break;
            case opcode::redux:
                if (in.var < variant::atom_add || in.var > variant::atom_xor || in.var == variant::atom_inc ||
                    in.var == variant::atom_dec || in.type.bits != 32 || in.type.is_float())
                {
                    return "'" + text + "' is not a redux.sync the simulator knows";
                }
                break;
            case opcode::match:
                if ((in.var != variant::vote_any && in.var != variant::vote_all) || in.type.is_float())
                {
                    return "'" + text + "' is not a match.sync the simulator knows";
                }
                break;
            case opcode::call:
                if (in.callee == -2)
                {
                    return "'" + text + "': an indirect call (through a function pointer) is not implemented by the simulator";
                }
                break;
            default:
                break;
            }
            return "";
        }
    }

    std::string ptx_decoder::decode(const std::string& text, instruction& in)
    {
        std::vector<std::string> parts = split_at_dots(text);
        const std::string& base = parts[0];
        std::string family_refusal;
        if (async_decoder::decode(parts, text, in, family_refusal) || matrix_decoder::decode(parts, text, in, family_refusal) ||
            cluster_decoder::decode(parts, text, in, family_refusal))
        {
            return family_refusal;
        }
        if (texture_decoder::owns(base))
        {
            return texture_decoder::decode(parts, in);  // tex, tld4, suld, sust, txq, suq
        }
        if (!opcode_named(base, in.op))
        {
            return "the instruction '" + base + "' is not implemented by the simulator";
        }
        if (in.op == opcode::membar || base == "nanosleep")
        {
            return "";  // one thread runs at a time: every ordering holds; nanosleep is a hint, the warp goes on
        }
        in.carry_in = base == "addc" || base == "subc" || base == "madc";
        if (base == "ldu")
        {
            in.space = state_space::global;
        }
        // Each modifier is understood, known to change nothing, or refused.
        modifier_state state;
        for (std::size_t k = 1; k < parts.size(); ++k)
        {
            const std::string& m = parts[k];
            if (read_type_modifier(m, in, state))
            {
                continue;
            }
            if (is_unimplemented_type(m))
            {
                return "the type ." + m + " is not implemented by the simulator";
            }
            if (read_family_modifier(m, in) || read_memory_modifier(m, in) || read_operation_modifier(m, in, state) ||
                read_flag_modifier(m, in))
            {
                continue;
            }
            return "the modifier ." + m + " of '" + text + "' is not implemented by the simulator";
        }
        if (in.carry_out && !in.carry_in)
        {
            // add.cc, sub.cc, mad.cc run with the carry family (warp_integer_operations.cpp): plain add stays apart
            in.op = in.op == opcode::add ? opcode::add_carry : in.op == opcode::sub ? opcode::sub_carry : opcode::mad_carry;
        }
        // What each instruction needs, checked here so that running it never meets a surprise.
        std::string refusal = check_modifiers(text, in, state);
        if (refusal.empty())
        {
            refusal = check_integer_families(text, in, state.types);
        }
        if (refusal.empty())
        {
            refusal = check_float_families(text, in, state.types);  // before check_arithmetic: it takes what it routes
        }
        if (refusal.empty())
        {
            refusal = check_arithmetic(text, in, state.types);
        }
        if (refusal.empty())
        {
            refusal = check_warp_and_memory(text, in);
        }
        return refusal;
    }
}
