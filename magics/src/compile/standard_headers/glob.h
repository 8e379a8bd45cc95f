// xcuda stand-in for POSIX <glob.h> under NVRTC: glob_t, a member of llm.c's DataLoader, and the flags, for host
// code to parse until it is set aside; glob() and globfree() are the host's and are not declared. A header of
// this name in a -I folder or a header cell is taken instead of this one.
#pragma once
#include <cuda/std/cstddef>
typedef struct
{
    ::cuda::std::size_t gl_pathc;
    char** gl_pathv;
    ::cuda::std::size_t gl_offs;
} glob_t;
#define GLOB_ERR (1 << 0)
#define GLOB_MARK (1 << 1)
#define GLOB_NOSORT (1 << 2)
#define GLOB_NOSPACE 1
#define GLOB_ABORTED 2
#define GLOB_NOMATCH 3
