"""The simulator's float families of round 2 (docs/simulator.md, "Arithmetic") against exact references.

tests/simulator/float_kernels.py runs, in a child process on the simulator (XCUDA_DEVICE=simulator):
half-precision arithmetic of cuda_fp16.h and cuda_bf16.h (scalars and pairs), conversions in every rounding
(float/double/integers to half, bfloat16 and float; half to integers), the directed roundings of f32 and f64
arithmetic (__fadd_rz ... __drcp_ru), cuda_fp8.h's 8-bit floats, and libdevice's math functions. Every exact operation is checked bit
for bit against the exact value rounded as the instruction says (float_reference.py: Fractions, no double
rounding); the math functions, which PTX leaves to approximations inside, against numpy within the ulps the
CUDA Programming Guide states for the GPU. Marked gpu: the same kernels on the GPU, compared with the
simulator: bit for bit where PTX is exact, within those ulps elsewhere.
"""
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import float_kernels  # noqa: E402
from kernel_runs import run_kernels  # noqa: E402
from float_reference import round_fraction, round_sqrt, to_float, ulps_apart, value  # noqa: E402

N = float_kernels.N
MODES = ("rz", "rd", "ru")


def run_float_kernels(build_dir, target, simulator):
    return run_kernels(HERE / "float_kernels.py", build_dir, target, simulator)


@pytest.fixture(scope="module")
def simulated(build_dir, tmp_path_factory):
    return run_float_kernels(build_dir, tmp_path_factory.mktemp("float") / "simulator.npz", simulator=True)


def bits(array):
    return array.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[array.dtype.itemsize])


def check(got, expected, what):
    """got (bit patterns) equal to expected (ints), naming the first difference."""
    got = [int(g) for g in got]
    wrong = [i for i, (g, e) in enumerate(zip(got, expected)) if g != e]
    assert not wrong, f"{what}: {len(wrong)} of {len(got)} differ, first at {wrong[0]}: got 0x{got[wrong[0]]:x}, " \
                      f"exact 0x{expected[wrong[0]]:x}"


def half_references(a, b, c, fmt):
    """What the `arithmetic` template writes for each input triple (bit patterns), exactly."""
    out = np.zeros((N, 12), dtype=object)
    sign = 0x8000
    for i in range(N):
        x, y, z = value(a[i], fmt), value(b[i], fmt), value(c[i], fmt)
        r = lambda q: round_fraction(q, fmt)  # noqa: E731
        low_high = lambda lo, hi: r(lo) ^ r(hi)  # noqa: E731
        out[i, :4] = [r(x + y), r(x - y), r(x * y), r(x * y + z)]
        out[i, 4:6] = [int(a[i]) ^ sign, int(a[i]) & (sign - 1)]
        # min/max: -0 below +0
        key = lambda q, bits_: (q, -(int(bits_) >> 15))  # noqa: E731
        smaller, larger = sorted([(key(x, a[i]), int(a[i])), (key(y, b[i]), int(b[i]))])
        out[i, 6:8] = [smaller[1], larger[1]]
        out[i, 8:11] = [low_high(x + y, z + x), low_high(x * y, z * x), low_high(x * y + z, z * x + y)]
        out[i, 11] = int(x < y) | int(x >= z) << 1 | int(y == z) << 2 | int(x != y) << 3
    return out


@pytest.mark.parametrize("fmt,name,prefix", [("f16", "half", "h"), ("bf16", "bf16", "b")])
def test_half_and_bfloat16_arithmetic_of_scalars_and_pairs_is_correctly_rounded(simulated, fmt, name, prefix):
    v = float_kernels.inputs()
    got = simulated[name].reshape(N, 12)
    expected = half_references(v[prefix + "a"], v[prefix + "b"], v[prefix + "c"], fmt)
    names = ["add", "sub", "mul", "fma", "neg", "abs", "min", "max", "add2", "mul2", "fma2", "compare"]
    for k, what in enumerate(names):
        check(got[:, k], expected[:, k], f"{fmt} {what}")


