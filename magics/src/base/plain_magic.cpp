#include "plain_magic.hpp"

#include <map>

namespace xcuda
{
    const char* const plain_magic::info_description =
        "Show the current device, why it was chosen, its memory, and the driver and NVRTC versions.";
    const char* const plain_magic::status_description =
        "List resident modules with their kernels, the device arrays bound in the namespace\n(shape, dtype, bytes), "
        "and the compile cache.";

    const magic_arguments& plain_magic::arguments(const std::string& magic, const std::string& description)
    {
        static std::map<std::string, magic_arguments> declared;
        auto it = declared.find(magic);
        if (it == declared.end())
        {
            it = declared.emplace(magic, magic_arguments(magic, "", description)).first;
        }
        return it->second;
    }
}
