"""CUDA arrays, texture objects and surface objects (issue 45 item 2; docs/textures.md).

- against the fake driver (tests/fake_driver/fake_textures.cpp): every scenario of texture_scenarios.py in a
  child process (creation and the settings the driver is given, arguments, copy-back, the inventory and
  freeing, refusals, several threads at once);
- without a driver: how the signature reader types texture and surface parameters;
- marked gpu: real texture programs (the CUDA samples simpleTexture and simpleSurfaceWrite, a PMPP-style
  convolution through a texture, 3D, layered, half and 2-channel textures) against numpy references, linear
  filtering computed as the Programming Guide defines it (9-bit fixed-point weights) with the corner rounding an
  H100 showed (tests/gpu_host/texture_filter_probe.py; linear2d below). They run on the PTX
  simulator in CI (tests/simulator/test_textures_on_the_simulator.py) and on a GPU where one is lent.
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xcuda

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "texture_scenarios.py"
sys.path.insert(0, str(HERE))
import texture_scenarios  # noqa: E402


@pytest.mark.parametrize("name", sorted(texture_scenarios.SCENARIOS))
def test_scenario_against_the_fake_driver(name, build_dir):
    library = build_dir / "lib" / "libxcuda_fake_cuda.so"
    assert library.exists(), f"{library} was not built: configure with -DXCUDA_BUILD_TESTS=ON"
    env = dict(os.environ)
    env.pop("XCUDA_DEVICE", None)
    env["XCUDA_LIBCUDA"] = str(library)
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, str(SCRIPT), name], capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode == 0, f"scenario {name} failed:\n{ran.stdout[-3000:]}\n{ran.stderr[-6000:]}"
    assert f"scenario held: {name}" in ran.stdout


# ---- no driver needed ----

def test_texture_and_surface_parameters_are_64_bit_handles_with_a_dtype():
    m = xcuda.compile(r"""
#include <cuda.h>
typedef cudaTextureObject_t Tex;
extern "C" __global__ void k(cudaTextureObject_t a, const cudaSurfaceObject_t b, Tex c, CUtexObject d,
                             cudaTextureObject_t* e, unsigned long long f) {}
""", name="texture_parameter_types")
    p = m.k.parameters
    assert [q["object"] for q in p] == ["texture", "surface", "texture", "texture", None, None]
    assert all(q["dtype"] == np.uint64 and q["size"] == 8 for q in p[:4] + p[5:])
    assert p[4]["pointer"] and p[4]["dtype"] == np.uint64  # a pointer to handles stays a pointer


# ---- on a GPU (and on the simulator) ----

def weight(fraction):
    """The Guide's linear-filtering weight in 256ths: the fraction in 9-bit fixed point (8 bits after the
    point), rounded to nearest with ties up, as an H100 rounds it."""
    return np.floor(np.asarray(fraction, np.float64) * 256 + 0.5)


def corners(a, b):
    """The four corner weights of 2D linear filtering in 256ths from the 9-bit weights a, b (0..256): each
    product rounded to whole 256ths again, ties up on the diagonal corners and down off it, so they sum to
    256. Measured on an H100, 2026-12-07: 16,384 fetches, every one equal (tests/gpu_host/texture_filter_probe.py)."""
    up = lambda p: np.floor(p / 256 + 0.5)  # noqa: E731
    down = lambda p: np.ceil(p / 256 - 0.5)  # noqa: E731
    return up((256 - a) * (256 - b)), down(a * (256 - b)), down((256 - a) * b), up(a * b)


def address(index, n, mode):
    if mode == "wrap":
        return np.mod(index, n)
    if mode == "mirror":
        m = np.mod(index, 2 * n)
        return np.where(m < n, m, 2 * n - 1 - m)
    return np.clip(index, 0, n - 1)


def linear2d(image, x, y, mode="clamp", normalized=False):
    """tex2D with linear filtering of a (h, w) image at coordinates x, y, as the Guide writes it."""
    h, w = image.shape
    x = np.asarray(x, np.float64) * (w if normalized else 1)
    y = np.asarray(y, np.float64) * (h if normalized else 1)
    i, j = np.floor(x - 0.5).astype(np.int64), np.floor(y - 0.5).astype(np.int64)
    w00, w10, w01, w11 = corners(weight(x - 0.5 - i), weight(y - 0.5 - j))

    def t(ii, jj):
        return image[address(jj, h, mode), address(ii, w, mode)].astype(np.float64)
    return (w00 * t(i, j) + w10 * t(i + 1, j) + w01 * t(i, j + 1) + w11 * t(i + 1, j + 1)) / 256


def rotation_coordinates(width, height, theta):
    """simpleTexture's transformKernel coordinates for every output pixel (float32, as the kernel computes them)."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    u = x - np.float32(width / 2)
    v = y - np.float32(height / 2)
    c, s = np.float32(np.cos(theta)), np.float32(np.sin(theta))
    tu = (u * c - v * s) / np.float32(width)
    tv = (v * c + u * s) / np.float32(height)
    return tu + np.float32(0.5), tv + np.float32(0.5)


