#include "type_model.hpp"

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
        return r;
    }

    namespace
    {
        // Sizes of the CUDA vector and packed types that have no scalar kind.
        std::size_t vector_type_size(const std::string& name)
        {
            static const std::unordered_map<std::string, std::size_t> table = []
            {
                std::unordered_map<std::string, std::size_t> t;
                const std::pair<const char*, std::size_t> scalars[] = {
                    {"char", 1}, {"uchar", 1}, {"short", 2}, {"ushort", 2}, {"int", 4}, {"uint", 4},
                    {"long", 8}, {"ulong", 8}, {"longlong", 8}, {"ulonglong", 8}, {"float", 4}, {"double", 8}};
                for (const auto& s : scalars)
                {
                    for (std::size_t n = 1; n <= 4; ++n)
                    {
                        t[std::string(s.first) + std::to_string(n)] = s.second * n;
                    }
                    if (s.second == 8)
                    {
                        t[std::string(s.first) + "4_16a"] = 32;
                        t[std::string(s.first) + "4_32a"] = 32;
                    }
                }
                t["dim3"] = 12;
                t["__half2"] = t["half2"] = 4;
                t["__nv_bfloat162"] = t["nv_bfloat162"] = 4;
                t["__nv_fp8_e4m3"] = t["__nv_fp8_e5m2"] = 1;
                t["__nv_fp8x2_e4m3"] = t["__nv_fp8x2_e5m2"] = 2;
                t["__nv_fp8x4_e4m3"] = t["__nv_fp8x4_e5m2"] = 4;
                return t;
            }();
            auto it = table.find(name);
            return it == table.end() ? 0 : it->second;
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
                {"uintptr_t", scalar_kind::u64},   {"__half", scalar_kind::f16},
                {"half", scalar_kind::f16},        {"__nv_half", scalar_kind::f16},
                {"__nv_bfloat16", scalar_kind::bf16}, {"nv_bfloat16", scalar_kind::bf16}};
            auto it = table.find(name);
            return it == table.end() ? scalar_kind::unknown : it->second;
        }

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

    resolved_type type_model::resolve_name(const std::string& name) const
    {
        resolved_type r;
        r.spelling = name;
        std::string plain = strip_std(name);
        scalar_kind k = named_scalar(plain);
        if (k != scalar_kind::unknown)
        {
            r.kind = k;
            r.size = scalar_kind_size(k);
            return r;
        }
        std::size_t v = vector_type_size(plain);
        if (v != 0)
        {
            r.size = v;
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
}
