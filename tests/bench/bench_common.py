"""Helpers the GPU benchmark scripts share: result cells that may be "n/a (reason)", a row's check and
measurement, the median wall time of a call, ratios and goal verdicts, markdown tables, the printed
report and its --out file, a look at the GPU through the driver without xcuda, and the C++ baseline
(tests/bench/launch_baseline.cpp: built with nvcc, run in one of its modes, its `key value` lines read)."""
import ctypes
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


class NA:
    """A value that could not be measured, with the reason shown in the table."""

    def __init__(self, reason):
        self.reason = reason

    def __str__(self):
        return f"n/a ({self.reason})"


def measured(value):
    return not isinstance(value, NA)


def short_error(error):
    elist = getattr(error, "elist", None)  # ipyparallel's CompositeError: say what the first engine raised
    if elist:
        ename, evalue = elist[0][0], str(elist[0][1]).strip().splitlines()
        return f"{type(error).__name__} from the engines, the first: {ename}: {evalue[0] if evalue else ''}"[:240]
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:160]


def attempt(check, measure):
    """Run `check` (None when the result is right, else what is wrong; check itself may be None: nothing to
    check), then `measure`; never raises: an error or a wrong result becomes NA with the reason."""
    try:
        wrong = check() if check else None
    except Exception as error:  # a benchmark row must not stop the run
        return NA(f"error: {short_error(error)}")
    if wrong:
        return NA(f"wrong result: {wrong}")
    try:
        return measure()
    except Exception as error:
        return NA(f"error: {short_error(error)}")


def median_wall_ms(run, repeat, warmup=0):
    """Median host wall time (perf_counter) of the synchronous `run()` over `repeat` calls after `warmup`
    untimed ones, in ms."""
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def us_per_launch(batch, synchronize, batches=25, per_batch=1000):
    """Median over `batches` of the host time of `batch()` (which makes `per_batch` asynchronous launches)
    divided by `per_batch`, in us; `synchronize()` before each batch and after the last, outside the timer."""
    samples = []
    for _ in range(batches):
        synchronize()
        start = time.perf_counter()
        batch()
        samples.append((time.perf_counter() - start) / per_batch * 1e6)
    synchronize()
    return statistics.median(samples)


def probe_gpu():
    """(info dict, None) when device 0 is usable, else (None, reason)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None, "no NVIDIA driver (libcuda.so.1) on this machine"
    if lib.cuInit(0) != 0:
        return None, "the NVIDIA driver is present but cuInit failed (no usable GPU)"
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return None, "the NVIDIA driver found no CUDA device"
    device = ctypes.c_int(0)
    name = ctypes.create_string_buffer(256)
    major, minor, driver = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
    lib.cuDeviceGet(ctypes.byref(device), 0)
    lib.cuDeviceGetName(name, 256, device)
    lib.cuDeviceGetAttribute(ctypes.byref(major), 75, device)  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, device)  # ..._MINOR
    lib.cuDriverGetVersion(ctypes.byref(driver))
    return {
        "name": name.value.decode(),
        "arch": f"sm_{major.value}{minor.value}",
        "driver": f"{driver.value // 1000}.{driver.value % 1000 // 10}",
    }, None


def ratio(value, base):
    if not (measured(value) and measured(base)) or not base:
        return "n/a"
    return f"{value / base:.2f}x"


def goal_ratio(value, base, limit, base_name):
    """`value / base <= limit`, as met/missed with the margin."""
    if not (measured(value) and measured(base)) or not base:
        return f"<= {limit:.2f}x {base_name}: n/a"
    r = value / base
    verdict = "met" if r <= limit else "missed"
    return f"<= {limit:.2f}x {base_name}: {verdict} ({r:.2f}x, margin {limit - r:+.2f}x)"


def markdown_table(headers, rows):
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def show_section(sections, text):
    """Prints a section of the report (a blank line after it) and keeps it in `sections` for write_report."""
    print(text + "\n", flush=True)
    sections.append(text)


def write_report(path, sections):
    """With --out PATH (path not empty): writes the kept sections there as one markdown file, and says so."""
    if path:
        Path(path).write_text("\n\n".join(sections) + "\n")
        print(f"tables written to {path}")


def cuda_home():
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(variable):
            return Path(os.environ[variable])
    nvcc = shutil.which("nvcc")
    return Path(nvcc).resolve().parent.parent if nvcc else Path("/usr/local/cuda")


def build_baseline(folder):
    """Compile launch_baseline.cpp with nvcc into `folder`; returns (path, None) or (None, reason)."""
    home = cuda_home()
    nvcc = shutil.which("nvcc") or str(home / "bin" / "nvcc")
    target = Path(folder) / "launch_baseline"
    command = [nvcc, "-O2", "-std=c++17", "-o", str(target), str(HERE / "launch_baseline.cpp"),
               "-lcuda", "-lnvrtc", "-Xlinker", "-rpath", "-Xlinker", str(home / "lib64")]
    try:
        built = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"nvcc failed: {short_error(error)}"
    if built.returncode != 0:
        last = (built.stderr or built.stdout).strip().splitlines()
        return None, f"nvcc failed: {last[-1] if last else built.returncode}"
    return target, None


def run_baseline(path, mode=None):
    """The baseline's `key value` lines (in `mode`: None, "transfers" or "graphs") as a dict, or an NA."""
    try:
        ran = subprocess.run([str(path)] + ([mode] if mode else []), capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as error:
        return NA(f"baseline failed: {short_error(error)}")
    if ran.returncode != 0:
        last = (ran.stderr or ran.stdout).strip().splitlines()
        return NA(f"baseline failed: {last[-1] if last else ran.returncode}"[:200])
    values = {}
    for line in ran.stdout.splitlines():
        key, _, value = line.strip().partition(" ")
        try:
            values[key] = float(value)
        except ValueError:
            values[key] = value
    return values


def baseline_for(option, folder, gpu_reason, mode=None):
    """The baseline's results: from the prebuilt executable `option` (--baseline) or one built into
    `folder`; an NA saying why when it cannot be built or run (no GPU: built only)."""
    if option:
        path, reason = Path(option), None
        if not path.is_file():
            path, reason = None, f"no baseline at {option}"
    else:
        path, reason = build_baseline(folder)
    if reason:
        return NA(reason)
    if gpu_reason:
        print(f"C++ baseline {'found' if option else 'built'} ({path}); not run without a GPU.\n")
        return NA(f"no GPU: {gpu_reason}")
    print(f"running the C++ baseline {path} {mode or ''} ...", flush=True)
    return run_baseline(path, mode)


def baseline_value(baseline, key):
    """One value of a baseline's results, or the NA saying why there is none."""
    if not isinstance(baseline, dict):
        return baseline
    return baseline.get(key, NA(f"baseline printed no {key}"))