SIMPLE_TEXTURE = r"""
// CUDA samples, Samples/0_Introduction/simpleTexture/simpleTexture.cu (BSD-3-Clause, NVIDIA): the kernel as published.
__global__ void transformKernel(float *outputData, int width, int height, float theta, cudaTextureObject_t tex)
{
    // calculate normalized texture coordinates
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;

    float u = (float)x - (float)width / 2;
    float v = (float)y - (float)height / 2;
    float tu = u * cosf(theta) - v * sinf(theta);
    float tv = v * cosf(theta) + u * sinf(theta);

    tu /= (float)width;
    tv /= (float)height;

    // read from texture and write to global memory
    outputData[y * width + x] = tex2D<float>(tex, tu + 0.5f, tv + 0.5f);
}
"""


@pytest.mark.gpu
def test_simple_texture_rotates_an_image_as_bilinear_interpolation_with_9_bit_weights_does():
    m = xcuda.compile(SIMPLE_TEXTURE, name="simple_texture")
    width, height, theta = 64, 48, 0.5
    rng = np.random.default_rng(7)
    image = rng.random((height, width), dtype=np.float32)
    tex = xcuda.texture(image, filter="linear", address="wrap", normalized=True)
    out = np.zeros_like(image)
    m.transformKernel[(width // 8, height // 8), (8, 8)](out, width, height, np.float32(theta), tex)
    tu, tv = rotation_coordinates(width, height, theta)
    expected = linear2d(image, tu, tv, "wrap", normalized=True)
    # sinf/cosf of the device may differ from numpy's in the last place, which can move a weight by 1/256.
    np.testing.assert_allclose(out, expected, atol=2.0 / 256)
    assert np.mean(np.abs(out - expected)) < 1e-4


SIMPLE_SURFACE_WRITE = r"""
// CUDA samples, Samples/0_Introduction/simpleSurfaceWrite/simpleSurfaceWrite.cu (BSD-3-Clause, NVIDIA): the kernels.
__global__ void surfaceWriteKernel(float *gIData, int width, int height, cudaSurfaceObject_t outputSurface)
{
    // calculate surface coordinates
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;

    // read from global memory and write to cuarray (via surface reference)
    surf2Dwrite(gIData[y * width + x], outputSurface, x * 4, y, cudaBoundaryModeTrap);
}

__global__ void transformKernel(float *gOData, int width, int height, float theta, cudaTextureObject_t tex)
{
    // calculate normalized texture coordinates
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;

    float u = x / (float)width;
    float v = y / (float)height;

    // transform coordinates
    u -= 0.5f;
    v -= 0.5f;
    float tu = u * cosf(theta) - v * sinf(theta) + 0.5f;
    float tv = v * cosf(theta) + u * sinf(theta) + 0.5f;

    // read from texture and write to global memory
    gOData[y * width + x] = tex2D<float>(tex, tu, tv);
}
"""


@pytest.mark.gpu
def test_simple_surface_write_fills_an_array_through_a_surface_that_a_texture_then_reads():
    m = xcuda.compile(SIMPLE_SURFACE_WRITE, name="simple_surface_write")
    width, height, theta = 32, 32, 0.5
    data = np.random.default_rng(3).random((height, width), dtype=np.float32)
    array = xcuda.cuda_array((height, width), np.float32, surface=True)
    m.surfaceWriteKernel[(4, 4), (8, 8)](data, width, height, xcuda.surface(array))
    assert np.array_equal(array.copy_to_host(), data)
    tex = xcuda.texture(array, filter="linear", address="wrap", normalized=True)
    out = np.zeros_like(data)
    m.transformKernel[(4, 4), (8, 8)](out, width, height, np.float32(theta), tex)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    u, v = x / np.float32(width) - np.float32(0.5), y / np.float32(height) - np.float32(0.5)
    c, s = np.float32(np.cos(theta)), np.float32(np.sin(theta))
    expected = linear2d(data, u * c - v * s + np.float32(0.5), v * c + u * s + np.float32(0.5), "wrap", normalized=True)
    np.testing.assert_allclose(out, expected, atol=2.0 / 256)


CONVOLUTION = r"""
// The shape of PMPP's 2D convolution (Hwu, Kirk, El Hajj, 4th ed., ch. 7) with its input read through a
// texture: the texture's clamp mode gives the ghost cells the edge's values instead of the book's zeros.
#define MASK_RADIUS 2
#define MASK_DIM (2 * MASK_RADIUS + 1)
__constant__ float F[MASK_DIM][MASK_DIM];
__global__ void convolution_2D_texture_kernel(cudaTextureObject_t N, float *P, int width, int height)
{
    int outCol = blockIdx.x * blockDim.x + threadIdx.x;
    int outRow = blockIdx.y * blockDim.y + threadIdx.y;
    if (outCol >= width || outRow >= height) return;
    float Pvalue = 0.0f;
    for (int fRow = 0; fRow < MASK_DIM; fRow++)
        for (int fCol = 0; fCol < MASK_DIM; fCol++)
            Pvalue += F[fRow][fCol] * tex2D<float>(N, outCol - MASK_RADIUS + fCol + 0.5f, outRow - MASK_RADIUS + fRow + 0.5f);
    P[outRow * width + outCol] = Pvalue;
}
"""


@pytest.mark.gpu
def test_a_pmpp_convolution_through_a_texture_clamps_at_the_edges_like_numpy_edge_padding():
    m = xcuda.compile(CONVOLUTION, name="pmpp_texture_convolution")
    rng = np.random.default_rng(11)
    mask = rng.random((5, 5), dtype=np.float32)
    m.get_global("F").set(mask)
    image = rng.random((37, 50), dtype=np.float32)
    out = np.zeros_like(image)
    m.convolution_2D_texture_kernel[(4, 3), (16, 16)](xcuda.texture(image), out, 50, 37)
    padded = np.pad(image, 2, mode="edge").astype(np.float64)
    expected = sum(mask[r, c] * padded[r:r + 37, c:c + 50] for r in range(5) for c in range(5))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


VOLUMES = r"""
extern "C" __global__ void sample_volume(cudaTextureObject_t t, float4* out, int w, int h, int d)
{
    int x = threadIdx.x, y = threadIdx.y, z = blockIdx.x;
    if (x < w && y < h && z < d) out[(z * h + y) * w + x] = tex3D<float4>(t, x + 0.5f, y + 0.5f, z + 0.5f);
}
extern "C" __global__ void sample_layers(cudaTextureObject_t t, float* out, int w, int h, int layers)
{
    int x = threadIdx.x, y = threadIdx.y, layer = blockIdx.x;
    if (x < w && y < h && layer < layers) out[(layer * h + y) * w + x] = tex2DLayered<float>(t, x + 0.5f, y + 0.5f, layer);
}
extern "C" __global__ void sample_pairs(cudaTextureObject_t t, const float* xy, float2* out, int n)
{
    int i = threadIdx.x; if (i < n) out[i] = tex2D<float2>(t, xy[2 * i], xy[2 * i + 1]);
}
extern "C" __global__ void sample_many(cudaTextureObject_t t, const float* xy, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = tex2D<float>(t, xy[2 * i], xy[2 * i + 1]);
}
extern "C" __global__ void sample_line(cudaTextureObject_t t, const float* x, float* out, int n)
{
    int i = threadIdx.x; if (i < n) out[i] = tex1D<float>(t, x[i]);
}
"""


@pytest.mark.gpu
def test_a_3d_texture_of_uchar4_reads_normalised_floats():
    m = xcuda.compile(VOLUMES, name="texture_volumes")
    volume = np.random.default_rng(5).integers(0, 256, size=(3, 4, 6, 4)).astype(np.uint8)
    out = np.zeros((3, 4, 6, 4), np.float32)
    m.sample_volume[3, (6, 4)](xcuda.texture(volume, channels=4, read="normalized"), out, 6, 4, 3)
    np.testing.assert_allclose(out, volume / np.float32(255), rtol=1e-6)


@pytest.mark.gpu
def test_a_layered_texture_reads_each_layer_and_an_integer_handle_passes_too():
    m = xcuda.compile(VOLUMES, name="texture_layers")
    layers = np.random.default_rng(6).random((5, 3, 4), dtype=np.float32)
    tex = xcuda.texture(layers, layered=True)
    out = np.zeros_like(layers)
    m.sample_layers[5, (4, 3)](tex.handle, out, 4, 3, 5)
    assert np.array_equal(out, layers)


@pytest.mark.gpu
def test_two_channel_and_half_textures_filter_linearly():
    m = xcuda.compile(VOLUMES, name="texture_pairs")
    pairs = np.random.default_rng(8).random((4, 5, 2), dtype=np.float32)
    xy = np.array([1.3, 2.2, 0.1, 0.4, 4.9, 3.7, 2.5, 1.5], np.float32)
    out = np.zeros((4, 2), np.float32)
    m.sample_pairs[1, 32](xcuda.texture(pairs, channels=2, filter="linear"), xy, out, 4)
    for c in range(2):
        np.testing.assert_allclose(out[:, c], linear2d(pairs[..., c], xy[0::2], xy[1::2]), rtol=1e-5, atol=1e-6)
    line = np.linspace(-2, 2, 9).astype(np.float16)
    x = np.array([0.5, 1.25, 3.8, 8.9, -1.0], np.float32)
    got = np.zeros(5, np.float32)
    m.sample_line[1, 32](xcuda.texture(line, filter="linear"), x, got, 5)
    expected = linear2d(line.astype(np.float32)[None, :], x, np.full(5, 0.5, np.float32))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
def test_linear_filtering_at_thousands_of_coordinates_weighs_corners_as_the_gpu_rounds_them():
    # The fit of tests/gpu_host/texture_filter_probe.py as a test: random coordinates (ties of x*256 among
    # them), a random image, every fetch within float32 summation error of corners(); the Guide's plain
    # products of the 9-bit weights miss by up to 1/512 of the texel range.
    m = xcuda.compile(VOLUMES, name="texture_many")
    rng = np.random.default_rng(11)
    image = rng.random((16, 16), dtype=np.float32)
    n = 4096
    xy = (np.round(rng.random(2 * n) * 18 * 512) / 512 - 1).astype(np.float32)  # 1/512 steps: half-256th ties
    out = np.zeros(n, np.float32)
    m.sample_many[n // 256, 256](xcuda.texture(image, filter="linear"), xy, out, n)
    np.testing.assert_allclose(out, linear2d(image, xy[0::2], xy[1::2]), rtol=0, atol=3e-7)


@pytest.mark.gpu
def test_border_and_mirror_address_modes_read_the_border_colour_and_the_mirrored_texel():
    m = xcuda.compile(VOLUMES, name="texture_address_modes")
    line = np.array([10, 20, 30, 40], np.float32)
    x = np.array([-0.1, 0.3, 1.1, 1.6, -0.6], np.float32)
    got = np.zeros(5, np.float32)
    m.sample_line[1, 32](xcuda.texture(line, address="border", normalized=True, border=(-7,)), x, got, 5)
    assert got.tolist() == [-7, 20, -7, -7, -7]
    m.sample_line[1, 32](xcuda.texture(line, address="mirror", normalized=True), x, got, 5)
    assert got.tolist() == [10, 20, 40, 20, 30]
