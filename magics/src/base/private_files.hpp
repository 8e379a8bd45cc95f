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
        // replacement between check and read is refused too); false, with bytes untouched, otherwise, and
        // what is wrong in *problem when given ("does not exist", "is a FIFO, not a regular file", ...).
        // Opened with O_NONBLOCK: a FIFO planted at the path is refused at once instead of blocking open().
        static bool read(const std::string& path, std::string& bytes, std::string* problem = nullptr);

        // What a path is, in words, when it is not a regular file ("a FIFO", "a folder", "a socket", ...).
        static std::string kind_of(unsigned mode);

        // The bytes of a file a compile reads by name (an #include found in an -I folder), at most max_bytes:
        // the file may be a link (header trees often are) but must be a regular file; a FIFO or a device
        // is refused at once, not opened for a blocking read. false with *problem set otherwise.
        static bool read_regular(const std::string& path, std::size_t max_bytes, std::string& bytes, std::string& problem);

        // "" when the folder may hold code this process imports: it and every folder above it (after links are
        // resolved) belong to this user or to root, and none is writable by its group or others, except a
        // folder above it owned by root with the sticky bit (/tmp: others cannot rename or remove what is
        // ours in it). Otherwise which folder is wrong and why, in words.
        static std::string code_folder_problem(const std::string& path);

        // A name beside path for writing a file and renaming it over path: "<path>.tmp.<pid>.<random>",
        // the random part from getrandom(2) (std::random_device would tie the wheel to glibc 2.36:
        // README, "The wheel"). Create it with O_EXCL.
        static std::string temporary_name(const std::string& path);

        // mkdir -p, with the last component made 0700 (the parents 0755, as `mkdir -p` does).
        static bool make_folder(const std::string& path);
    };
}
