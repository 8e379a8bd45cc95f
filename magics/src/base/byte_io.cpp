#include "byte_io.hpp"

#include <unistd.h>

#include <cerrno>

namespace xcuda::byte_io
{
    bool write_all(int fd, const char* data, std::size_t size, int* error)
    {
        while (size > 0)
        {
            ssize_t n = ::write(fd, data, size);
            if (n < 0 && errno == EINTR)
            {
                continue;
            }
            if (n <= 0)
            {
                if (error)
                {
                    *error = n < 0 ? errno : ENOSPC;
                }
                return false;
            }
            data += n;
            size -= static_cast<std::size_t>(n);
        }
        return true;
    }

    bool read_all(int fd, char* data, std::size_t size)
    {
        while (size > 0)
        {
            ssize_t n = ::read(fd, data, size);
            if (n < 0 && errno == EINTR)
            {
                continue;
            }
            if (n <= 0)
            {
                return false;
            }
            data += n;
            size -= static_cast<std::size_t>(n);
        }
        return true;
    }

    void put_u64(std::string& out, std::uint64_t value)
    {
        for (int i = 0; i < 8; ++i)
        {
            out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
        }
    }

    bool get_u64(const std::string& in, std::size_t& at, std::uint64_t& value)
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

    void put_text(std::string& out, const std::string& text)
    {
        put_u64(out, text.size());
        out += text;
    }

    bool get_text(const std::string& in, std::size_t& at, std::string& text)
    {
        std::uint64_t size = 0;
        if (!get_u64(in, at, size) || size > in.size() - at)
        {
            return false;
        }
        text.assign(in, at, size);
        at += size;
        return true;
    }

    void put_list(std::string& out, const std::vector<std::string>& items)
    {
        put_u64(out, items.size());
        for (const std::string& item : items)
        {
            put_text(out, item);
        }
    }

    bool get_list(const std::string& in, std::size_t& at, std::vector<std::string>& items)
    {
        std::uint64_t count = 0;
        // Each item takes at least its 8-byte length: a count the rest of the input cannot hold is refused
        // before anything is allocated for it.
        if (!get_u64(in, at, count) || count > (in.size() - at) / 8)
        {
            return false;
        }
        items.resize(count);
        for (std::string& item : items)
        {
            if (!get_text(in, at, item))
            {
                return false;
            }
        }
        return true;
    }
}
