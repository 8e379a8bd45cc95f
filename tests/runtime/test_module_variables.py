"""__constant__ and __device__ variables of a cell from Python: module.get_global(name) and module.globals
(issue 25, item 1). Typed by their declaration (the signature reader's types), read with get(), written
with set() after checks of dtype and size, passed to kernels as device memory.

Without a driver: what the declaration says (dtype, shape, size, symbol) and the refusals. Marked gpu:
reads, writes and launches, checked against numpy; they also run on the PTX simulator in CI
(tests/simulator/test_round2_on_the_simulator.py).
"""

import numpy as np
import pytest

import xcuda
from thread_runs import run_in_threads  # tests/thread_runs.py

SOURCE = r"""
#define KERNEL_RADIUS 8
#define KERNEL_LENGTH (2 * KERNEL_RADIUS + 1)
struct Params { float scale; int offset; double bias; };
typedef unsigned int uint;

__constant__ float c_Kernel[KERNEL_LENGTH];
__constant__ Params c_params;
__constant__ float2 c_pairs[2][3];
__device__ uint d_counter;
__device__ int d_table[4] = {1, 2, 3, 4};
__device__ float* d_where;
namespace filters { __constant__ int c_taps = 3; }

__device__ float helper(float x) { int inside = 2; return x * c_Kernel[0] * inside; }

extern "C" __global__ void convolve(const float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int k = -KERNEL_RADIUS; k <= KERNEL_RADIUS; ++k)
    {
        int j = i + k;
        if (j >= 0 && j < n) s += in[j] * c_Kernel[KERNEL_RADIUS - k];
    }
    out[i] = s * c_params.scale + c_params.offset + (float)c_params.bias;
}
extern "C" __global__ void count(int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&d_counter, 1u);
}
extern "C" __global__ void copy_table(int* out) { out[threadIdx.x] = d_table[threadIdx.x] + filters::c_taps; }
extern "C" __global__ void sum_pairs(float* out)
{
    float s = 0.0f;
    for (int a = 0; a < 2; ++a) for (int b = 0; b < 3; ++b) s += c_pairs[a][b].x * 10.0f + c_pairs[a][b].y;
    out[0] = s;
}
extern "C" __global__ void add_one(int* x, int n) { int i = threadIdx.x; if (i < n) x[i] += 1; }
"""


@pytest.fixture(scope="module")
def mod():
    return xcuda.compile(SOURCE, name="module_variables")


def test_variables_are_typed_by_their_declaration(mod):
    k = mod.get_global("c_Kernel")
    assert k.dtype == np.float32 and k.shape == (17,) and k.nbytes == 68 and k.space == "__constant__"
    p = mod.globals.c_params
    assert p.shape == () and p.nbytes == 16 and p.dtype.names == ("scale", "offset", "bias")
    assert p.dtype.fields["bias"][1] == 8
    pairs = mod.get_global("c_pairs")
    assert pairs.shape == (2, 3) and pairs.dtype.itemsize == 8 and pairs.nbytes == 48
    counter = mod.get_global("d_counter")
    assert counter.dtype == np.uint32 and counter.space == "__device__" and counter.type == "uint"
    assert mod.get_global("d_where").dtype == np.uint64  # a pointer: its address
    taps = mod.get_global("filters::c_taps")
    assert taps.symbol == "_ZN7filters6c_tapsE" and taps.name == "c_taps"
    assert mod.get_global("c_taps").qualified_name == "filters::c_taps"
    assert sorted(mod.globals) == sorted(["c_Kernel", "c_params", "c_pairs", "d_counter", "d_table", "d_where",
                                          "filters::c_taps"])
    assert "c_Kernel" in mod.globals and "helper" not in mod.globals and "inside" not in mod.globals
    assert "c_Kernel" in repr(k) and "float32" in repr(k)
    # A cell bound without --name: its kernels reach the variables through their module.
    assert mod.convolve.module.get_global("c_Kernel").nbytes == 68


def test_an_unknown_name_lists_the_variables(mod):
    with pytest.raises(KeyError, match="no __constant__ or __device__ variable 'c_kernel'.*c_Kernel, c_params"):
        mod.get_global("c_kernel")
    with pytest.raises(AttributeError, match="c_Kernel"):
        mod.globals.nothing
    with pytest.raises(KeyError, match=r"\(it has none\)"):
        xcuda.compile('extern "C" __global__ void k() {}', name="no_variables").get_global("x")


