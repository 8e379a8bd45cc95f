"""One source line, every number xcuda gives it: run by test_cell_lines_on_the_simulator.py in a child process
with XCUDA_DEVICE=simulator, in a plain IPython shell (the cells get their In[N] as in a notebook).

Prints one JSON line, "numbers: {...}", with the line each message and view names for the same source line
(the store `out[i] = 1.0f;`, line 5 of its cell as the editor counts it, the %%cuda line being line 1), and
the cell numbers they name.
"""
import json
import re

import numpy as np
from IPython.core.interactiveshell import InteractiveShell

CELL = """%%cuda
extern "C" __global__ void oob(float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = 1.0f;
}
"""
STORE = "out[i] = 1.0f;"


def main():
    shell = InteractiveShell.instance()
    published = []
    publish = shell.display_pub.publish

    def recording(data, metadata=None, **kwargs):
        published.append(data)
        return publish(data, metadata=metadata, **kwargs)

    shell.display_pub.publish = recording
    assert shell.run_cell("%load_ext xcuda").success
    numbers = {}

    # A compile error on that line.
    bad = shell.run_cell(CELL.replace(STORE, "out[i] = undefined_name;"), store_history=True)
    numbers["compile_error"] = bad.error_in_exec.diagnostics[0]["line"]
    numbers["compile_error_cell"] = int(re.search(r"Cell In\[(\d+)\], line", str(bad.error_in_exec)).group(1))
    numbers["compile_error_count"] = bad.execution_count

    built = shell.run_cell(CELL, store_history=True)
    assert built.success, built.error_in_exec
    numbers["cell_count"] = built.execution_count
    kernel = shell.user_ns["oob"]

    # kernel.lines(): the source line above its instructions.
    numbers["lines_view"] = int(re.search(r"^\s*(\d+) \|\s+" + re.escape(STORE), kernel.lines().text, re.M).group(1))
    # %%cuda --ptx's PTX: the source line written above its instructions.
    numbers["ptx_by_line"] = int(re.search(r"// +(\d+) \|\s+" + re.escape(STORE), kernel.module.ptx_by_line).group(1))

    # The simulator's fault, its text and the mark the editor gets.
    shell.user_ns["out"] = np.zeros(40, dtype=np.float32)
    published.clear()
    fault = shell.run_cell("oob[2, 32](out, 40)", store_history=True)
    error = fault.error_in_exec
    where = re.search(r"Cell In\[(\d+)\], line (\d+)", str(error))
    numbers["fault"] = int(where.group(2))
    numbers["fault_cell"] = int(where.group(1))
    numbers["fault_names_a_path"] = "/cell" in str(error)
    marks = [d for data in published for d in data.get("application/vnd.xcuda.diagnostics+json", {}).get("diagnostics", [])]
    numbers["mark"] = marks[0]["line"] if marks else None
    numbers["mark_cell"] = marks[0]["cell"] if marks else None

    # xcuda.trace: the store's step.
    import xcuda

    steps = xcuda.trace(kernel, (1, 32), np.zeros(32, dtype=np.float32), 32, thread=(3, 0, 0)).steps
    numbers["trace"] = [s.line for s in steps if s.ptx.startswith("st.global")][0]
    print("numbers: " + json.dumps(numbers), flush=True)


if __name__ == "__main__":
    main()
