"""C and C++ standard headers in a cell, with no flags, under NVRTC 13 and 12: the stand-ins of
magics/src/compile/standard_headers/ (CCCL's cuda/std with std:: naming it, float.h's macros, M_PI,
<algorithm>'s min/max, cuda.h's device types), their values checked against numpy on the PTX
simulator, a user's -I header or header cell of the same name taken instead, the parameter types they
give, and host-only library headers: their names declared for host code (set aside), refused with the
reason in device code."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xcuda
from test_nvrtc_versions import NVRTC12, needs_12

HERE = Path(__file__).resolve().parent

# Every header a stand-in makes work, each with a use of what it is included for.
WORKING = {
    "cstdint": "uint8_t a = 1; int64_t b = INT64_MAX; std::uint32_t c = UINT32_MAX; (void)a; (void)b; (void)c;",
    "stdint.h": "uint16_t a = UINT16_MAX; intptr_t b = 0; uintmax_t c = 0; (void)a; (void)b; (void)c;",
    "cmath": "float x = std::sqrt(2.0f) + std::fabs(-1.0f) + M_PI + std::isnan(NAN) + std::isinf(INFINITY); (void)x;",
    "math.h": "double x = sqrt(2.0) + M_PI_2 + HUGE_VAL + fabsf(-1.0f) + isnan(1.0); (void)x;",
    "cfloat": "float x = FLT_MAX + FLT_EPSILON + FLT_MIN; double y = DBL_MAX + DBL_EPSILON; (void)x; (void)y;",
    "float.h": "int x = FLT_DIG + DBL_MANT_DIG + FLT_RADIX; (void)x;",
    "climits": "long long x = INT_MAX + CHAR_BIT + LLONG_MAX + UINT_MAX + SHRT_MIN; (void)x;",
    "limits.h": "int x = INT_MIN + SCHAR_MAX; (void)x;",
    "cstdio": "printf(\"%d\\n\", 1); int e = EOF; (void)e;",
    "stdio.h": "printf(\"%f\\n\", 1.0);",
    "cassert": "assert(threadIdx.x < 1024);",
    "assert.h": "assert(blockDim.x > 0);",
    "cstddef": "std::size_t n = sizeof(int); std::ptrdiff_t d = 0; (void)n; (void)d;",
    "stddef.h": "size_t n = offsetof(int2, y); (void)n;",
    "cstdlib": "int x = std::abs(-3) + abs(-4); (void)x;",
    "stdlib.h": "void* p = malloc(8); free(p);",
    "cstring": "int a[2] = {1, 2}; memcpy(a, a + 1, sizeof(int)); memset(a, 0, sizeof a);",
    "string.h": "char s[4]; memset(s, 'x', 3); s[3] = 0;",
    "type_traits": "static_assert(std::is_same<int, std::int32_t>::value && std::is_floating_point_v<float>, \"\");",
    "utility": "auto p = std::make_pair(1, 2.0f); int x = std::move(p.first); std::swap(x, x); (void)x;",
    "limits": "int x = std::numeric_limits<int>::max(); float y = std::numeric_limits<float>::infinity(); (void)x; (void)y;",
    "algorithm": "int x = std::min(3, 4) + std::max(3, 4) + std::clamp(9, 0, 5); (void)x;",
    "array": "std::array<int, 3> a{1, 2, 3}; int x = a[2] + int(a.size()); (void)x;",
    "tuple": "auto t = std::make_tuple(1, 2.0f); int x = std::get<0>(t); (void)x;",
    "functional": "int x = std::plus<int>()(1, 2); (void)x;",
    "bit": "unsigned x = std::popcount(7u) + std::bit_width(8u); (void)x;",
    "numbers": "double x = std::numbers::pi; (void)x;",
    "complex": "std::complex<float> z(1.0f, 2.0f); float x = std::abs(z * z); (void)x;",
    "optional": "std::optional<int> o = 3; int x = o.value_or(0); (void)x;",
    "variant": "std::variant<int, float> v = 2.0f; int x = int(v.index()); (void)x;",
    "span": "int a[4] = {}; std::span<int> s(a, 4); int x = int(s.size()); (void)x;",
    "iterator": "int a[4] = {}; int x = int(std::distance(a, a + 4)); (void)x;",
    "numeric": "int x = std::gcd(12, 18); (void)x;",
    "ratio": "int x = std::ratio<2, 4>::num; (void)x;",
    "chrono": "auto d = std::chrono::milliseconds(3); long long x = d.count(); (void)x;",
    "atomic": "std::atomic<int> a{0}; a.fetch_add(1); (void)a;",
    "initializer_list": "std::initializer_list<int> l = {1, 2}; int x = int(l.size()); (void)x;",
    "concepts": "static_assert(std::integral<int>, \"\");",
    "memory": "int a = 1; int* p = std::addressof(a); (void)p;",
    "cuda.h": "CUtensorMap m; CUdeviceptr p = 0; static_assert(sizeof(m) == 128 && alignof(CUtensorMap) == 128, \"\"); (void)p;",
    "cuda_runtime.h": "float2 v = make_float2(1.0f, 2.0f); (void)v;",
    "ctime": "std::time_t t = 0; std::clock_t c = clock(); long long x = t + c + CLOCKS_PER_SEC; (void)x;",
    "time.h": "time_t t = 0; clock_t c = clock(); (void)t; (void)c;",
}
# Each host-only library header, with host code that uses it (a function no kernel calls, set aside) and a
# device use of the same name, which stops with the reason.
HOST_ONLY = {
    "iostream": ("std::cout << \"n = \" << n << std::endl; std::cerr << n << std::flush; int k; std::cin >> k;",
                 "std::cout << x[0] << std::endl;", "std::cout (and every << on a stream)"),
    "vector": ("std::vector<float> v(n); v.push_back(1.0f); for (float& f : v) f = 0.0f; std::vector<int>::size_type s = v.size();",
               "std::vector<float> v;", "std::vector"),
    "string": ("std::string s = \"run \" + std::to_string(n); int k = std::stoi(s); (void)k;",
               "std::string s;", "std::string"),
    "map": ("std::map<std::string, int> counts; counts[\"a\"] += n;", "std::map<int, int> m;", "std::map"),
    "thread": ("std::thread t([] {}); t.join(); std::this_thread::sleep_for(std::chrono::milliseconds(1));",
               "std::this_thread::yield();", "std::this_thread::yield"),
    "fstream": ("std::ofstream out(\"x.bin\", std::ios::binary); out.write(nullptr, n);", "std::ifstream in;",
                "std::ifstream"),
    "sstream": ("std::ostringstream o; o << n; std::string s = o.str();", "std::stringstream s;", "std::stringstream"),
    "unordered_map": ("std::unordered_map<int, float> m; m.emplace(n, 1.0f);", "std::unordered_map<int, int> m;",
                      "std::unordered_map"),
    "iomanip": ("std::cout << std::setw(8) << std::setprecision(3) << std::fixed << 1.0 << std::endl;",
                "auto w = std::setw(8); (void)w;", "std::setw"),
    "mutex": ("std::mutex m; std::lock_guard<std::mutex> lock(m);", "std::mutex m;", "std::mutex"),
    "set": ("std::set<int> s{1, 2}; s.insert(n);", "std::set<int> s;", "std::set"),
    "queue": ("std::queue<int> q; q.push(n); std::priority_queue<float> p;", "std::queue<int> q;", "std::queue"),
}


def header_cell(header, use):
    return f"#include <{header}>\n__global__ void use_it() {{ {use} }}\n"


@pytest.mark.parametrize("header", sorted(WORKING))
def test_a_standard_header_compiles_with_no_flags(header):
    module = xcuda.compile(header_cell(header, WORKING[header]), arch="compute_80")
    assert ".entry" in module.ptx


def test_every_standard_header_at_once_compiles_for_an_sm_target():
    source = "".join(f"#include <{h}>\n" for h in WORKING) + "__global__ void uses() {\n" + \
        "\n".join("{ " + use + " }" for use in WORKING.values()) + "\n}\n"
    module = xcuda.compile(source, arch="sm_80")
    assert ".entry" in module.ptx


def host_and_kernel(header, host_use, device_use=""):
    return (f"#include <{header}>\n#include <chrono>\n"
            f"void report(int n) {{ {host_use} }}\n"
            f"__global__ void k(float* x) {{ x[0] = 1.0f; {device_use} }}\n")


@pytest.mark.parametrize("header", sorted(HOST_ONLY))
def test_a_host_only_library_header_used_by_host_code_compiles_with_that_code_set_aside(header):
    module = xcuda.compile(host_and_kernel(header, HOST_ONLY[header][0]), arch="compute_80")
    assert ".entry" in module.ptx
    assert 'host function "report" set aside' in module.log


@pytest.mark.parametrize("header", sorted(HOST_ONLY))
def test_a_host_library_name_in_device_code_is_refused_saying_why_at_its_line(header):
    with pytest.raises(xcuda.CompileError) as raised:
        xcuda.compile(host_and_kernel(header, HOST_ONLY[header][0], HOST_ONLY[header][1]), arch="compute_80")
    message = str(raised.value)
    assert f"{HOST_ONLY[header][2]} is host-only C++" in message, message
    assert "has no host C++ library" in message and "%%cuda_program" in message
    refusal = next(d for d in raised.value.diagnostics if "has no host C++ library" in d["message"])
    assert refusal["file"] == "" and refusal["line"] == 4, refusal  # the kernel's line, not the stand-in's
    assert "host functions that use it are set aside" in refusal["hint"]


def test_host_library_names_do_not_clash_with_a_cells_own_under_using_namespace_std():
    source = ("#include <iostream>\n#include <vector>\nusing namespace std;\n"
              "__device__ int left(int i) { return 2 * i + 1; }\n__device__ int hex(int v) { return v & 15; }\n"
              "__global__ void k(int* x) { x[0] = left(x[0]) + hex(x[1]); }\n"
              "void show(const vector<int>& v) { for (int i : v) cout << hex << i << endl; }\n")
    module = xcuda.compile(source, arch="compute_80")
    assert ".entry" in module.ptx


def test_a_host_only_header_with_no_host_code_compiles():
    module = xcuda.compile("#include <iostream>\n#include <vector>\n__global__ void k(float* x) { x[0] = 1.0f; }\n",
                           arch="compute_80")
    assert ".entry" in module.ptx


# --- values, against numpy ------------------------------------------------------------------------

VALUES = r'''
#include <cstdint>
#include <cfloat>
#include <climits>
#include <cmath>
#include <limits>
#include <algorithm>
#include <type_traits>
extern "C" __global__ void values(float* f, double* d, int64_t* i, uint8_t* b, uint* u)
{
    f[0] = FLT_MAX; f[1] = FLT_EPSILON; f[2] = FLT_MIN; f[3] = INFINITY; f[4] = NAN;
    f[5] = std::numeric_limits<float>::lowest(); f[6] = FLT_TRUE_MIN;
    d[0] = M_PI; d[1] = DBL_MAX; d[2] = DBL_EPSILON; d[3] = DBL_MIN; d[4] = M_E; d[5] = M_SQRT2; d[6] = HUGE_VAL;
    d[7] = std::numeric_limits<double>::epsilon();
    i[0] = INT_MAX; i[1] = std::numeric_limits<int>::max(); i[2] = std::min(3, 4); i[3] = std::max(3, 4);
    i[4] = sizeof(int64_t); i[5] = INT64_MIN; i[6] = LLONG_MAX; i[7] = UINT8_MAX; i[8] = INT_MIN;
    i[9] = std::numeric_limits<int16_t>::min(); i[10] = CHAR_BIT; i[11] = std::is_same<int64_t, long long>::value;
    i[12] = sizeof(uint8_t) + sizeof(uint16_t) * 10 + sizeof(uint) * 100; i[13] = SIZE_MAX == UINT64_MAX;
    b[0] = uint8_t(300); b[1] = std::numeric_limits<uint8_t>::max();
    u[0] = UINT_MAX; u[1] = std::min(7u, 9u);
}
'''

EXPECTED = {
    "f": [np.finfo(np.float32).max, np.finfo(np.float32).eps, np.finfo(np.float32).tiny, np.inf, np.nan,
          np.finfo(np.float32).min, np.finfo(np.float32).smallest_subnormal],
    "d": [np.pi, np.finfo(np.float64).max, np.finfo(np.float64).eps, np.finfo(np.float64).tiny, np.e, np.sqrt(2.0),
          np.inf, np.finfo(np.float64).eps],
    "i": [np.iinfo(np.int32).max, np.iinfo(np.int32).max, 3, 4, 8, np.iinfo(np.int64).min, np.iinfo(np.int64).max, 255,
          np.iinfo(np.int32).min, np.iinfo(np.int16).min, 8, 1, 1 + 20 + 400, 1],
    "b": [300 % 256, 255],
    "u": [np.iinfo(np.uint32).max, 7],
}

CHILD = r'''
import json, sys
import numpy as np
import xcuda
source = sys.argv[1]
m = xcuda.compile(source)
out = {"f": np.zeros(7, np.float32), "d": np.zeros(8), "i": np.zeros(14, np.int64), "b": np.zeros(2, np.uint8),
       "u": np.zeros(2, np.uint32)}
m.values[1, 1](out["f"], out["d"], out["i"], out["b"], out["u"])
print(json.dumps({"version": xcuda.nvrtc_version(), "values": {k: [repr(float(x)) if k in "fd" else int(x) for x in v]
                                                               for k, v in out.items()}}))
'''


def values_on_the_simulator(build_dir, env_changes):
    library = build_dir / "python" / "xcuda" / "libxcuda-sim.so"
    if not library.exists():
        pytest.fail(f"{library} was not built: it is a target of the main build (xcuda_sim_driver)")
    env = {k: v for k, v in os.environ.items() if k not in ("XCUDA_LIBCUDA", "XCUDA_NVRTC", "XCUDA_SIM_MAX_STEPS")}
    env.update(env_changes)
    env["XCUDA_DEVICE"] = "simulator"
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, "-c", CHILD, VALUES], capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-6000:]
    return json.loads(ran.stdout.strip().splitlines()[-1])


def check_values(values):
    for name, expected in EXPECTED.items():
        got = [float(x) for x in values[name]] if name in "fd" else values[name]
        if name in "fd":
            dtype = np.float32 if name == "f" else np.float64
            np.testing.assert_array_equal(np.array(got, dtype), np.array(expected, dtype), err_msg=name)
        else:
            assert got == [int(x) for x in expected], name


def test_the_standard_headers_values_match_numpys_on_the_simulator(build_dir, tmp_path):
    result = values_on_the_simulator(build_dir, {"XCUDA_CACHE_DIR": str(tmp_path)})
    assert result["version"][0] >= 13
    check_values(result["values"])


@needs_12
def test_the_standard_headers_values_match_numpys_under_nvrtc_12(build_dir, tmp_path):
    result = values_on_the_simulator(build_dir, {"XCUDA_NVRTC": str(NVRTC12), "XCUDA_CACHE_DIR": str(tmp_path)})
    assert result["version"][0] == 12
    check_values(result["values"])


NVRTC12_EVERY_HEADER = r'''
import json, sys
import xcuda
failed = {}
for header, use in json.loads(sys.argv[1]).items():
    try:
        xcuda.compile("#include <%s>\n__global__ void use_it() { %s }\n" % (header, use), arch="compute_75")
    except xcuda.CompileError as e:
        failed[header] = str(e)[:800]
print(json.dumps({"version": xcuda.nvrtc_version(), "failed": failed}))
'''


@needs_12
def test_every_standard_header_compiles_under_nvrtc_12(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("XCUDA_NVRTC",)}
    env.update({"XCUDA_NVRTC": str(NVRTC12), "XCUDA_CACHE_DIR": str(tmp_path)})
    ran = subprocess.run([sys.executable, "-c", NVRTC12_EVERY_HEADER, json.dumps(WORKING)], capture_output=True,
                         text=True, timeout=300, env=env)
    assert ran.returncode == 0, ran.stderr[-6000:]
    result = json.loads(ran.stdout.strip().splitlines()[-1])
    assert result["version"][0] == 12
    assert result["failed"] == {}


# --- a real header of the same name wins ------------------------------------------------------------

MARKED = "#include <cstdint>\n#ifndef USERS_OWN_CSTDINT\n#error the stand-in was taken\n#endif\n__global__ void k(my_byte* p) {}\n"


@pytest.mark.parametrize("how", ["include_dirs", "-I option", "--include-path option"])
def test_a_users_include_folder_header_wins_over_the_stand_in(tmp_path, how):
    (tmp_path / "cstdint").write_text("#pragma once\n#define USERS_OWN_CSTDINT 1\ntypedef unsigned char my_byte;\n")
    if how == "include_dirs":
        module = xcuda.compile(MARKED, arch="compute_80", include_dirs=[str(tmp_path)])
    elif how == "-I option":
        module = xcuda.compile(MARKED, arch="compute_80", options=["-I" + str(tmp_path)])
    else:
        module = xcuda.compile(MARKED, arch="compute_80", options=["--include-path=" + str(tmp_path)])
    assert ".entry" in module.ptx


def test_a_header_cell_of_the_same_name_wins_over_the_stand_in():
    own = "#pragma once\n#define USERS_OWN_CSTDINT 1\ntypedef unsigned char my_byte;\n"
    module = xcuda.compile(MARKED, arch="compute_80", headers={"cstdint": own})
    assert ".entry" in module.ptx


def test_a_stand_in_is_taken_when_the_include_folder_has_no_header_of_that_name(tmp_path):
    (tmp_path / "other.h").write_text("#pragma once\n")
    with pytest.raises(xcuda.CompileError, match="the stand-in was taken"):
        xcuda.compile(MARKED, arch="compute_80", include_dirs=[str(tmp_path)])


# --- parameter types ---------------------------------------------------------------------------------

def test_parameters_typed_with_standard_header_names_get_their_dtypes():
    module = xcuda.compile(r'''
#include <cstdint>
#include <cstddef>
extern "C" __global__ void k(uint8_t* a, const int64_t* b, std::int32_t* c, std::uint16_t* d, uint e, ushort f,
                             ulong g, std::size_t h, intptr_t i, uint_least8_t j, intmax_t k2, std::ptrdiff_t l) {}
''', arch="compute_80")
    dtypes = [p["dtype"] for p in module.k.parameters]
    assert dtypes == [np.uint8, np.int64, np.int32, np.uint16, np.uint32, np.uint16, np.uint64, np.uint64, np.int64,
                      np.uint8, np.int64, np.int64]


def test_a_tensor_map_parameter_from_cuda_h_is_128_bytes():
    module = xcuda.compile("#include <cuda.h>\n__global__ void k(const __grid_constant__ CUtensorMap map) {}\n",
                           arch="sm_90")
    (param,) = module.k.parameters
    assert param["size"] == 128


def test_cub_compiles_beside_the_standard_headers():
    # std:: names cuda::std by a using-directive: CCCL's own headers (CUB here) must not find it ambiguous.
    module = xcuda.compile(r'''
#include <cstdint>
#include <algorithm>
#include <limits>
#include <cub/block/block_reduce.cuh>
extern "C" __global__ void block_sum(const int* in, int* out)
{
    using reduce = cub::BlockReduce<int, 128>;
    __shared__ typename reduce::TempStorage storage;
    int total = reduce(storage).Sum(in[threadIdx.x]);
    if (threadIdx.x == 0) out[0] = std::max(total, std::numeric_limits<int>::min());
}
''', arch="compute_80")
    assert ".entry block_sum" in module.ptx
