// xcuda stand-in for <stdarg.h> under NVRTC: va_list, va_start, va_arg and va_end are NVRTC's own (its built-in
// header declares them), for host code's variadic helpers (llm.c's printf0) that a cell sets aside. A header of
// this name in a -I folder or a header cell is taken instead of this one.
#pragma once
