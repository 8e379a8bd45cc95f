// xcuda stand-in for POSIX <sys/stat.h> under NVRTC: struct stat and the mode bits, for host code (llm.c's
// create_dir_if_not_exists: `struct stat st = {0}; stat(dir, &st); mkdir(dir, 0700)`) to parse until it is set
// aside. stat() and mkdir() are the host's and are not declared (NVRTC refuses host functions). A header of this
// name in a -I folder or a header cell is taken instead of this one.
#pragma once
#include <sys/types.h>
struct stat
{
    dev_t st_dev;
    ino_t st_ino;
    mode_t st_mode;
    nlink_t st_nlink;
    uid_t st_uid;
    gid_t st_gid;
    off_t st_size;
};
#define S_IFMT 0170000
#define S_IFDIR 0040000
#define S_IFREG 0100000
#define S_ISDIR(m) (((m) & S_IFMT) == S_IFDIR)
#define S_ISREG(m) (((m) & S_IFMT) == S_IFREG)
