// The user's own headers, included by relative path ("llmc/utils.h" beside the notebook, or a file of a -I
// folder), when they hold host code: llm.c's llmc/utils.h, tokenizer.h and dataloader.h are file IO and
// tokenizing for the host beside device code. nvcc compiles them for the host; NVRTC refuses each host
// function and variable. A cell sets them aside as it does its own (host_code.hpp), in the headers' text,
// which is then handed to NVRTC as name + content instead of being read from disk.
//
// Once one of them needs a set-aside, every file reachable from the cell by quoted includes through the
// cell's folder (the working directory) and the -I folders is read, each named as NVRTC names it in its
// messages (the includer's folder + the include, "llmc/utils.h", or "<-I folder>/name"), and every quoted
// include of one of them is renamed to that name: NVRTC looks up headers given as text by the include's
// spelling, so dataloader.h's `#include "utils.h"` must say "llmc/utils.h" to reach the set-aside copy.
// Only the include's spelling changes; every line keeps its number. Header cells are not files: an
// include of one is left alone. Not thread-safe: one per compile.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "host_code.hpp"

namespace xcuda
{
    class user_headers
    {
    public:
        user_headers(std::vector<std::string> include_dirs, const std::map<std::string, std::string>& header_cells);

        // Sets aside the host code NVRTC refused at `positions` of `file` (the name in its message); nothing
        // when `file` is not one of the user's own files. The first call reads them all (see above) and
        // renames the includes of `cell`, which it returns through `cell`.
        set_aside_code set_aside(const std::string& file, const std::vector<std::pair<int, int>>& positions,
                                 std::string& cell);

        // Every user file reachable from `cell` by quoted includes, as read from disk (name -> text): what the
        // compile cache key takes from them, so that editing llmc/utils.h compiles the cell again.
        std::map<std::string, std::string> reachable(const std::string& cell);

        // The text handed to NVRTC for one of the user's headers, or null.
        const std::string* text_of(const std::string& file) const;

        // The header cells and the user's headers read so far, for NVRTC.
        std::map<std::string, std::string> headers() const;

        // Where an include of `spelled` from the file `includer` ("" for the cell) is, as NVRTC names it, or "".
        std::string resolve(const std::string& spelled, const std::string& includer) const;

        static constexpr std::size_t max_files = 1000;

    private:
        std::string read_from(const std::string& text, const std::string& name);

        std::vector<std::string> include_dirs_;
        const std::map<std::string, std::string>& header_cells_;
        std::map<std::string, std::string> files_;  // NVRTC's name -> text handed to it
        bool read_ = false;
    };
}
