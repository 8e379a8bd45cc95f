#include "type_model.hpp"

#include <algorithm>
#include <utility>

#include "errors.hpp"

namespace xcuda::cxx
{
    std::string spell(bool is_const, bool is_volatile, const std::string& base,
                      const std::vector<pointer_level>& levels, std::size_t count)
    {
        std::string s;
        if (is_const)
        {
            s += "const ";
        }
        if (is_volatile)
        {
            s += "volatile ";
        }
        s += base;
        for (std::size_t i = 0; i < count; ++i)
        {
            s += "*";
            if (levels[i].is_const)
            {
                s += " const";
            }
            if (levels[i].is_volatile)
            {
                s += " volatile";
            }
        }
        return s;
    }

    std::string pointee(bool is_const, bool is_volatile, const std::string& base,
                        const std::vector<pointer_level>& levels)
    {
        if (levels.size() <= 1)
        {
            return spell(false, false, base, levels, 0);
        }
        std::vector<pointer_level> inner(levels.begin(), levels.end() - 1);
        inner.back() = pointer_level();
        return spell(is_const, is_volatile, base, inner, inner.size());
    }

    const std::set<std::string>& builtin_words()
    {
        static const std::set<std::string> words = {
            "void", "bool", "char", "short", "int", "long", "signed", "unsigned", "float", "double",
            "wchar_t", "char8_t", "char16_t", "char32_t", "__int128", "auto"};
        return words;
    }

    std::shared_ptr<const value_layout> scalar_layout(scalar_kind kind)
    {
        static const auto table = [] {
            std::vector<std::shared_ptr<const value_layout>> t;
            for (int k = 0; k <= static_cast<int>(last_scalar_kind); ++k)
            {
                auto l = std::make_shared<value_layout>();
                l->kind = static_cast<scalar_kind>(k);
                l->size = l->alignment = scalar_kind_size(l->kind);
                t.push_back(std::move(l));
            }
            return t;
        }();
        return table[static_cast<std::size_t>(kind)];
    }

    std::shared_ptr<const value_layout> pointer_layout()
    {
        static const auto layout = [] {
            auto l = std::make_shared<value_layout>();
            l->is_pointer = true;
            l->size = l->alignment = 8;
            return std::shared_ptr<const value_layout>(std::move(l));
        }();
        return layout;
    }

    resolved_type builtin_type(const std::vector<std::string>& words, int line)
    {
        int n_long = 0, n_short = 0, n_signed = 0, n_unsigned = 0, n_int = 0, n_other = 0;
        std::string other;
        std::string spelling;
        for (const std::string& w : words)
        {
            spelling += spelling.empty() ? w : " " + w;
            if (w == "long") ++n_long;
            else if (w == "short") ++n_short;
            else if (w == "signed") ++n_signed;
            else if (w == "unsigned") ++n_unsigned;
            else if (w == "int") ++n_int;
            else
            {
                ++n_other;
                other = w;
            }
        }
        resolved_type r;
        r.spelling = spelling;
        auto set = [&r](scalar_kind k)
        {
            r.kind = k;
            r.size = scalar_kind_size(k);
            r.layout = scalar_layout(k);
        };
        bool sign = n_signed + n_unsigned <= 1;
        bool u = n_unsigned == 1;
        bool ok = true;
        if (n_other > 1)
        {
            ok = false;
        }
        else if (n_other == 1)
        {
            bool plain = n_long + n_short + n_signed + n_unsigned + n_int == 0;
            if (other == "char" && n_long + n_short + n_int == 0 && sign) set(u ? scalar_kind::u8 : scalar_kind::i8);
            else if (other == "__int128" && n_long + n_short + n_int == 0 && sign) r.size = 16;
            else if (other == "double" && n_long == 1 && plain == false && n_short + n_signed + n_unsigned + n_int == 0) r.size = 16;
            else if (!plain) ok = false;
            else if (other == "bool") set(scalar_kind::boolean);
            else if (other == "float") set(scalar_kind::f32);
            else if (other == "double") set(scalar_kind::f64);
            else if (other == "char8_t") set(scalar_kind::u8);
            else if (other == "char16_t") set(scalar_kind::u16);
            else if (other == "char32_t") set(scalar_kind::u32);
            else if (other == "wchar_t") set(scalar_kind::i32);
            // void, auto: no kind, no size
        }
        else if (!sign || n_int > 1 || n_short > 1 || n_long > 2 || (n_short != 0 && n_long != 0))
        {
            ok = false;
        }
        else if (n_short == 1)
        {
            set(u ? scalar_kind::u16 : scalar_kind::i16);
        }
        else if (n_long != 0)
        {
            set(u ? scalar_kind::u64 : scalar_kind::i64);  // LP64: long is 8 bytes
        }
        else
        {
            set(u ? scalar_kind::u32 : scalar_kind::i32);
        }
        if (!ok)
        {
            throw signature_error(line, "invalid type '" + spelling + "'");
        }
        if (r.size != 0 && !r.layout)
        {
            auto l = std::make_shared<value_layout>();  // __int128, long double: bytes with no numpy kind
            l->size = l->alignment = r.size;
            r.layout = std::move(l);
        }
        return r;
    }

