// xcuda stand-in for POSIX <unistd.h> under NVRTC: the operating system's host API, which no kernel can call
// and NVRTC does not ship. Kernel files include it for their host code (llm.c's train_gpt2_fp32.cu); that
// code is set aside, so nothing is declared here. A header of this name in a -I folder or a header cell is
// taken instead of this one.
#pragma once
