#pragma once
// The include folders of one compile: its include_dirs and those its raw NVRTC options name
// (--include-path=D, -ID, -I D), in order. What standard_headers needs to know of a compile's options.

#include <string>
#include <vector>

namespace xcuda
{
    std::vector<std::string> include_folders(const std::vector<std::string>& include_dirs,
                                             const std::vector<std::string>& options);
}
