"""What xcuda says and does about the PTX simulator: the one-time notice of the fallback, the lines that
confirm xcuda.use_simulator() and xcuda.use_gpu(), and two helpers for notebooks that must run on a laptop
without a GPU as well as on one.

The core decides (the driver layer falls back to the simulator where no NVIDIA driver or no device is found
and nothing chose the device; it says so once); this module only draws. ``sized`` keeps a measuring cell
short on the simulator, which interprets every instruction on the CPU, and says so in the cell;
``measured`` labels a figure measured there, and leaves out what only a GPU's time means (a bandwidth, a
speed-up). docs/simulator.md ("Choosing it"), docs/first-hour.md.
"""
import sys

from . import _core

SIMULATED_LABEL = "[simulated: the PTX simulator's time on the CPU, not a GPU's]"


def show_fallback_notice(reason):
    """The notice of the fallback, once per process (the core hands the reason to one caller): on stderr,
    which a notebook shows as a warning in the cell that made the first launch, allocation or info()."""
    print(f"xcuda: {reason}, so kernels run on the PTX simulator, on the CPU (slowly; its timings are not a "
          f"GPU's). To use a GPU instead: set XCUDA_DEVICE=gpu before xcuda starts, or call xcuda.use_gpu() "
          f"before the first launch.", file=sys.stderr, flush=True)


def use_simulator():
    """Run this session's kernels on the PTX simulator from now on, as XCUDA_DEVICE=simulator does at start.

    For a machine without a GPU (where xcuda falls back to it by itself at the first launch), or to learn
    with the simulator's checks (out-of-bounds accesses named with their thread and cell line, races,
    barrier divergence) after the session has started: compiled modules are kept and load there at their
    next launch. Before the first launch or allocation only: a session that already has a CUDA context on
    a GPU keeps it (restart the kernel with XCUDA_DEVICE=simulator instead); calling it again is harmless.
    Prints the line that says what it chose. xcuda.info() then names the simulator and who chose it, and
    timings say they are simulated. docs/simulator.md.
    """
    print(_core._use_simulator())


def use_gpu():
    """Run this session's kernels on the GPU (the NVIDIA driver) again, after the simulator was chosen.

    Before the first launch or allocation on the simulator only: once the simulator holds device arrays,
    modules and streams, the call is refused (restart the kernel with XCUDA_DEVICE=gpu). Refused too, with
    CudaUnavailableError saying why, where there is no NVIDIA driver or no device: the session stays where it
    was. Prints the line that says what it chose. XCUDA_DEVICE=gpu at start does the same and keeps xcuda
    from ever falling back to the simulator.
    """
    print(_core._use_gpu())


def sized(name, gpu, simulator, simulated=None):
    """``gpu`` on a GPU; on the PTX simulator ``simulator``, saying so in the cell's output.

    For what only measures (a problem size, a number of repeats): the lesson stays, and the cell ends in
    seconds instead of minutes. ``name`` names the value in the line printed on the simulator.
    ``simulated`` says where the kernels run when that is another process (ipyparallel engines); None
    asks this one (xcuda.simulated()).

        NUM_BLOCKS = xcuda.sized("NUM_BLOCKS", 32768, 64)
    """
    if not (_core.simulated() if simulated is None else simulated):
        return gpu
    print(f"on the PTX simulator: {name} = {simulator:,} instead of {gpu:,} (it interprets every instruction on "
          f"the CPU; the lesson is the same, the figures are not a GPU's)")
    return simulator


def measured(figure, rates=""):
    """A measured figure as a line to print: ``figure + rates`` on a GPU; on the PTX simulator ``figure``
    labelled simulated, without ``rates`` (a bandwidth or a speed-up derived from the time means nothing
    there).

        print(xcuda.measured(f"kernel: median {t.median_ms * 1e3:.1f} us", f", {t.bandwidth_gbs:.0f} GB/s"))
    """
    if not _core.simulated():
        return figure + rates
    return f"{figure} {SIMULATED_LABEL}" + ("; no bandwidth or speed-up from it" if rates else "")