    namespace
    {
        std::shared_ptr<const value_layout> record(scalar_kind kind, const char* names, std::size_t count,
                                                   std::size_t alignment)
        {
            auto l = std::make_shared<value_layout>();
            std::size_t size = scalar_kind_size(kind);
            for (std::size_t i = 0; i < count; ++i)
            {
                value_layout::field f;
                f.name = std::string(1, names[i]);
                f.offset = i * size;
                f.type = scalar_layout(kind);
                l->fields.push_back(std::move(f));
            }
            l->alignment = alignment;
            l->size = (count * size + alignment - 1) / alignment * alignment;
            return l;
        }

        // The CUDA vector and packed types, as vector_types.h, cuda_fp16.h and cuda_bf16.h declare
        // them: a 2-vector is aligned to its size, a 4-vector to min(its size, 16) (the _16a and _32a
        // forms to 16 and 32), 1- and 3-vectors to their element.
        std::shared_ptr<const value_layout> vector_layout(const std::string& name)
        {
            static const std::unordered_map<std::string, std::shared_ptr<const value_layout>> table = []
            {
                std::unordered_map<std::string, std::shared_ptr<const value_layout>> t;
                const std::pair<const char*, scalar_kind> scalars[] = {
                    {"char", scalar_kind::i8},       {"uchar", scalar_kind::u8},   {"short", scalar_kind::i16},
                    {"ushort", scalar_kind::u16},    {"int", scalar_kind::i32},    {"uint", scalar_kind::u32},
                    {"long", scalar_kind::i64},      {"ulong", scalar_kind::u64},  {"longlong", scalar_kind::i64},
                    {"ulonglong", scalar_kind::u64}, {"float", scalar_kind::f32},  {"double", scalar_kind::f64}};
                for (const auto& [prefix, kind] : scalars)
                {
                    std::size_t size = scalar_kind_size(kind);
                    std::string base = prefix;
                    t[base + "1"] = record(kind, "x", 1, size);
                    t[base + "2"] = record(kind, "xy", 2, 2 * size);
                    t[base + "3"] = record(kind, "xyz", 3, size);
                    t[base + "4"] = record(kind, "xyzw", 4, std::min<std::size_t>(4 * size, 16));
                    if (size == 8)
                    {
                        t[base + "4_16a"] = record(kind, "xyzw", 4, 16);
                        t[base + "4_32a"] = record(kind, "xyzw", 4, 32);
                    }
                }
                t["dim3"] = record(scalar_kind::u32, "xyz", 3, 4);
                t["__half2"] = t["half2"] = t["__nv_half2"] = record(scalar_kind::f16, "xy", 2, 4);
                t["__nv_bfloat162"] = t["nv_bfloat162"] = record(scalar_kind::bf16, "xy", 2, 4);
                auto bytes = [](std::size_t n) {
                    auto l = std::make_shared<value_layout>();
                    l->size = l->alignment = n;
                    return std::shared_ptr<const value_layout>(std::move(l));
                };
                t["__nv_fp8x2_e4m3"] = t["__nv_fp8x2_e5m2"] = bytes(2);
                t["__nv_fp8x4_e4m3"] = t["__nv_fp8x4_e5m2"] = bytes(4);
                return t;
            }();
            auto it = table.find(name);
            return it == table.end() ? nullptr : it->second;
        }

