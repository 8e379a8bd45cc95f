#pragma once
// Bytes through file descriptors and in the project's little binary formats (the compile worker's
// request and reply, the compile cache's entries): whole writes and reads that retry on EINTR, and a
// codec of little-endian u64s and length-prefixed texts whose readers never read past the input.
// Pure POSIX and C++17; no state.

#include <cstdint>
#include <string>
#include <vector>

namespace xcuda::byte_io
{
    // Writes all size bytes, retrying on EINTR. False on an error or a write of nothing; then *error (when
    // given) is errno, or ENOSPC for a write of nothing.
    bool write_all(int fd, const char* data, std::size_t size, int* error = nullptr);
    // Reads exactly size bytes, retrying on EINTR; false on an error or an early end of file.
    bool read_all(int fd, char* data, std::size_t size);

    void put_u64(std::string& out, std::uint64_t value);
    void put_text(std::string& out, const std::string& text);
    void put_list(std::string& out, const std::vector<std::string>& items);
    // Each reads at in[at], advances at past what it read, and is false when in ends first (a length
    // running past the end, a count larger than the input could hold).
    bool get_u64(const std::string& in, std::size_t& at, std::uint64_t& value);
    bool get_text(const std::string& in, std::size_t& at, std::string& text);
    bool get_list(const std::string& in, std::size_t& at, std::vector<std::string>& items);
}
