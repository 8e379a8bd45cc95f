"""The plots of xcuda's results: BenchResult's bandwidth sweep and LaunchProfile's roofline.

Figures are made without pyplot (no global figure list, nothing shown by itself), so a result's
_repr_html_ can embed one as a PNG. Needs matplotlib (`pip install "xcuda[plots]"`); the results' tables
say everything without it.
"""
import base64
import io
import math


def _figure(ax, size):
    if ax is not None:
        return ax.figure, ax
    from matplotlib.figure import Figure

    figure = Figure(figsize=size, layout="constrained")
    return figure, figure.add_subplot()


def matplotlib_available():
    """Whether matplotlib can be imported (xcuda.bench(plot=True) refuses to start a sweep without it)."""
    try:
        import matplotlib.figure  # noqa: F401
    except ImportError:
        return False
    return True


def png_base64(figure, dpi):
    """The figure as a base64 PNG, for an <img> in HTML."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def bandwidth_sweep(sizes, bandwidth_gbs, peak_gbs, peak_source, theoretical_gbs, kernel, block, device, ax=None):
    """Achieved GB/s against n (log scale), with the peak (and the theoretical peak) as lines."""
    figure, ax = _figure(ax, (7.0, 4.2))
    ax.plot(sizes, bandwidth_gbs, marker="o", label=f"{kernel} (block {block})")
    measured = peak_source == "measured"
    ax.axhline(peak_gbs, color="C3", linestyle="--",
               label=("measured peak " if measured else "peak ") + f"{peak_gbs:.0f} GB/s" +
               (" (device-to-device copy)" if measured else ""))
    top = peak_gbs
    if theoretical_gbs is not None:
        ax.axhline(theoretical_gbs, color="0.5", linestyle=":",
                   label=f"theoretical {theoretical_gbs:.0f} GB/s (memory clock x bus width)")
        top = max(top, theoretical_gbs)
    top = max([top] + [b for b in bandwidth_gbs if math.isfinite(b)])
    powers_of_two = all(n & (n - 1) == 0 for n in sizes)
    ax.set_xscale("log", base=2 if powers_of_two else 10)
    ax.set_ylim(0, top * 1.4)  # headroom for the legend above the lines
    ax.set_xlabel("n (elements)")
    ax.set_ylabel("achieved bandwidth (GB/s)")
    ax.set_title(f"{kernel}: achieved bandwidth" if device is None else f"{kernel} on {device}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left")
    return figure


def roofline(kernel, bound, intensity, achieved, peak, bandwidth, fp64, percents, ax=None):
    """A roofline (arithmetic intensity against FLOP/s under the DRAM and compute roofs) when ncu counted
    the floating-point work and the peaks; else how close each unit came to its peak (percents: DRAM,
    memory, SM, achieved occupancy, None where not reported)."""
    figure, ax = _figure(ax, (6.4, 4.0))
    if intensity and achieved and peak and bandwidth and intensity > 0 and achieved > 0:
        import numpy as np

        ridge = peak / bandwidth
        xs = np.logspace(math.log10(min(intensity, ridge) / 100.0), math.log10(max(intensity, ridge) * 100.0), 200)
        ax.loglog(xs, np.minimum(xs * bandwidth, peak), color="C0",
                  label=f"DRAM {bandwidth / 1e12:.2f} TB/s, " + ("FP64 " if fp64 else "FP32 ") +
                  f"{peak / 1e12:.1f} TFLOP/s")
        ax.plot((intensity,), (achieved,), marker="o", color="C3", linestyle="none",
                label=f"{kernel}: {intensity:.3g} FLOP/byte, {achieved / 1e9:.3g} GFLOP/s")
        ax.axvline(ridge, color="0.5", linestyle=":", label=f"ridge {ridge:.3g} FLOP/byte")
        ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
        ax.set_ylabel("FLOP/s")
        ax.set_title(f"roofline: {kernel} ({bound}-bound)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="lower right")
        return figure
    names = ["DRAM", "memory (busiest unit)", "compute (SM)", "achieved occupancy"]
    ax.barh(names, [value or 0.0 for value in percents], color=("C0", "C0", "C1", "C2"))
    ax.axvline(60.0, color="C3", linestyle="--", label="60%: the unit bounds the launch")
    ax.set_xlim(0, 100)
    ax.invert_yaxis()
    ax.set_xlabel("% of peak")
    ax.set_title(f"speed of light: {kernel}" + (f" ({bound}-bound)" if bound else ""))
    ax.legend(loc="lower right")
    return figure
