#include "layout_probe.hpp"

#include <cctype>
#include <cstdlib>
#include <set>

namespace xcuda
{
    namespace
    {
        constexpr std::size_t max_fields = 128;  // per type: enough for real structs, bounded for the probe

        // offsetof designators of every named field, nested records' fields with a "." path.
        void collect(const value_layout& layout, const std::string& prefix, std::size_t base,
                     std::vector<std::string>& designators, std::vector<std::size_t>& offsets)
        {
            for (const auto& f : layout.fields)
            {
                if (designators.size() >= max_fields || f.name.empty())
                {
                    continue;
                }
                designators.push_back(prefix + f.name);
                offsets.push_back(base + f.offset);
                if (f.type && f.type->is_record() && f.extents.empty() && !f.type->is_pointer && !f.type->private_fields)
                {
                    collect(*f.type, prefix + f.name + ".", base + f.offset, designators, offsets);
                }
            }
        }

        bool plain_value_type(const kernel_parameter& p)
        {
            const std::string& t = p.type;
            return !p.is_pointer && t.find('&') == std::string::npos && t.find("...") == std::string::npos &&
                   t.find('(') == std::string::npos;
        }
    }

    layout_probe::layout_probe(const std::vector<kernel_signature>& signatures)
    {
        std::multiset<std::string> names;
        for (const auto& s : signatures)
        {
            names.insert(s.qualified_name);
        }
        std::string body;
        for (std::size_t k = 0; k < signatures.size(); ++k)
        {
            const kernel_signature& s = signatures[k];
            // decltype(kernel) needs one function of that name, not a template.
            if (s.is_template() || names.count(s.qualified_name) != 1)
            {
                continue;
            }
            for (std::size_t i = 0; i < s.parameters.size(); ++i)
            {
                const kernel_parameter& p = s.parameters[i];
                if (!p.refusal.empty())
                {
                    continue;
                }
                entry e;
                e.kernel = k;
                e.parameter = i;
                e.type = p.type;
                std::vector<std::string> designators;
                bool record = p.layout && p.layout->known() && p.layout->is_record() && !p.layout->is_pointer;
                bool pointee = p.is_pointer && p.type.find("(*)") == std::string::npos && record &&
                               p.type.find('*') == p.type.rfind('*');
                if (record && (plain_value_type(p) || pointee))
                {
                    e.expected = {p.layout->size, p.layout->alignment};
                    e.labels = {"sizeof", "alignof"};
                    std::vector<std::size_t> offsets;
                    if (!p.layout->private_fields)
                    {
                        collect(*p.layout, "", 0, designators, offsets);  // private members: size only
                    }
                    for (std::size_t d = 0; d < designators.size(); ++d)
                    {
                        e.labels.push_back("offsetof(" + designators[d] + ")");
                        e.expected.push_back(offsets[d]);
                    }
                }
                else if (plain_value_type(p) && p.size == 0 && p.kind == scalar_kind::unknown)
                {
                    e.labels = {"sizeof", "alignof"};  // a type the reader could not size: the compiler's
                }
                else
                {
                    continue;
                }
                std::string n = std::to_string(m_entries.size());
                std::string t = "xcuda_probe_t" + n;
                body += "typedef xcuda_probe_detail::strip<xcuda_probe_detail::arg<" + std::to_string(i) + ", decltype(" +
                        s.qualified_name + ")>::type>::type " + t + ";\n";
                body += "extern \"C\" __device__ unsigned long long xcuda_probe_" + n + "[] = {sizeof(" + t +
                        "), alignof(" + t + ")";
                for (const std::string& d : designators)
                {
                    body += ", __INTADDR__(&(((" + t + "*)0)->" + d + "))";
                }
                body += "};\n";
                m_entries.push_back(std::move(e));
            }
        }
        if (!m_entries.empty())
        {
            m_source = "\n// xcuda's layout probe (docs/other-peoples-cuda.md): the compiler's sizeof/offsetof of the kernels' structs\n"
                       "namespace xcuda_probe_detail {\n"
                       "template <int I, class F> struct arg;\n"
                       "template <int I, class R, class A0, class... A> struct arg<I, R(A0, A...)> : arg<I - 1, R(A...)> {};\n"
                       "template <class R, class A0, class... A> struct arg<0, R(A0, A...)> { typedef A0 type; };\n"
                       "template <class T> struct strip { typedef T type; };\n"
                       "template <class T> struct strip<T*> { typedef T type; };\n"
                       "}\n" +
                       body;
        }
    }

