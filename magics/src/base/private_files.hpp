#pragma once
// Files the kernel writes and reads back later (the compile cache on disk, the namespace carried across a
// process replacement) are trusted only when nobody else can have written them: a binary read back is
// loaded and run, a pickle read back is executed. The content hash of a cache entry is no defence, since
// anyone can compute it.
//
// The rule: the folder is a real directory (not a symbolic link) owned by this user and writable by nobody
// else; a file is a regular file (not a link), owned by this user, with one hard link (a second name could
// be another user's), and writable by nobody else. Pure POSIX; no state.

#include <string>

namespace xcuda
{
    class private_files
    {
    public:
        // "" when path passes the folder rule; otherwise what is wrong, in words ("is writable by others
        // (mode 0777)", "belongs to user 1001", ...).
        static std::string folder_problem(const std::string& path);

        // The bytes of path when the file passes the file rule (checked on the opened file, so a link or a
        // replacement between check and read is refused too); false, with bytes untouched, otherwise.
        static bool read(const std::string& path, std::string& bytes);

        // mkdir -p, with the last component made 0700 (the parents 0755, as `mkdir -p` does).
        static bool make_folder(const std::string& path);
    };
}
