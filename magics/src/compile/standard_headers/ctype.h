// xcuda stand-in for <ctype.h> under NVRTC: isprint(), isspace() and the rest are the host C library's, used by
// host code (llm.c's tokenizer) that a cell sets aside; NVRTC has none and a declaration here would be refused
// as host code, so this header is empty. A header of this name in a -I folder or a header cell is taken instead.
#pragma once
