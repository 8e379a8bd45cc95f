#include "user_headers.hpp"

#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace xcuda
{
    namespace
    {
        // A regular file of a header's size: a FIFO planted under a header's name would block the read (here, and
        // in the notebook's process when the cache key is made), and NVRTC's own open skips nothing larger.
        bool is_file(const std::string& path)
        {
            struct stat st;
            return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= (8 << 20);
        }

        std::string folder_of(const std::string& name)
        {
            auto slash = name.find_last_of('/');
            return slash == std::string::npos ? std::string() : name.substr(0, slash + 1);
        }

        // The spelled name of a quoted include on the line starting at `begin`: (offset, length), or npos.
        std::pair<std::size_t, std::size_t> quoted_include(const std::string& text, std::size_t begin, std::size_t end)
        {
            std::size_t i = text.find_first_not_of(" \t", begin);
            if (i >= end || text[i] != '#')
            {
                return {std::string::npos, 0};
            }
            i = text.find_first_not_of(" \t", i + 1);
            if (i >= end || text.compare(i, 7, "include") != 0)
            {
                return {std::string::npos, 0};
            }
            i = text.find_first_not_of(" \t", i + 7);
            std::size_t close = i < end && text[i] == '"' ? text.find('"', i + 1) : std::string::npos;
            if (close == std::string::npos || close >= end || close == i + 1)
            {
                return {std::string::npos, 0};
            }
            return {i + 1, close - i - 1};
        }

        // The line [begin, end) of `text` holding the character at `at`.
        std::pair<std::size_t, std::size_t> line_of(const std::string& text, std::size_t at)
        {
            std::size_t end = text.find('\n', at);
            std::size_t newline = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
            return {newline == std::string::npos ? 0 : newline + 1, end == std::string::npos ? text.size() : end};
        }
    }

    user_headers::user_headers(std::vector<std::string> include_dirs,
                               const std::map<std::string, std::string>& header_cells)
        : include_dirs_(std::move(include_dirs)), header_cells_(header_cells)
    {
    }

    std::string user_headers::resolve(const std::string& spelled, const std::string& includer) const
    {
        if (header_cells_.count(spelled) != 0)
        {
            return {};
        }
        std::vector<std::string> candidates;
        candidates.push_back(spelled[0] == '/' ? spelled : folder_of(includer) + spelled);
        for (const std::string& dir : include_dirs_)
        {
            if (!dir.empty() && spelled[0] != '/')
            {
                candidates.push_back(dir + (dir.back() == '/' ? "" : "/") + spelled);
            }
        }
        for (const std::string& candidate : candidates)
        {
            if (files_.count(candidate) != 0 || is_file(candidate))
            {
                return candidate;
            }
        }
        return {};
    }

    // `text` with its quoted includes of the user's files renamed as NVRTC names them; each file found is
    // read (once) and renamed in turn. `name` is the file holding `text` ("" for the cell). The scan goes from
    // one '#' to the next, not line by line: the compile cache key reads every cell so, memory hits included
    // (line by line, a 300-line cell took 8 us of a 23 us hit; tests/bench/bench_compile.py's cccl row).
    std::string user_headers::read_from(const std::string& text, const std::string& name)
    {
        std::string result = text;
        for (std::size_t hash = result.find('#'); hash != std::string::npos;)
        {
            auto [begin, end] = line_of(result, hash);  // quoted_include wants the '#' first on its line
            auto [at, length] = quoted_include(result, begin, end);
            std::string resolved = at == std::string::npos ? std::string() : resolve(result.substr(at, length), name);
            if (!resolved.empty())
            {
                if (files_.count(resolved) == 0 && files_.size() < max_files)
                {
                    std::ifstream in(resolved, std::ios::binary);
                    std::stringstream content;
                    content << in.rdbuf();
                    files_[resolved] = content.str();  // first, so an include cycle ends here
                    files_[resolved] = read_from(files_[resolved], resolved);
                }
                result.replace(at, length, resolved);
                end = result.find('\n', begin);
                end = end == std::string::npos ? result.size() : end;
            }
            hash = end < result.size() ? result.find('#', end) : std::string::npos;
        }
        return result;
    }

    set_aside_code user_headers::set_aside(const std::string& file, const std::vector<std::pair<int, int>>& positions,
                                           std::string& cell)
    {
        if (!read_)
        {
            read_ = true;
            cell = read_from(cell, "");
        }
        auto found = files_.find(file);
        if (found == files_.end())
        {
            return {};
        }
        set_aside_code aside = host_code::set_aside(found->second, positions, true);
        found->second = aside.source;
        return aside;
    }

    std::map<std::string, std::string> user_headers::reachable(const std::string& cell)
    {
        files_.clear();
        read_from(cell, "");
        return files_;
    }

    const std::string* user_headers::text_of(const std::string& file) const
    {
        auto found = files_.find(file);
        return found == files_.end() ? nullptr : &found->second;
    }

    std::map<std::string, std::string> user_headers::headers() const
    {
        std::map<std::string, std::string> all = files_;
        for (const auto& [name, text] : header_cells_)
        {
            all[name] = text;
        }
        return all;
    }
}
