"""Every magic's option line goes through one parser: -h in each, one-line usage errors that point
to -h, a did-you-mean for our own options, NVRTC's own options passed by name. No GPU needed."""
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

SAXPY = """extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }
"""

LINE_MAGICS = ["cuda_info", "cuda_status", "cuda_timeit", "cuda_bench", "cuda_recover"]
CELL_MAGICS = ["cuda", "cuda_header"]


@pytest.mark.parametrize("magic", LINE_MAGICS)
@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_every_line_magic_shows_its_usage_for_h(shell, capsys, magic, flag):
    assert shell.run_line_magic(magic, flag) is None
    out = capsys.readouterr().out
    assert out.startswith("%" + magic + " [options]") and "-h, --help" in out
    assert out.strip() == shell.find_line_magic(magic).__doc__.strip()


@pytest.mark.parametrize("magic", CELL_MAGICS)
def test_every_cell_magic_shows_its_usage_for_h(shell, capsys, magic):
    shell.run_cell_magic(magic, "-h", SAXPY)
    out = capsys.readouterr().out
    assert out.startswith("%%" + magic + " [options]") and "-h, --help" in out


def test_asking_cuda_for_help_compiles_nothing(shell, capsys):
    shell.user_ns.pop("saxpy", None)
    shell.run_cell_magic("cuda", "--help", SAXPY)
    assert "saxpy" not in shell.user_ns


@pytest.mark.parametrize(
    "magic, line",
    [
        ("cuda_bench", "-q saxpy sizes f"),
        ("cuda_timeit", "-x saxpy[1, 1]()"),
        ("cuda_info", "--verbose"),
        ("cuda_status", "extra"),
        ("cuda_recover", "-y"),
    ],
)
def test_a_line_magic_usage_error_is_one_line_pointing_to_h(shell, magic, line):
    with pytest.raises(UsageError) as error:
        shell.run_line_magic(magic, line)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("%" + magic + ": ") and message.endswith("(see %" + magic + " -h)")


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("--nme foo", "unknown option --nme; did you mean --name?"),
        ("--lineinf", "did you mean --lineinfo?"),
        ("--arch", "option --arch needs a value (ARCH)"),
        ("-maxregcount=32", "options for NVRTC go after a bare --"),
        ("saxpy", "unexpected word 'saxpy': options start with '-'"),
        ("--ptx=yes", "option --ptx takes no value"),
    ],
)
def test_cuda_usage_errors_are_one_line(shell, line, fragment):
    with pytest.raises(UsageError) as error:
        shell.run_cell_magic("cuda", line, SAXPY)
    message = str(error.value)
    assert fragment in message and "\n" not in message and message.endswith("(see %%cuda -h)")


def test_nvrtc_options_pass_by_name_and_after_a_bare_double_dash(shell):
    shell.run_cell_magic("cuda", "--name opts -maxrregcount=32 --ftz=true -- --extra-device-vectorization", SAXPY)
    options = shell.user_ns["opts"].options
    assert "-maxrregcount=32" in options and "--ftz=true" in options
    assert "--extra-device-vectorization" in options


def test_values_come_in_every_spelling(shell):
    shell.run_cell_magic("cuda", "--name=spelled -DN=4 -D M --std=c++17 -I /tmp", SAXPY)
    options = shell.user_ns["spelled"].options
    assert "--define-macro=N=4" in options and "--define-macro=M" in options
    assert "--std=c++17" in options and "--include-path=/tmp" in options


def test_cuda_header_takes_exactly_one_name(shell):
    with pytest.raises(UsageError, match=r"takes one header name.*\(see %%cuda_header -h\)$"):
        shell.run_cell_magic("cuda_header", "a.cuh b.cuh", "#define A 1\n")


def test_cuda_bench_integer_options_are_checked(shell):
    with pytest.raises(UsageError, match=r"^%cuda_bench: -b needs an integer of at least 1, got 0 "):
        shell.run_line_magic("cuda_bench", "-b 0 saxpy [1] f")
