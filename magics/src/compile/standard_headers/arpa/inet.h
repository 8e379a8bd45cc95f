// xcuda stand-in for POSIX <arpa/inet.h> under NVRTC: sockets are the host's (llm.c's utils.h includes it for
// its multi-node set-up); the types a declaration may name, nothing to call. A header of this name in a -I
// folder or a header cell is taken instead of this one.
#pragma once
#include <sys/types.h>
typedef unsigned int in_addr_t;
typedef unsigned short in_port_t;
typedef unsigned int socklen_t;
struct in_addr
{
    in_addr_t s_addr;
};
