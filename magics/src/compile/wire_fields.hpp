#pragma once
// The byte layout shared by the disk cache's files and the compile helper's pipe messages: unsigned
// 64-bit numbers as 8 little-endian bytes, and fields as such a length followed by that many bytes.
// One definition, so the writer and the reader of each format cannot drift apart. The get_ functions
// return false (and leave `value` unspecified) when `in` ends before the number or field does; `at`
// moves past what they read. Pure functions; safe from any thread.

#include <cstddef>
#include <cstdint>
#include <string>

namespace xcuda::wire
{
    inline void put_u64(std::string& out, std::uint64_t value)
    {
        for (int i = 0; i < 8; ++i)
        {
            out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
        }
    }

    inline bool get_u64(const std::string& in, std::size_t& at, std::uint64_t& value)
    {
        if (at > in.size() || in.size() - at < 8)
        {
            return false;
        }
        value = 0;
        for (int i = 0; i < 8; ++i)
        {
            value |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
        }
        at += 8;
        return true;
    }

    inline void put_field(std::string& out, const std::string& field)
    {
        put_u64(out, field.size());
        out += field;
    }

    inline bool get_field(const std::string& in, std::size_t& at, std::string& field)
    {
        std::uint64_t size = 0;
        if (!get_u64(in, at, size) || size > in.size() - at)
        {
            return false;
        }
        field.assign(in, at, size);
        at += size;
        return true;
    }
}
