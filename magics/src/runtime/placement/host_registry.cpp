#include "host_registry.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errors.hpp"

namespace xcuda
{
    namespace
    {
        // More slots than any host has engines; past it something is wrong (a folder full of locks).
        constexpr int max_slots = 4096;

        std::string system_error(const std::string& what, const std::string& path)
        {
            return what + " " + path + ": " + std::strerror(errno);
        }

        // mkdir -p with mode 0700 for what it makes; an existing folder is checked by the caller.
        void make_folders(const std::string& path)
        {
            for (std::size_t at = path.find('/', 1);; at = path.find('/', at + 1))
            {
                std::string part = path.substr(0, at);
                if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST)
                {
                    throw usage_error(system_error("cannot make the xcuda engine registry folder", part) +
                                      "; set XCUDA_HOST_REGISTRY to a writable local folder");
                }
                if (at == std::string::npos)
                {
                    return;
                }
            }
        }

        std::string read_label(int fd)
        {
            char buffer[512];
            ssize_t got = ::pread(fd, buffer, sizeof buffer - 1, 0);
            return got > 0 ? std::string(buffer, static_cast<std::size_t>(got)) : std::string("(unnamed)");
        }

        void write_label(int fd, const std::string& label)
        {
            // Best effort: the label is for people reading reports; the lock is what counts.
            if (::ftruncate(fd, 0) == 0)
            {
                ssize_t written = ::pwrite(fd, label.data(), label.size(), 0);
                (void)written;
            }
        }

        // File names keep to [A-Za-z0-9-]: a GPU id is a UUID, but nothing outside should make a path.
        std::string file_safe(const std::string& text)
        {
            std::string safe;
            for (char c : text)
            {
                bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
                safe += plain ? c : '_';
            }
            return safe;
        }
    }

    host_registry::host_registry(std::string directory) : m_directory(std::move(directory))
    {
        while (m_directory.size() > 1 && m_directory.back() == '/')
        {
            m_directory.pop_back();
        }
        if (m_directory.empty() || m_directory[0] != '/')
        {
            throw usage_error("the xcuda engine registry folder must be an absolute path, got '" + m_directory +
                              "' (XCUDA_HOST_REGISTRY)");
        }
        make_folders(m_directory);
        struct stat info{};
        if (::lstat(m_directory.c_str(), &info) != 0)
        {
            throw usage_error(system_error("cannot read the xcuda engine registry folder", m_directory));
        }
        if (!S_ISDIR(info.st_mode) || info.st_uid != ::geteuid())
        {
            throw usage_error("the xcuda engine registry " + m_directory +
                              " is not a folder of this user's; remove it, or set XCUDA_HOST_REGISTRY to "
                              "a folder of your own");
        }
    }

    host_registry::~host_registry()
    {
        release();
    }

    std::string host_registry::default_directory()
    {
        if (const char* chosen = std::getenv("XCUDA_HOST_REGISTRY"); chosen && *chosen)
        {
            return chosen;
        }
        return "/tmp/xcuda-" + std::to_string(::geteuid()) + "/engines";
    }

    int host_registry::lease_slot(const std::string& label)
    {
        if (m_slot >= 0)
        {
            return m_slot;
        }
        for (int slot = 0; slot < max_slots; ++slot)
        {
            std::string path = m_directory + "/slot-" + std::to_string(slot);
            int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
            if (fd < 0)
            {
                throw usage_error(system_error("cannot open the engine slot", path));
            }
            if (::flock(fd, LOCK_EX | LOCK_NB) == 0)
            {
                write_label(fd, label);
                m_slot = slot;
                m_slot_fd = fd;
                return slot;
            }
            int why = errno;
            ::close(fd);
            if (why != EWOULDBLOCK)
            {
                errno = why;
                throw usage_error(system_error("cannot lock the engine slot", path));
            }
        }
        throw usage_error("all " + std::to_string(max_slots) + " engine slots in " + m_directory +
                          " are held; set XCUDA_DEVICE for each engine instead");
    }

    std::string host_registry::gpu_prefix(const std::string& gpu) const
    {
        return "gpu-" + file_safe(gpu) + ".";
    }

    std::vector<std::string> host_registry::others_on(const std::string& gpu) const
    {
        std::vector<std::string> labels;
        std::string prefix = gpu_prefix(gpu);
        DIR* folder = ::opendir(m_directory.c_str());
        if (!folder)
        {
            return labels;
        }
        while (dirent* entry = ::readdir(folder))
        {
            std::string name = entry->d_name;
            if (name.compare(0, prefix.size(), prefix) != 0)
            {
                continue;
            }
            std::string path = m_directory + "/" + name;
            bool mine = false;
            for (const auto& held : m_gpus)
            {
                mine = mine || held.path == path;
            }
            if (mine)
            {
                continue;
            }
            int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd < 0)
            {
                continue;  // removed meanwhile
            }
            if (::flock(fd, LOCK_SH | LOCK_NB) == 0)
            {
                ::unlink(path.c_str());  // nobody holds it: its process has ended
            }
            else
            {
                labels.push_back(read_label(fd));
            }
            ::close(fd);
        }
        ::closedir(folder);
        return labels;
    }

    std::vector<std::string> host_registry::use_gpu(const std::string& gpu, const std::string& label)
    {
        bool recorded = false;
        for (const auto& held : m_gpus)
        {
            recorded = recorded || held.gpu == gpu;
        }
        if (!recorded)
        {
            static int serial = 0;  // several registries of one process (tests) get distinct names
            std::string name = gpu_prefix(gpu) + std::to_string(::getpid()) + "." + std::to_string(++serial);
            std::string temporary = m_directory + "/.new-" + name;
            int fd = ::open(temporary.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
            if (fd < 0)
            {
                throw usage_error(system_error("cannot record the GPU in", temporary));
            }
            if (::flock(fd, LOCK_EX) != 0)
            {
                int why = errno;
                ::close(fd);
                ::unlink(temporary.c_str());
                errno = why;
                throw usage_error(system_error("cannot lock", temporary));
            }
            write_label(fd, label);
            std::string path = m_directory + "/" + name;
            if (::rename(temporary.c_str(), path.c_str()) != 0)
            {
                int why = errno;
                ::close(fd);
                ::unlink(temporary.c_str());
                errno = why;
                throw usage_error(system_error("cannot record the GPU in", path));
            }
            m_gpus.push_back({gpu, path, fd});
        }
        return others_on(gpu);
    }

    void host_registry::release() noexcept
    {
        for (auto& held : m_gpus)
        {
            // Remove before closing: once the lock goes, another process may remove it too.
            ::unlink(held.path.c_str());
            ::close(held.fd);
        }
        m_gpus.clear();
        if (m_slot_fd >= 0)
        {
            ::close(m_slot_fd);  // the slot file stays: unlocked, it is free
            m_slot_fd = -1;
        }
        m_slot = -1;
    }
}
