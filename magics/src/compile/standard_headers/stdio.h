// xcuda stand-in for <stdio.h> under NVRTC: device printf is built into NVRTC; this adds what device code
// takes from the host header alongside it (size_t, NULL, EOF), and FILE and SEEK_SET for host code (llm.c's
// llmc/utils.h) to parse until it is set aside. fopen, fprintf, stderr and the rest are host-only, not declared.
// A header of this name in a -I folder or a header cell is taken instead of this one.
#pragma once
#include "xcuda_std_namespace.h"
#include <cuda/std/cstddef>
#ifndef NULL
#define NULL 0
#endif
#ifndef EOF
#define EOF (-1)
#endif
// An incomplete type, as the host's: a FILE* member or parameter parses; nothing can be done with one.
typedef struct xcuda_host_FILE FILE;
#ifndef SEEK_SET
#define SEEK_SET 0
#define SEEK_CUR 1
#define SEEK_END 2
#endif