def test_a_type_the_reader_cannot_size_is_refused_with_the_reason():
    # A class template's instance is laid out (templates by value); an extent computed by a function is
    # not, and is refused naming the variable and what to write instead.
    m = xcuda.compile(r"""
template <int N> struct Box { float v[N]; };
__constant__ Box<4> c_box;
__host__ __device__ constexpr int count() { return 4; }
__constant__ float c_sized[count()];
extern "C" __global__ void k(float* out) { out[0] = c_box.v[0] + c_sized[0]; }
""", name="unsized_variable")
    box = m.get_global("c_box")
    assert box.dtype == np.dtype([("v", "<f4", (4,))]) and box.shape == ()
    with pytest.raises(xcuda.SignatureError, match=r"c_sized.*array extent.*cannot work out"):
        m.get_global("c_sized")


def test_a_value_of_the_wrong_size_or_dtype_is_refused_before_any_gpu_work(mod):
    k = mod.get_global("c_Kernel")
    with pytest.raises(ValueError, match=r"float32\(17,\) \(68 bytes\).*16 elements \(64 bytes\)"):
        k.set(np.zeros(16, np.float32))
    with pytest.raises(TypeError, match=r"float64.*\(136 bytes\).*astype\(numpy.float32\)"):
        k.set(np.zeros(17))
    with pytest.raises(ValueError, match="2 elements"):
        mod.globals.d_counter = [1, 2]


# ---- on a GPU (and on the PTX simulator) ----