    std::vector<unsigned long long> layout_probe::read_array(const std::string& ptx, const std::string& name)
    {
        std::vector<unsigned long long> values;
        std::string key = " " + name + "[";
        std::size_t at = ptx.find(key);
        if (at == std::string::npos)
        {
            return values;
        }
        std::size_t line = ptx.rfind('\n', at);
        line = line == std::string::npos ? 0 : line + 1;
        std::string head = ptx.substr(line, at - line);
        bool bytes = head.find(".b8") != std::string::npos || head.find(".u8") != std::string::npos;
        std::size_t count = std::strtoull(ptx.c_str() + at + key.size(), nullptr, 10);
        std::size_t open = ptx.find('{', at);
        std::size_t close = ptx.find('}', at);
        std::size_t end = ptx.find('\n', at);
        std::vector<unsigned long long> raw;
        if (open != std::string::npos && close != std::string::npos && open < close && (end == std::string::npos || close < end))
        {
            const char* p = ptx.c_str() + open + 1;
            const char* stop = ptx.c_str() + close;
            while (p < stop)
            {
                while (p < stop && !std::isdigit(static_cast<unsigned char>(*p)))
                {
                    ++p;
                }
                if (p >= stop)
                {
                    break;
                }
                char* next = nullptr;
                raw.push_back(std::strtoull(p, &next, 0));
                p = next;
            }
        }
        else if (count == 0)
        {
            return values;
        }
        if (!bytes)
        {
            raw.resize(count, 0);
            return raw;
        }
        raw.resize(count, 0);  // trailing zero bytes are left out of the initializer
        for (std::size_t i = 0; i + 8 <= raw.size(); i += 8)
        {
            unsigned long long v = 0;
            for (std::size_t b = 0; b < 8; ++b)
            {
                v |= (raw[i + b] & 0xffULL) << (8 * b);
            }
            values.push_back(v);
        }
        return values;
    }

    std::size_t layout_probe::apply(const std::string& ptx, std::vector<kernel_signature>& signatures) const
    {
        std::size_t found = 0;
        for (std::size_t n = 0; n < m_entries.size(); ++n)
        {
            const entry& e = m_entries[n];
            std::vector<unsigned long long> got = read_array(ptx, "xcuda_probe_" + std::to_string(n));
            if (got.size() < e.labels.size() || e.kernel >= signatures.size() ||
                e.parameter >= signatures[e.kernel].parameters.size())
            {
                continue;
            }
            ++found;
            kernel_parameter& p = signatures[e.kernel].parameters[e.parameter];
            if (e.expected.empty())
            {
                // Sized by the compiler alone: passed as that many bytes (a numpy record or bytes of it).
                p.size = static_cast<std::size_t>(got[0]);
                continue;
            }
            for (std::size_t i = 0; i < e.expected.size(); ++i)
            {
                if (got[i] != e.expected[i])
                {
                    std::string what = p.is_pointer ? "the pointee of " + p.type : p.type;
                    p.refusal = "the compiler lays out " + what + " differently from xcuda's reader: " + e.labels[i] +
                                " is " + std::to_string(got[i]) + " bytes to NVRTC and " + std::to_string(e.expected[i]) +
                                " to the reader (a #pragma pack or an attribute it does not know?). xcuda will not guess: pass "
                                "the bytes behind a pointer (const unsigned char*) instead, and please report the "
                                "declaration";
                    p.kind = p.is_pointer ? p.kind : scalar_kind::unknown;
                    p.size = p.is_pointer ? 8 : 0;
                    p.layout = nullptr;
                    break;
                }
            }
        }
        return found;
    }
}
