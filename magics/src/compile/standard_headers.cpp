#include "standard_headers.hpp"

#include <cstdint>
#include <cstdio>
#include <sys/stat.h>

namespace xcuda
{
    std::map<std::string, std::string> standard_headers::for_compile(const std::vector<std::string>& folders,
                                                                     const std::map<std::string, std::string>& header_cells)
    {
        std::map<std::string, std::string> result;
        for (const standard_header& header : all())
        {
            if (header_cells.count(header.name) != 0)
            {
                continue;
            }
            bool in_a_folder = false;
            for (const std::string& folder : folders)
            {
                struct stat st;
                if (::stat((folder + "/" + header.name).c_str(), &st) == 0 && S_ISREG(st.st_mode))
                {
                    in_a_folder = true;
                    break;
                }
            }
            if (!in_a_folder)
            {
                result.emplace(header.name, header.text);
            }
        }
        return result;
    }

    std::string standard_headers::digest_of(const std::vector<standard_header>& headers)
    {
        // FNV-1a 64 over length-prefixed names and texts: a version stamp for the cache key, not security
        // (the key holds the cell's own inputs in full).
        std::uint64_t hash = 14695981039346656037ull;
        auto add = [&hash](const std::string& text) {
            std::string field = std::to_string(text.size()) + ":" + text;
            for (unsigned char c : field)
            {
                hash = (hash ^ c) * 1099511628211ull;
            }
        };
        for (const standard_header& header : headers)
        {
            add(header.name);
            add(header.text);
        }
        char buffer[17];
        std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(hash));
        return buffer;
    }

    const std::string& standard_headers::digest()
    {
        static const std::string value = digest_of(all());
        return value;
    }
}
