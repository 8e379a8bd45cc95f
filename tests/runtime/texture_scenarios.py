"""Scenarios of CUDA arrays, texture objects and surface objects against the fake driver (tests/fake_driver,
fake_textures.cpp), each run in a process of its own by tests/runtime/test_textures.py.

The fake keeps arrays as host memory and texture and surface objects as numbered handles with what they were
made with (xcuda_fake_texture_info), counts the live ones (xcuda_fake_texture_counter), and its known kernel
`read_handles(cudaTextureObject_t t, cudaSurfaceObject_t s, unsigned long long* out)` writes the handles it was
given and whether each is live, so the arguments a launch passed can be seen.

    python3 tests/runtime/texture_scenarios.py NAME     # exits 0 when the scenario holds
"""
import ctypes
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import xcuda  # noqa: E402
from thread_runs import run_in_threads  # noqa: E402  (tests/thread_runs.py)

READ_HANDLES = r"""
extern "C" __global__ void read_handles(cudaTextureObject_t t, cudaSurfaceObject_t s, unsigned long long* out)
{ out[0] = t; out[1] = s; }
"""
# CUDA_TEXTURE_DESC's values (cuda.h): filter modes, flags, address modes.
POINT, LINEAR = 0, 1
READ_AS_INTEGER, NORMALIZED_COORDINATES = 1, 2
WRAP, CLAMP, MIRROR, BORDER = 0, 1, 2, 3


def library():
    lib = ctypes.CDLL(os.environ["XCUDA_LIBCUDA"])
    lib.xcuda_fake_texture_counter.restype = ctypes.c_long
    lib.xcuda_fake_texture_info.argtypes = [ctypes.c_ulonglong, ctypes.POINTER(ctypes.c_int)]
    return lib


def counter(name):
    value = library().xcuda_fake_texture_counter(name.encode())
    assert value >= 0, name
    return value


def info(texture):
    """(filter, flags, address x, y, z, border[0]) the fake was given for a texture."""
    out = (ctypes.c_int * 6)()
    assert library().xcuda_fake_texture_info(texture.handle, out) == 0, "not a live texture"
    return tuple(out)


def expect(error_type, *fragments):
    class Expect:
        def __enter__(self):
            return self

        def __exit__(self, kind, value, traceback):
            assert kind is not None, f"expected {error_type.__name__} with {fragments}"
            assert issubclass(kind, error_type), f"{kind.__name__}: {value}"
            for fragment in fragments:
                assert fragment in str(value), f"{fragment!r} not in {value}"
            return True

    return Expect()


def creation_passes_the_settings_to_the_driver():
    image = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = xcuda.texture(image, filter="linear", address=("clamp", "border"), normalized=True, border=(5,))
    assert info(t) == (LINEAR, NORMALIZED_COORDINATES, CLAMP, BORDER, BORDER, 5)
    assert t.filter == "linear" and t.normalized and t.read == "element"
    assert t.address == ("clamp", "border", "border")
    assert t.array.shape == (3, 4) and t.array.dtype == np.float32 and t.array.channels == 1
    assert "filter='linear', address=('clamp', 'border'), normalized=True" in repr(t), repr(t)
    # Integers read as elements ask the driver not to promote them; read='normalized' does not.
    pixels = np.zeros((2, 5, 4), dtype=np.uint8)
    assert info(xcuda.texture(pixels, channels=4))[:2] == (POINT, READ_AS_INTEGER)
    assert info(xcuda.texture(pixels, channels=4, read="normalized", filter="linear"))[:2] == (LINEAR, 0)
    wrapped = xcuda.texture(np.ones(8, np.float16), address="wrap", normalized=True)
    assert info(wrapped) == (POINT, NORMALIZED_COORDINATES, WRAP, WRAP, WRAP, 0)