@pytest.mark.gpu
def test_a_constant_filter_set_from_numpy_is_what_the_kernel_reads(mod):
    taps = np.random.default_rng(1).random(17).astype(np.float32)
    mod.get_global("c_Kernel").set(taps)
    mod.globals.c_params = (2.0, 3, 0.25)
    assert np.array_equal(mod.get_global("c_Kernel").get(), taps)
    params = mod.globals.c_params.get()
    assert params["scale"] == 2.0 and params["offset"] == 3 and params["bias"] == 0.25
    n = 1000
    signal = np.random.default_rng(2).random(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    mod.convolve[(n + 127) // 128, 128](signal, out, n)
    padded = np.concatenate([np.zeros(8, np.float32), signal, np.zeros(8, np.float32)])
    expected = np.array([np.dot(padded[i:i + 17], taps[::-1]) for i in range(n)], dtype=np.float64)
    assert np.allclose(out, expected * 2.0 + 3.25, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
def test_a_device_variable_written_by_kernels_reads_back(mod):
    counter = mod.get_global("d_counter")
    counter.set(0)
    mod.count[10, 100](1000)
    mod.count[1, 64](50)
    assert counter.get() == 1050 and np.asarray(counter) == 1050
    assert list(mod.get_global("d_table").get()) == [1, 2, 3, 4]  # the initializer
    out = np.zeros(4, np.int32)
    mod.copy_table[1, 4](out)
    assert list(out) == [4, 5, 6, 7]  # + filters::c_taps = 3
    mod.globals["filters::c_taps"] = 10
    mod.copy_table[1, 4](out)
    assert list(out) == [11, 12, 13, 14]


@pytest.mark.gpu
def test_a_multidimensional_array_of_vector_types(mod):
    values = np.zeros((2, 3), dtype=mod.get_global("c_pairs").dtype)
    values["x"] = np.arange(6).reshape(2, 3)
    values["y"] = 1
    mod.get_global("c_pairs").set(values)
    out = np.zeros(1, np.float32)
    mod.sum_pairs[1, 1](out)
    assert out[0] == 10 * 15 + 6


@pytest.mark.gpu
def test_a_variable_passes_to_a_pointer_parameter_as_device_memory(mod):
    table = mod.get_global("d_table")
    table.set(np.array([10, 20, 30, 40], np.int32))
    assert table.__cuda_array_interface__["data"][0] == table.ptr and table.ptr != 0
    mod.add_one[1, 4](table, 4)
    assert list(table.get()) == [11, 21, 31, 41]


@pytest.mark.gpu
def test_sets_from_several_threads_each_land_whole(mod):
    table = mod.get_global("d_table")
    seen = []

    def run(k):
        for _ in range(20):
            table.set(np.full(4, k, np.int32))
            value = table.get()
            assert len(set(value.tolist())) == 1, value  # never a mix of two writes
            seen.append(int(value[0]))

    run_in_threads(run, 6)
    assert set(seen) <= set(range(6)) and len(seen) == 120


@pytest.mark.gpu
def test_a_value_set_survives_a_new_session(mod):
    # xcuda._shutdown closes the session (every module is unloaded); the next use loads the module anew
    # in a new context, and the value set from the host is written there again.
    mod.get_global("c_Kernel").set(np.arange(17, dtype=np.float32))
    xcuda._shutdown()
    assert np.array_equal(mod.get_global("c_Kernel").get(), np.arange(17, dtype=np.float32))


@pytest.mark.multigpu
def test_a_set_writes_every_device_the_module_is_loaded_on(mod):
    taps = np.arange(17, dtype=np.float32)
    out = np.zeros(4, np.int32)
    for device in (0, 1):
        xcuda.set_device(device)
        mod.copy_table[1, 4](out)  # loads the module on both devices
    xcuda.set_device(0)
    mod.get_global("c_Kernel").set(taps)
    for device in (0, 1):
        xcuda.set_device(device)
        assert np.array_equal(mod.get_global("c_Kernel").get(), taps), device
        assert mod.get_global("c_Kernel").ptr != 0
    xcuda.set_device(0)


RECOVER_CHILD = r"""
import os, sys
import numpy as np
from IPython.core.interactiveshell import InteractiveShell
import xcuda
from xcuda import recovery
os.environ[recovery.RESTORE_VARIABLE] = sys.argv[1]
shell = InteractiveShell.instance()
restored = recovery.restore_if_requested(shell)
assert restored and not restored["failed"], restored
m = shell.user_ns["recovered"]
assert list(m.globals.c_Kernel.get()) == list(np.arange(17, dtype=np.float32) * 2), m.globals.c_Kernel.get()
out = np.zeros(4, np.int32)
m.copy_table[1, 4](out)
assert list(out) == [1 + 9, 2 + 9, 3 + 9, 4 + 9], out  # filters::c_taps = 9 came back; d_table's initializer
print("restored values held")
"""


@pytest.mark.gpu
def test_values_set_are_carried_by_a_process_replacement(shell, tmp_path, build_dir):
    # What %cuda_recover carries to the new process: the module is rebuilt there from its recipe and the
    # values the host wrote are written again at its first load.
    import os
    import pickle
    import subprocess
    import sys

    from xcuda import recovery

    shell.user_ns.clear()
    shell.run_cell_magic("cuda", "--name recovered", SOURCE)
    m = shell.user_ns["recovered"]
    m.globals.c_Kernel = np.arange(17, dtype=np.float32) * 2
    m.globals["filters::c_taps"] = 9
    state = recovery.collect(shell)
    assert set(state["global_values"]["recovered"]) == {"c_Kernel", "_ZN7filters6c_tapsE"}
    path = recovery.write_private(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
    script = tmp_path / "child.py"
    script.write_text(RECOVER_CHILD)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, str(script), path], capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode == 0 and "restored values held" in ran.stdout, ran.stdout[-2000:] + ran.stderr[-4000:]


STATIC_VARIABLES = r"""
static __device__ int s_plain[3];
namespace ns { static __device__ int s_hidden; __device__ double d_value; }
extern "C" { __device__ int c_linked; }
extern "C" __global__ void read_all(int* out)
{
    out[0] = s_plain[1]; out[1] = ns::s_hidden; out[2] = (int)ns::d_value; out[3] = c_linked;
}
"""


@pytest.mark.gpu
def test_static_namespace_and_extern_c_variables_are_found_in_the_binary():
    m = xcuda.compile(STATIC_VARIABLES, name="static_variables")
    m.get_global("s_plain").set([1, 2, 3])
    m.get_global("ns::s_hidden").set(7)  # internal linkage in a namespace: _ZN<_INTERNAL_...>2ns8s_hiddenE
    m.get_global("d_value").set(9.0)
    m.globals.c_linked = 11
    out = np.zeros(4, np.int32)
    m.read_all[1, 1](out)
    assert list(out) == [2, 7, 9, 11]


def test_a_variable_asked_for_as_a_kernel_says_how_to_reach_it(mod):
    with pytest.raises(AttributeError, match=r"no kernel 'c_Kernel'; 'c_Kernel' is a __constant__ variable: "
                                             r"module.get_global\('c_Kernel'\) or module.globals.c_Kernel"):
        mod.c_Kernel
    with pytest.raises(KeyError, match="'d_counter' is a __device__ variable"):
        mod["d_counter"]
    with pytest.raises(AttributeError) as plain:
        mod.no_such_thing
    assert str(plain.value).endswith("has no kernel 'no_such_thing'")
