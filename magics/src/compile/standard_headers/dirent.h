// xcuda stand-in for POSIX <dirent.h> under NVRTC: DIR and struct dirent, for host code that lists a folder
// (llm.c's find_max_step) to parse until it is set aside; opendir() and readdir() are the host's and are not
// declared. A header of this name in a -I folder or a header cell is taken instead of this one.
#pragma once
#include <sys/types.h>
typedef struct xcuda_host_DIR DIR;
struct dirent
{
    ino_t d_ino;
    unsigned char d_type;
    char d_name[256];
};