def arguments_take_the_objects_and_integer_handles():
    m = xcuda.compile(READ_HANDLES, name="read_handles_module")
    parameter = m.read_handles.parameters[0]
    assert parameter["dtype"] == np.uint64 and parameter["object"] == "texture", parameter
    assert m.read_handles.parameters[1]["object"] == "surface"
    t = xcuda.texture(np.zeros((4, 4), np.float32))
    s = xcuda.surface(xcuda.cuda_array((4, 4), np.float32, surface=True))
    out = np.zeros(4, np.uint64)
    m.read_handles[1, 1](t, s, out)
    assert out.tolist() == [t.handle, s.handle, 1, 1], out
    out[:] = 0
    m.read_handles[1, 1](t.handle, int(s), out)  # the bare 64-bit handles
    assert out.tolist() == [t.handle, s.handle, 1, 1], out
    m.read_handles[1, 1](np.uint64(t.handle), s, out)
    assert out[0] == t.handle
    with expect(TypeError, "parameter 0 't' (cudaTextureObject_t) takes a texture object", "not a surface object"):
        m.read_handles[1, 1](s, s, out)
    with expect(TypeError, "parameter 1 's' (cudaSurfaceObject_t) takes a surface object", "not a texture object"):
        m.read_handles[1, 1](t, t, out)
    with expect(TypeError, "takes an xcuda texture object", "or its 64-bit integer handle; got float"):
        m.read_handles[1, 1](1.5, s, out)
    with expect(TypeError, "got numpy.ndarray"):
        m.read_handles[1, 1](np.zeros((4, 4), np.float32), s, out)
    with expect(ValueError, "parameter 0 't'"):
        m.read_handles[1, 1](-1, s, out)
    with expect(TypeError, "parameter 0 't' (cudaTextureObject_t): a launch with a texture object cannot be replayed"):
        m.read_handles[1, 1].replay_bundle(t, s, out)
    m.read_handles[1, 1](t, s, out)  # the session goes on
    assert out[2] == 1


def copy_back_returns_what_was_copied_in():
    volume = (np.arange(2 * 3 * 5 * 4) % 251).astype(np.uint8).reshape(2, 3, 5, 4)
    t = xcuda.texture(volume, channels=4)
    assert t.array.shape == (2, 3, 5, 4) and t.array.nbytes == volume.nbytes
    assert np.array_equal(t.array.copy_to_host(), volume)
    a = xcuda.cuda_array((6, 7), np.int16, channels=2, surface=True)
    data = np.random.default_rng(1).integers(-300, 300, size=(6, 7, 2)).astype(np.int16)
    a.copy_from(data)
    assert np.array_equal(a.copy_to_host(), data)
    d = xcuda.to_device(data[::-1].copy())
    a.copy_from(d)  # from device memory
    assert np.array_equal(a.copy_to_host(), data[::-1])
    from_device = xcuda.texture(xcuda.to_device(np.linspace(0, 1, 10, dtype=np.float32)))
    assert np.array_equal(from_device.array.copy_to_host(), np.linspace(0, 1, 10, dtype=np.float32))
    layered = xcuda.cuda_array((3, 4, 5), np.float32, layered=True)
    assert layered.layered and layered.shape == (3, 4, 5)
    with expect(ValueError, "a copy of 2 bytes into a CUDA array (6, 7) int16, 2 channels, surface of 168 bytes"):
        a.copy_from(np.zeros(1, np.int32))


def inventory_lists_them_and_the_session_frees_them():
    t = xcuda.texture(np.zeros((8, 8), np.float32), filter="linear")
    array = xcuda.cuda_array((4,), np.uint8, channels=4, surface=True)
    s = xcuda.surface(array)
    stats = xcuda.session_stats()
    assert (stats["cuda_arrays"], stats["textures"], stats["surfaces"]) == (2, 1, 1), stats
    assert stats["cuda_array_bytes"] == 8 * 8 * 4 + 4 * 4, stats
    assert (counter("cuda_arrays"), counter("textures"), counter("surfaces")) == (2, 1, 1)
    status = repr(xcuda.status())
    assert "CUDA arrays, textures and surfaces" in status
    assert "texture over the CUDA array (8, 8) float32 (filter='linear'" in status, status
    assert "surface over the CUDA array (4,) uint8, 4 channels, surface" in status, status
    del t
    assert xcuda.session_stats()["textures"] == 0 and counter("textures") == 0
    assert xcuda.session_stats()["cuda_arrays"] == 1  # the texture's own array went with it; the surface keeps its
    xcuda._shutdown()  # the session closes: what is left is freed before the context goes
    assert (counter("cuda_arrays"), counter("textures"), counter("surfaces")) == (0, 0, 0)
    with expect(xcuda.SessionClosedError, "this surface object belonged to a CUDA session that was closed"):
        s.handle