def test_conversions_round_to_half_bfloat16_float_double_and_integers_as_each_modifier_says(simulated):
    v = float_kernels.inputs()
    f, d, k, w = v["fa"], v["da"], v["ints"], v["longs"]
    halves = simulated["cvt_halves"].reshape(N, 16)
    ints = simulated["cvt_ints"].reshape(N, 8)
    floats = bits(simulated["cvt_floats"]).reshape(N, 10)
    doubles = bits(simulated["cvt_doubles"]).reshape(N, 3)
    scaled = f * np.float32(0.001)  # the kernel's x * 0.001f, one IEEE rounding in numpy too
    for column, (fmt, mode) in enumerate([("f16", "rn"), ("f16", "rz"), ("f16", "rd"), ("f16", "ru"),
                                          ("bf16", "rn"), ("bf16", "rz"), ("bf16", "rd"), ("bf16", "ru")]):
        check(halves[:, column], [round_fraction(Fraction(float(x)), fmt, mode) for x in f], f"float to {fmt} .{mode}")
    check(halves[:, 8], [round_fraction(Fraction(float(x)), "f16") for x in d], "double to f16")
    check(halves[:, 9], [round_fraction(Fraction(float(x)), "bf16") for x in d], "double to bf16")
    for column, mode in enumerate(("rn", "rz", "rd", "ru")):
        check(halves[:, 10 + column], [round_fraction(int(n), "f16", mode) for n in k], f"int to f16 .{mode}")
    check(halves[:, 14], [round_fraction(Fraction(float(x)), "bf16") for x in f], "__floats2bfloat162_rn low")
    check(halves[:, 15], [round_fraction(Fraction(float(x)), "bf16") for x in f[::-1]], "__floats2bfloat162_rn high")
    hx = [to_float(round_fraction(Fraction(float(x)), "f16"), "f16") for x in scaled]
    bx = [to_float(round_fraction(Fraction(float(x)), "bf16"), "bf16") for x in f]
    to_integer = {"rn": lambda q: int(np.rint(q)), "rz": math.trunc, "rd": math.floor, "ru": math.ceil}
    for column, mode in enumerate(("rn", "rz", "rd", "ru")):
        assert list(ints[:, column]) == [to_integer[mode](q) for q in hx], f"half to int .{mode}"
        assert list(ints[:, 4 + column]) == [max(-2 ** 31, min(2 ** 31 - 1, to_integer[mode](q))) for q in bx], \
            f"bfloat16 to int .{mode}"
    as_f32 = lambda values: bits(np.array(values, np.float32))  # noqa: E731  (exact, -0 kept: a Fraction has no sign)
    check(floats[:, 0], as_f32(hx), "half to float")
    check(floats[:, 1], as_f32(bx), "bfloat16 to float")
    for column, mode in enumerate(MODES):
        check(floats[:, 2 + column], [round_fraction(int(n), "f32", mode) for n in k], f"int to float .{mode}")
        check(floats[:, 5 + column], [round_fraction(int(n), "f32", mode) for n in w], f"long long to float .{mode}")
        check(doubles[:, column], [round_fraction(int(n), "f64", mode) for n in w], f"long long to double .{mode}")
    check(floats[:, 8], [round_fraction(int(n) % 2 ** 32, "f32", "rd") for n in k], "unsigned to float .rd")
    check(floats[:, 9], [round_fraction(int(n) % 2 ** 64, "f32", "ru") for n in w], "unsigned long long to float .ru")


def test_8_bit_floats_round_to_nearest_saturate_at_the_largest_finite_value_and_widen_exactly(simulated):
    v = float_kernels.inputs()
    f = v["fa"] * np.float32(0.25)  # some past e4m3's 448, some subnormal, some zero after rounding
    got = simulated["fp8"].reshape(N, 6)
    largest = {"e4m3": 0x7E, "e5m2": 0x7B}

    def saturated(q, fmt):  # q a float: a Fraction has no -0
        r = round_fraction(Fraction(q), fmt) | (0x80 if math.copysign(1.0, q) < 0 else 0)
        return (r & 0x80) | largest[fmt] if (r & 0x7F) > largest[fmt] else r

    x, y = f, f[::-1]
    for column, (values, fmt) in enumerate([(x, "e4m3"), (y, "e4m3"), (x, "e5m2"), (y, "e5m2")]):
        check(got[:, column], [saturated(float(q), fmt) for q in values], f"float to {fmt} ({column})")
    halves = [[to_float(round_fraction(Fraction(float(q)), "f16"), "f16") for q in values] for values in (x, y)]
    for column, values in enumerate(halves):
        check(got[:, 4 + column], [saturated(q, "e4m3") for q in values], f"half to e4m3 ({column})")
    back = simulated["fp8_back"].reshape(N, 2)
    for column in range(2):
        widened = [to_float(int(b), "e4m3") for b in got[:, column]]
        check(bits(back[:, column].copy()), bits(np.array(widened, np.float32)), f"e4m3 to half ({column})")
    assert (got[:, 0] & 0x7F == 0x7E).any() and (got[:, 0] & 0x7F < 8).any(), "inputs reach the saturation and the subnormals"


def exact_operations(x, y, z):
    return {"add": (x + y, False), "mul": (x * y, False), "fma": (x * y + z, False), "div": (x / y, False),
            "sqrt": (abs(x), True), "rcp": (1 / y, False), "sub": (x - z, False)}