        scalar_kind named_scalar(const std::string& name)
        {
            static const std::unordered_map<std::string, scalar_kind> table = {
                {"int8_t", scalar_kind::i8},       {"uint8_t", scalar_kind::u8},
                {"int16_t", scalar_kind::i16},     {"uint16_t", scalar_kind::u16},
                {"int32_t", scalar_kind::i32},     {"uint32_t", scalar_kind::u32},
                {"int64_t", scalar_kind::i64},     {"uint64_t", scalar_kind::u64},
                {"size_t", scalar_kind::u64},      {"ssize_t", scalar_kind::i64},
                {"ptrdiff_t", scalar_kind::i64},   {"intptr_t", scalar_kind::i64},
                {"uintptr_t", scalar_kind::u64},   {"clock_t", scalar_kind::i64},
                {"time_t", scalar_kind::i64},      {"__half", scalar_kind::f16},
                // glibc's <sys/types.h> names (nvcc's host headers, xcuda's standard header stand-ins).
                {"uint", scalar_kind::u32},        {"ushort", scalar_kind::u16},
                {"ulong", scalar_kind::u64},
                // <cstdint>'s least and max types (alike in glibc and CCCL; the fast types are not: glibc's
                // int_fast16_t is a long, CCCL's under NVRTC an int16_t, so they are left to the layout probe).
                {"int_least8_t", scalar_kind::i8},   {"uint_least8_t", scalar_kind::u8},
                {"int_least16_t", scalar_kind::i16}, {"uint_least16_t", scalar_kind::u16},
                {"int_least32_t", scalar_kind::i32}, {"uint_least32_t", scalar_kind::u32},
                {"int_least64_t", scalar_kind::i64}, {"uint_least64_t", scalar_kind::u64},
                {"intmax_t", scalar_kind::i64},      {"uintmax_t", scalar_kind::u64},
                {"half", scalar_kind::f16},        {"__nv_half", scalar_kind::f16},
                {"__nv_bfloat16", scalar_kind::bf16}, {"nv_bfloat16", scalar_kind::bf16}};
            auto it = table.find(name);
            return it == table.end() ? scalar_kind::unknown : it->second;
        }

        // ---- the narrow and packed float types (issue 45, item 5): cuda_fp8.h's fp8 scalars, and the kind
        // of the packed pairs __half2 and __nv_bfloat162 (whose layout is the record of vector_layout) ----
        scalar_kind narrow_float_scalar(const std::string& name)
        {
            static const std::unordered_map<std::string, scalar_kind> table = {
                {"__nv_fp8_e4m3", scalar_kind::fp8_e4m3}, {"__nv_fp8_e5m2", scalar_kind::fp8_e5m2}};
            auto it = table.find(name);
            return it == table.end() ? scalar_kind::unknown : it->second;
        }

        scalar_kind packed_pair_kind(const std::string& name)
        {
            static const std::unordered_map<std::string, scalar_kind> table = {
                {"__half2", scalar_kind::f16x2}, {"half2", scalar_kind::f16x2}, {"__nv_half2", scalar_kind::f16x2},
                {"__nv_bfloat162", scalar_kind::bf16x2}, {"nv_bfloat162", scalar_kind::bf16x2}};
            auto it = table.find(name);
            return it == table.end() ? scalar_kind::unknown : it->second;
        }
        // ---- end of the narrow and packed float types ----

        // "::std::size_t" -> "size_t": the namespaces that hold the standard spellings.
        std::string strip_std(std::string name)
        {
            for (bool changed = true; changed;)
            {
                changed = false;
                for (const char* prefix : {"::", "std::", "cuda::"})
                {
                    std::size_t n = std::char_traits<char>::length(prefix);
                    if (name.compare(0, n, prefix) == 0 && name.size() > n)
                    {
                        name.erase(0, n);
                        changed = true;
                    }
                }
            }
            return name;
        }
    }