def refusals_say_what_to_do_and_the_session_goes_on():
    arrays = counter("cuda_arrays")
    with expect(ValueError, "holds float32, float16 or 8-, 16- or 32-bit integers, not float64", ".astype(numpy.float32)"):
        xcuda.texture(np.zeros((4, 4)))
    with expect(ValueError, "1, 2 or 4 channels, not 3", "pad the last axis to 4"):
        xcuda.texture(np.zeros((4, 4, 3), np.float32), channels=3)
    with expect(ValueError, "its shape (4, 4) does not end in 2"):
        xcuda.texture(np.zeros((4, 4), np.float32), channels=2)
    with expect(ValueError, "1, 2 or 3 dimensions"):
        xcuda.texture(np.zeros((2, 2, 2, 2), np.float32))
    with expect(ValueError, "filter='linear' needs a texture that returns floats", "int32"):
        xcuda.texture(np.zeros((4, 4), np.int32), filter="linear")
    with expect(ValueError, "read='normalized' promotes 8- and 16-bit integers"):
        xcuda.texture(np.zeros(4, np.uint32), read="normalized")
    with expect(ValueError, "address='wrap' needs normalized=True"):
        xcuda.texture(np.zeros((4, 4), np.float32), address="wrap")
    with expect(ValueError, "address='mirror' needs normalized=True"):
        xcuda.texture(np.zeros((4, 4), np.float32), address=("clamp", "mirror"))
    with expect(ValueError, "filter='cubic' is not a texture filter"):
        xcuda.texture(np.zeros(4, np.float32), filter="cubic")
    with expect(ValueError, "address='repeat' is not an address mode"):
        xcuda.texture(np.zeros(4, np.float32), address="repeat")
    with expect(ValueError, "read='float' is not a read mode"):
        xcuda.texture(np.zeros(4, np.float32), read="float")
    with expect(ValueError, "has an extent 0"):
        xcuda.cuda_array((0, 4), np.float32)
    with expect(ValueError, "has a negative extent"):
        xcuda.cuda_array((4, -4), np.float32)
    with expect(ValueError, "is larger than any device holds"):
        xcuda.cuda_array((2 ** 30, 2 ** 30, 2 ** 30), np.float32)
    assert counter("cuda_arrays") == arrays  # each refusal came before anything was made
    plain = xcuda.cuda_array((4, 4), np.float32)
    with xcuda.graph():
        with expect(xcuda.GraphCaptureError, "xcuda.texture of a numpy or device array", "before the `with xcuda.graph()`"):
            xcuda.texture(np.ones(4, np.float32))
        with expect(xcuda.GraphCaptureError, "CudaArray.copy_to_host cannot be captured"):
            plain.copy_to_host()
    with expect(ValueError, "a surface needs a CUDA array made for surfaces", "surface=True"):
        xcuda.surface(plain)
    t = xcuda.texture(np.ones((2, 2), np.float32))
    assert np.array_equal(t.array.copy_to_host(), np.ones((2, 2), np.float32))


def threads_make_and_free_textures_at_once():
    m = xcuda.compile(READ_HANDLES, name="read_handles_threads")
    made = counter("texture_creations")

    def work(index):
        for k in range(40):
            image = np.full((4, 8), index * 100 + k, np.float32)
            t = xcuda.texture(image, filter="linear" if k % 2 else "point")
            s = xcuda.surface(xcuda.cuda_array((3, 5), np.int32, surface=True))
            out = np.zeros(4, np.uint64)
            m.read_handles[1, 1](t, s, out)
            assert out.tolist() == [t.handle, s.handle, 1, 1], (index, k, out)
            assert t.array.copy_to_host()[0, 0] == index * 100 + k
            del t, s

    run_in_threads(work, 4)
    assert counter("texture_creations") - made == 160
    assert (counter("cuda_arrays"), counter("textures"), counter("surfaces")) == (0, 0, 0)
    assert xcuda.session_stats()["cuda_arrays"] == 0


SCENARIOS = {f.__name__: f for f in [
    creation_passes_the_settings_to_the_driver,
    arguments_take_the_objects_and_integer_handles,
    copy_back_returns_what_was_copied_in,
    inventory_lists_them_and_the_session_frees_them,
    refusals_say_what_to_do_and_the_session_goes_on,
    threads_make_and_free_textures_at_once,
]}

if __name__ == "__main__":
    name = sys.argv[1]
    SCENARIOS[name]()
    print(f"scenario held: {name}")