def test_f32_and_f64_arithmetic_in_every_directed_rounding_is_exact(simulated):
    v = float_kernels.inputs()
    for fmt, name, (a, b, c), per_row, names in [
            ("f32", "rounded_f32", (v["fa"], v["fb"], v["fc"]), 24, ["add", "mul", "fma", "div", "sqrt", "rcp", "sub"]),
            ("f64", "rounded_f64", (v["da"], v["db"], v["dc"]), 18, ["add", "mul", "fma", "div", "sqrt", "rcp"])]:
        got = bits(simulated[name]).reshape(N, per_row)
        expected = np.zeros((N, per_row), dtype=object)
        for i in range(N):
            ops = exact_operations(Fraction(float(a[i])), Fraction(float(b[i])), Fraction(float(c[i])))
            for j, what in enumerate(names):
                q, is_root = ops[what]
                for m, mode in enumerate(MODES):
                    expected[i, 3 * j + m] = round_sqrt(q, fmt, mode) if is_root else round_fraction(q, fmt, mode)
            if fmt == "f32":
                expected[i, 21:] = [round_fraction(ops["sub"][0] + 2 * Fraction(float(c[i])), fmt),  # x + z
                                    round_fraction(ops["fma"][0], fmt), round_fraction(ops["div"][0], fmt)]
        for j, what in enumerate(names):
            for m, mode in enumerate(MODES):
                check(got[:, 3 * j + m], expected[:, 3 * j + m], f"{fmt} {what} .{mode}")
        if fmt == "f32":
            for j, what in enumerate(["add .rn", "fma .rn", "div .rn"]):
                check(got[:, 21 + j], expected[:, 21 + j], f"f32 {what}")


# The CUDA C++ Programming Guide's maximum ulp errors of these functions on the GPU (appendix "Mathematical
# Functions", single and double precision); a simulator result must be as close to numpy's (+1 for numpy's
# own rounding of the reference to the output type).
F32_BOUNDS = {"expf": 2, "logf": 1, "powf": 4, "sinf": 2, "cosf": 2, "erff": 2, "exp2f": 2, "tanhf": 2}
F64_BOUNDS = {"exp": 1, "log": 1, "pow": 2, "sin": 2, "cos": 2, "erf": 2, "cbrt": 1}
F16_BOUNDS = {"hexp": 2, "hlog": 2, "hsqrt": 1, "hdiv": 1}


def erf(values):
    return np.array([math.erf(float(q)) for q in values])


def test_libdevice_math_functions_are_within_the_gpus_stated_ulps_of_numpy(simulated):
    v = float_kernels.inputs()
    x, y = v["ma"].astype(np.float64), v["mb"].astype(np.float64)
    got = simulated["math_f32"].reshape(N, 8)
    with np.errstate(divide="ignore"):
        references = {"expf": np.exp(x), "logf": np.log(np.abs(x)), "powf": np.abs(x) ** y, "sinf": np.sin(x),
                      "cosf": np.cos(x), "erff": erf(x), "exp2f": np.exp2(x), "tanhf": np.tanh(x)}
    for k, (what, reference) in enumerate(references.items()):
        apart = ulps_apart(bits(got[:, k].copy()), bits(reference.astype(np.float32)), "f32")
        assert apart.max() <= F32_BOUNDS[what] + 1, f"{what}: {apart.max()} ulps from numpy at input {x[np.argmax(apart)]}"
    u, w = v["mp"], v["mq"]
    got = simulated["math_f64"].reshape(N, 7)
    references = {"exp": np.exp(u), "log": np.log(np.abs(u)), "pow": np.abs(u) ** w, "sin": np.sin(u), "cos": np.cos(u),
                  "erf": erf(u), "cbrt": np.cbrt(u)}
    for k, (what, reference) in enumerate(references.items()):
        apart = ulps_apart(bits(got[:, k].copy()), bits(reference), "f64")
        assert apart.max() <= F64_BOUNDS[what] + 1, f"{what}: {apart.max()} ulps from numpy at input {u[np.argmax(apart)]}"
    got = simulated["math_f16"].reshape(N, 4)
    h = np.float16(v["ma"] * np.float32(0.25)).astype(np.float64)
    divisor = v["mb"].astype(np.float16).astype(np.float64)
    with np.errstate(divide="ignore"):
        references = {"hexp": np.exp(h), "hlog": np.log(np.abs(h)), "hsqrt": np.sqrt(np.abs(h)), "hdiv": h / divisor}
    for k, (what, reference) in enumerate(references.items()):
        apart = ulps_apart(got[:, k], bits(reference.astype(np.float16)), "f16")
        assert apart.max() <= F16_BOUNDS[what] + 1, f"{what}: {apart.max()} ulps from numpy at input {h[np.argmax(apart)]}"


@pytest.mark.gpu
def test_the_gpu_gives_the_simulators_bits_where_ptx_is_exact_and_its_ulps_elsewhere(build_dir, tmp_path, simulated):
    gpu = run_float_kernels(build_dir, tmp_path / "gpu.npz", simulator=False)
    approximate = {"math_f32": "f32", "math_f64": "f64", "math_f16": "f16"}
    differing = []
    for name in gpu:
        g, s = bits(gpu[name]), bits(simulated[name])
        if name in approximate:
            apart = ulps_apart(g, s, approximate[name])
            if apart.max() > 4:
                differing.append(f"{name}: {apart.max()} ulps apart at {np.argmax(apart)}")
        elif not np.array_equal(g, s):
            where = np.flatnonzero(g != s)
            differing.append(f"{name}: {where.size} of {g.size} differ, first at {where[0]}: GPU 0x{int(g[where[0]]):x}, "
                             f"simulator 0x{int(s[where[0]]):x}")
    assert not differing, "\n".join(differing)