    namespace
    {
        // The texture and surface object types (texture_types.h, surface_types.h and cuda.h spell them as
        // unsigned long long): "texture", "surface", or "" for any other name.
        const char* handle_object(const std::string& name)
        {
            if (name == "cudaTextureObject_t" || name == "CUtexObject" || name == "CUtexObject_v1")
            {
                return "texture";
            }
            if (name == "cudaSurfaceObject_t" || name == "CUsurfObject" || name == "CUsurfObject_v1")
            {
                return "surface";
            }
            return "";
        }

        // CUtensorMap (cuda.h: a struct of 16 cuuint64_t, 128-byte aligned; the cell's <cuda.h> is not read):
        // its record layout, so a `const __grid_constant__ CUtensorMap` parameter has a dtype (its bytes come
        // from an xcuda.TensorMap or any 128-byte buffer).
        std::shared_ptr<const value_layout> tensor_map_layout()
        {
            static const std::shared_ptr<const value_layout> layout = [] {
                auto l = std::make_shared<value_layout>();
                l->size = 128;
                l->alignment = 128;
                value_layout::field opaque;
                opaque.name = "opaque";
                opaque.extents = {16};
                opaque.type = scalar_layout(scalar_kind::u64);
                l->fields.push_back(opaque);
                return l;
            }();
            return layout;
        }
    }

    resolved_type type_model::resolve_name(const std::string& spelled) const
    {
        resolved_type r;
        r.spelling = spelled;
        const std::string name = without_namespace_aliases(spelled);
        std::string plain = strip_std(name);
        if (const char* object = handle_object(plain); *object)
        {
            r.kind = scalar_kind::u64;
            r.size = 8;
            r.layout = scalar_layout(scalar_kind::u64);
            r.handle = object;
            return r;
        }
        if (plain == "CUtensorMap" || plain == "CUtensorMap_st")
        {
            r.size = 128;
            r.layout = tensor_map_layout();
            return r;
        }
        scalar_kind k = named_scalar(plain);
        if (k == scalar_kind::unknown)
        {
            k = narrow_float_scalar(plain);
        }
        if (k != scalar_kind::unknown)
        {
            r.kind = k;
            r.size = scalar_kind_size(k);
            r.layout = scalar_layout(k);
            return r;
        }
        if (auto v = vector_layout(plain))
        {
            r.kind = packed_pair_kind(plain);  // unknown for the vector types: only the layout says what they hold
            r.size = v->size;
            r.layout = std::move(v);
            return r;
        }
        auto it = m_aliases.find(name);
        if (it == m_aliases.end())
        {
            it = m_aliases.find(plain);
        }
        if (it != m_aliases.end())
        {
            return it->second;
        }
        return r;
    }

    void type_model::define_alias(const std::string& name, resolved_type type)
    {
        m_aliases[name] = std::move(type);
    }

    void type_model::define_namespace_alias(const std::string& name, const std::string& target)
    {
        m_namespace_aliases[name] = target;
    }

    std::string type_model::without_namespace_aliases(const std::string& name) const
    {
        if (m_namespace_aliases.empty())
        {
            return name;
        }
        std::string result = name.compare(0, 2, "::") == 0 ? name.substr(2) : name;
        for (int round = 0; round < 8; ++round)
        {
            // The longest leading qualifier that is an alias: `outer::img` before `outer`.
            bool replaced = false;
            for (std::size_t at = result.rfind("::"); at != std::string::npos && at > 0;
                 at = result.rfind("::", at - 1))
            {
                auto it = m_namespace_aliases.find(result.substr(0, at));
                if (it != m_namespace_aliases.end())
                {
                    result = it->second + result.substr(at);
                    replaced = true;
                    break;
                }
            }
            if (!replaced)
            {
                break;
            }
        }
        return result;
    }
}
