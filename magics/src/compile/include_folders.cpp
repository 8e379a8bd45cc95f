#include "include_folders.hpp"

namespace xcuda
{
    std::vector<std::string> include_folders(const std::vector<std::string>& include_dirs,
                                             const std::vector<std::string>& options)
    {
        std::vector<std::string> folders = include_dirs;
        for (std::size_t i = 0; i < options.size(); ++i)
        {
            const std::string& option = options[i];
            for (const std::string prefix : {"--include-path=", "-I"})
            {
                if (option.rfind(prefix, 0) == 0)
                {
                    std::string folder = option.substr(prefix.size());
                    if (folder.empty() && prefix == "-I" && i + 1 < options.size())
                    {
                        folder = options[++i];
                    }
                    if (!folder.empty())
                    {
                        folders.push_back(folder);
                    }
                    break;
                }
            }
        }
        return folders;
    }
}
