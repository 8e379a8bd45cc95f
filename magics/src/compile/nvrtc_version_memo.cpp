#include "nvrtc_version_memo.hpp"

#include <cstdio>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

#include "nvrtc_compiler.hpp"
#include "nvrtc_library.hpp"
#include "private_files.hpp"

namespace xcuda
{
    namespace
    {
        constexpr const char* header = "xcuda nvrtc-version 1";
    }

    nvrtc_version_memo::nvrtc_version_memo(std::string folder)
        : m_path(folder.empty() ? std::string() : folder + "/nvrtc-version")
    {
    }

    std::string nvrtc_version_memo::format(std::pair<int, int> version, const std::string& fingerprint,
                                           const std::string& path)
    {
        return std::string(header) + "\n" + std::to_string(version.first) + " " + std::to_string(version.second) +
               "\n" + path + "\n" + nvrtc_library::file_identity(path) + "\n" + fingerprint;
    }

    std::optional<std::pair<int, int>> nvrtc_version_memo::parse(const std::string& text, const std::string& fingerprint)
    {
        std::istringstream in(text);
        std::string first, numbers, path, identity;
        if (!std::getline(in, first) || first != header || !std::getline(in, numbers) || !std::getline(in, path) ||
            !std::getline(in, identity))
        {
            return std::nullopt;
        }
        std::string rest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        int major = 0;
        int minor = 0;
        char tail = 0;
        if (std::sscanf(numbers.c_str(), "%d %d%c", &major, &minor, &tail) != 2 || major <= 0 || minor < 0)
        {
            return std::nullopt;
        }
        // The same search, and the very file it opened then, unchanged.
        if (rest != fingerprint || path.empty() || identity == "-" || nvrtc_library::file_identity(path) != identity)
        {
            return std::nullopt;
        }
        return std::make_pair(major, minor);
    }

    std::pair<int, int> nvrtc_version_memo::version()
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (m_version)
        {
            return *m_version;
        }
        if (!m_path.empty() && !nvrtc_library::loaded())
        {
            std::string text;
            if (private_files::read(m_path, text))
            {
                if (auto remembered = parse(text, nvrtc_library::search_fingerprint()))
                {
                    m_version = remembered;
                    return *m_version;
                }
            }
        }
        m_version = nvrtc_compiler::version();  // loads NVRTC (or throws saying where it looked)
        if (!m_path.empty())
        {
            // Best effort, atomically: a reader sees the old file or the new one.
            std::string text = format(*m_version, nvrtc_library::search_fingerprint(), nvrtc_library::path());
            std::string temporary = private_files::temporary_name(m_path);
            int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (fd >= 0)
            {
                bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
                written = ::close(fd) == 0 && written;
                if (!written || ::rename(temporary.c_str(), m_path.c_str()) != 0)
                {
                    ::unlink(temporary.c_str());
                }
            }
        }
        return *m_version;
    }
}
