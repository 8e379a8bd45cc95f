#!/usr/bin/env python3
"""Execute a notebook with the xcuda kernel and print each cell with its outputs.

    /usr/bin/python3 notebooks/run_notebook.py notebooks/01-saxpy.ipynb [--kernel xcuda] [--save OUT.ipynb]
    python3 notebooks/run_notebook.py notebooks/01-saxpy.ipynb --kernel python3 --load-ext xcuda

With --load-ext a first cell `%load_ext NAME` is run before the notebook's own cells: the magics in
any IPython kernel (ipykernel), with the module installed in that kernel's Python.

Exits 0 when every cell ran. On a machine without an NVIDIA GPU xcuda falls back to its PTX simulator
and the notebook runs to its end there; a figure measured on the simulator that is printed without its
"[simulated" label, or a bandwidth or speed-up printed at all there, exits 1 (unlabelled_figures; a GPU's
figures are not read). With XCUDA_DEVICE=gpu (a GPU or nothing) the first cell that needs one raises
xcuda.CudaUnavailableError: the run stops there, says so plainly, and still exits 0 (everything that
can run without a GPU did). Any other error exits 1.
"""
import argparse
import re
import sys
import textwrap

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, DeadKernelError

NO_GPU = "CudaUnavailableError"


def output_text(output):
    kind = output.get("output_type")
    if kind == "stream":
        return output.get("text", "")
    if kind in ("execute_result", "display_data"):
        return output.get("data", {}).get("text/plain", "")
    if kind == "error":
        return f"{output['ename']}: {output['evalue']}"
    return ""


# A time or a rate as a notebook prints one ("812.0 us", "6.214 ms", "0 GB/s"), and a speed-up ("(1.21x)").
TIME = re.compile(r"\b\d[\d,]*(\.\d+)?\s?(ns|us|µs|ms)\b")
GPU_ONLY = re.compile(r"\bGB/s\b|\(\d+(\.\d+)?x\)")
SIMULATED = "[simulated"


def ran_on_the_simulator(notebook):
    """Whether the notebook's kernels ran on the PTX simulator: its outputs name it (xcuda.info(), the
    fallback's notice, %cuda_timeit's label, xcuda.sized's line)."""
    return any("PTX simulator" in output_text(o) for c in notebook.cells for o in c.get("outputs", []))


def unlabelled_figures(notebook):
    """(cell index, line) of every figure a run on the simulator printed as if it were a GPU's: a time
    without the "[simulated" label on its line, and any bandwidth or speed-up. [] for a GPU's run."""
    if not ran_on_the_simulator(notebook):
        return []
    found = []
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            for line in output_text(output).splitlines():
                if GPU_ONLY.search(line) or (TIME.search(line) and SIMULATED not in line):
                    found.append((index, line.strip()))
    return found


def print_cell(index, cell):
    print(f"--- [{index}] " + ("markdown" if cell.cell_type == "markdown" else f"In [{cell.get('execution_count') or ' '}]"))
    if cell.cell_type == "markdown":
        print(textwrap.indent(cell.source, "  "))
        return
    print(textwrap.indent(cell.source, "  "))
    # Consecutive stream messages are pieces of one text (a kernel may send a print in several).
    blocks = []
    for output in cell.get("outputs", []):
        text = output_text(output)
        if output.get("output_type") == "stream" and blocks and blocks[-1][0] == output.get("name"):
            blocks[-1][1] += text
        else:
            blocks.append([output.get("name") if output.get("output_type") == "stream" else None, text])
    for _, text in blocks:
        text = text.rstrip()
        if text:
            print(textwrap.indent(text, "  | ", lambda line: True))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebook")
    parser.add_argument("--kernel", default="xcuda")
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--save", help="write the executed notebook here")
    parser.add_argument("--load-ext", metavar="NAME", help="run `%%load_ext NAME` first (for ipykernel)")
    args = parser.parse_args()

    notebook = nbformat.read(args.notebook, as_version=4)
    if args.load_ext:
        notebook.cells.insert(0, nbformat.v4.new_code_cell(f"%load_ext {args.load_ext}"))
    running = {}

    def note_running(cell, cell_index, **_):
        running["index"] = cell_index

    client = NotebookClient(notebook, kernel_name=args.kernel, timeout=args.timeout, on_cell_execute=note_running)
    failure = None
    died = None
    try:
        client.execute()
    except CellExecutionError as error:
        failure = error
    except DeadKernelError as error:
        died = error
    for index, cell in enumerate(notebook.cells):
        print_cell(index, cell)
        if failure is not None and any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            break
        if died is not None and index == running.get("index"):
            break
    if args.save:
        nbformat.write(notebook, args.save)
    if died is not None:
        # The kernel process ended (a crash, or killed): say which cell it was running, not only nbclient's
        # traceback; the kernel's own last words are on this script's standard error.
        print(f"\n{args.notebook}: the kernel died while running cell [{running.get('index', '?')}] (the last one "
              f"printed above): {died}", file=sys.stderr)
        return 1
    unlabelled = unlabelled_figures(notebook)
    if unlabelled:
        print(f"\n{args.notebook}: ran on the PTX simulator, and printed figures that read as a GPU's:\n" +
              "\n".join(f"  [{index}] {line}" for index, line in unlabelled), file=sys.stderr)
        return 1
    if failure is None:
        print(f"\n{args.notebook}: all {len(notebook.cells)} cells ran.")
        return 0
    if failure.ename == NO_GPU:
        print(f"\n{args.notebook}: stopped at the first launch: this machine has no usable NVIDIA GPU.\n"
              f"  {failure.evalue.splitlines()[0]}\n"
              "  Every cell before it ran: the kernel compiled with NVRTC and its signature was checked.\n"
              "  Run the notebook on a machine with an NVIDIA GPU and driver to launch it.")
        return 0
    print(f"\n{args.notebook}: failed with {failure.ename}: {failure.evalue}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
