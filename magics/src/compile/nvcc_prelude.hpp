#pragma once
// What nvcc gives every .cu file before its first line and NVRTC does not: glibc's uint, ushort and
// ulong, <math.h>'s M_PI and kin, INFINITY and NAN, <limits.h>'s INT_MAX and kin, RAND_MAX (nvcc
// includes cuda_runtime.h, which includes the host's headers). Kernels written for nvcc use them with no
// #include. The text is the stand-in standard_headers/xcuda_nvcc_prelude.h; NVRTC reads it before the
// cell (--pre-include), and the signature reader reads the same text before the cell (parse_context).
//
// A user's own definition wins: a #define the unit makes itself (the cell or a header cell, as
// `#define M_PI 3.14159f`) or a -D option (`-DM_PI=...`, --define-macro=) leaves that name out of the
// prelude, so the cell's value is the one used and NVRTC warns of no redefinition. A later definition
// elsewhere (an -I header, CCCL's <cuda/std/cmath>) replaces the prelude's, and its redefinition warning
// is taken out of NVRTC's log. A typedef the cell repeats (`typedef unsigned int uint;`) is valid C++
// as it stands. Stateless; thread-safe.

#include <map>
#include <string>
#include <vector>

namespace xcuda
{
    class nvcc_prelude
    {
    public:
        // The name NVRTC is given the text under, among the compile's headers.
        static constexpr const char* header_name = "xcuda_nvcc_prelude.h";

        // The prelude for a unit of `source` and `header_cells`, compiled with -D `defines` and raw
        // NVRTC `options`: the stand-in less the #defines of names the unit or the options define.
        static std::string for_unit(const std::string& source, const std::map<std::string, std::string>& header_cells,
                                    const std::vector<std::string>& defines, const std::vector<std::string>& options);

        // The NVRTC option that reads it first.
        static std::string option();

        // NVRTC's log less its warnings that a macro of the prelude is defined again (#47, "declared at
        // line N of xcuda_nvcc_prelude.h"): the prelude's definitions give way to any later one, as CCCL's
        // <cuda/std/cmath> makes its own INFINITY and NAN (CUB includes it) or an -I header its own M_PI.
        // The warnings' "Remark" goes too when no other warning is left.
        static std::string without_its_redefinitions(const std::string& log);
    };
}
