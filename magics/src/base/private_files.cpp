#include "private_files.hpp"

#include <cerrno>
#include <cstdio>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace xcuda
{
    namespace
    {
        std::string mode_text(mode_t mode)
        {
            char text[16];
            std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
            return text;
        }
    }

    std::string private_files::folder_problem(const std::string& path)
    {
        struct stat st;
        if (::lstat(path.c_str(), &st) != 0)
        {
            return "does not exist";
        }
        if (S_ISLNK(st.st_mode))
        {
            return "is a symbolic link";
        }
        if (!S_ISDIR(st.st_mode))
        {
            return "is not a folder";
        }
        if (st.st_uid != ::geteuid())
        {
            return "belongs to user " + std::to_string(st.st_uid) + ", not to you (user " +
                   std::to_string(::geteuid()) + ")";
        }
        if (st.st_mode & (S_IWGRP | S_IWOTH))
        {
            return std::string("is writable by ") + ((st.st_mode & S_IWOTH) ? "others" : "its group") + " (mode " +
                   mode_text(st.st_mode) + ")";
        }
        return {};
    }

    bool private_files::read(const std::string& path, std::string& bytes)
    {
        int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
        {
            return false;
        }
        struct stat st;
        bool trusted = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && st.st_nlink == 1 &&
                       !(st.st_mode & (S_IWGRP | S_IWOTH));
        std::string content;
        if (trusted)
        {
            content.resize(static_cast<std::size_t>(st.st_size));
            std::size_t done = 0;
            while (done < content.size())
            {
                ssize_t n = ::read(fd, content.data() + done, content.size() - done);
                if (n < 0 && errno == EINTR)
                {
                    continue;
                }
                if (n <= 0)
                {
                    trusted = false;
                    break;
                }
                done += static_cast<std::size_t>(n);
            }
        }
        ::close(fd);
        if (trusted)
        {
            bytes = std::move(content);
        }
        return trusted;
    }

    bool private_files::make_folder(const std::string& path)
    {
        std::string partial;
        std::stringstream parts(path);
        std::string part;
        if (!path.empty() && path[0] == '/')
        {
            partial = "/";
        }
        while (std::getline(parts, part, '/'))
        {
            if (part.empty())
            {
                continue;
            }
            partial += part;
            if (::mkdir(partial.c_str(), partial.size() >= path.size() - 1 ? 0700 : 0755) != 0 && errno != EEXIST)
            {
                return false;
            }
            partial += "/";
        }
        struct stat st;
        return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    }
}
