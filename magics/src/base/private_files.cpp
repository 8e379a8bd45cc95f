#include "private_files.hpp"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

namespace xcuda
{
    std::string private_files::temporary_name(const std::string& path)
    {
        std::uint64_t random = 0;
        if (::getrandom(&random, sizeof random, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof random))
        {
            static std::atomic<std::uint64_t> counter{0};  // no entropy yet (early boot): O_EXCL still keeps names apart
            random = ++counter;
        }
        return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(random);
    }

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

    std::string private_files::kind_of(unsigned mode)
    {
        switch (mode & S_IFMT)
        {
        case S_IFREG: return "a regular file";
        case S_IFDIR: return "a folder";
        case S_IFIFO: return "a FIFO";
        case S_IFSOCK: return "a socket";
        case S_IFCHR: return "a character device";
        case S_IFBLK: return "a block device";
        case S_IFLNK: return "a symbolic link";
        default: return "not a regular file";
        }
    }

    namespace
    {
        // Reads size bytes (or, for size 0, up to EOF) from fd; false on an error or a short file.
        bool read_all(int fd, std::size_t size, std::size_t limit, std::string& content)
        {
            content.clear();
            char buffer[65536];
            while (content.size() < limit + 1)
            {
                ssize_t n = ::read(fd, buffer, sizeof buffer);
                if (n < 0 && errno == EINTR)
                {
                    continue;
                }
                if (n < 0)
                {
                    return false;
                }
                if (n == 0)
                {
                    break;
                }
                content.append(buffer, static_cast<std::size_t>(n));
            }
            return size == 0 || content.size() == size;
        }
    }

    bool private_files::read(const std::string& path, std::string& bytes, std::string* problem)
    {
        auto refuse = [problem](std::string why) {
            if (problem)
            {
                *problem = std::move(why);
            }
            return false;
        };
        int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
        {
            return refuse(errno == ELOOP ? "is a symbolic link" : errno == ENOENT ? "does not exist" : std::strerror(errno));
        }
        struct stat st;
        std::string why;
        if (::fstat(fd, &st) != 0)
        {
            why = std::strerror(errno);
        }
        else if (!S_ISREG(st.st_mode))
        {
            why = "is " + kind_of(st.st_mode) + ", not a regular file";
        }
        else if (st.st_uid != ::geteuid())
        {
            why = "belongs to user " + std::to_string(st.st_uid) + ", not to you";
        }
        else if (st.st_nlink != 1)
        {
            why = "has a second hard link";
        }
        else if (st.st_mode & (S_IWGRP | S_IWOTH))
        {
            why = "is writable by others";
        }
        std::string content;
        if (why.empty())
        {
            ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
            if (!read_all(fd, static_cast<std::size_t>(st.st_size), static_cast<std::size_t>(st.st_size), content) ||
                content.size() != static_cast<std::size_t>(st.st_size))
            {
                why = "changed while it was read";
            }
        }
        ::close(fd);
        if (!why.empty())
        {
            return refuse(why);
        }
        bytes = std::move(content);
        return true;
    }

    bool private_files::read_regular(const std::string& path, std::size_t max_bytes, std::string& bytes,
                                     std::string& problem)
    {
        int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
        {
            problem = errno == ENOENT ? "does not exist" : std::strerror(errno);
            return false;
        }
        struct stat st;
        std::string content;
        if (::fstat(fd, &st) != 0)
        {
            problem = std::strerror(errno);
        }
        else if (!S_ISREG(st.st_mode))
        {
            problem = "is " + kind_of(st.st_mode) + ", not a regular file";
        }
        else if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
        {
            problem = "is larger than " + std::to_string(max_bytes >> 20) + " MiB";
        }
        else
        {
            ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
            if (!read_all(fd, 0, max_bytes, content))
            {
                problem = std::strerror(errno);
            }
            else if (content.size() > max_bytes)
            {
                problem = "is larger than " + std::to_string(max_bytes >> 20) + " MiB";
            }
        }
        ::close(fd);
        if (!problem.empty())
        {
            return false;
        }
        bytes = std::move(content);
        return true;
    }

    std::string private_files::code_folder_problem(const std::string& path)
    {
        char* resolved = ::realpath(path.c_str(), nullptr);
        if (!resolved)
        {
            return path + " does not exist";
        }
        std::string real = resolved;
        std::free(resolved);
        std::string folder = real;
        while (true)
        {
            struct stat st;
            if (::lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
            {
                return folder + " is not a folder";
            }
            if (st.st_uid != ::geteuid() && st.st_uid != 0)
            {
                return folder + " belongs to user " + std::to_string(st.st_uid) + " (neither you nor root)";
            }
            bool sticky_root_parent = folder != real && st.st_uid == 0 && (st.st_mode & S_ISVTX);
            if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !sticky_root_parent)
            {
                return folder + " is writable by " + ((st.st_mode & S_IWOTH) ? "others" : "its group") + " (mode " +
                       mode_text(st.st_mode) + ")";
            }
            if (folder == "/")
            {
                return {};
            }
            std::size_t slash = folder.rfind('/');
            folder = slash == 0 ? "/" : folder.substr(0, slash);
        }
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
