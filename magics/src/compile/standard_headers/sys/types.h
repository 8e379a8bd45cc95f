// xcuda stand-in for POSIX <sys/types.h> under NVRTC: the operating system's types, for the host code of a .cu
// file or of the user's own headers (llm.c's llmc/utils.h) to parse until it is set aside (host_code.hpp).
// Types only: no kernel can call the operating system, and a function declared here would be refused as host
// code in every cell. A header of this name in a -I folder or a header cell is taken instead of this one.
#pragma once
#include <cuda/std/cstddef>
#include <cuda/std/cstdint>
typedef unsigned int mode_t;
typedef long off_t;
typedef long ssize_t;
typedef int pid_t;
typedef unsigned int uid_t;
typedef unsigned int gid_t;
typedef unsigned long ino_t;
typedef unsigned long dev_t;
typedef unsigned long nlink_t;
