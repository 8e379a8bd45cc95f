"""Findings of trying JupyterLab and Notebook 7 as a new user would (issue 26, item 4): messages name
toolkit headers as headers (never "header cell"), CUB's umbrella header says which headers work and why,
carets land on the editor's column with tabs and non-ASCII text, a template kernel says how to instantiate
it, and %cuda_status says what made each module."""
import pytest
from IPython.core.interactiveshell import InteractiveShell

import xcuda


def diagnostics_of(source):
    with pytest.raises(xcuda.CompileError) as raised:
        xcuda.compile(source)
    return raised.value.diagnostics


def test_the_cub_umbrella_header_says_which_headers_work_and_never_calls_toolkit_headers_header_cells():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    result = shell.run_cell('%%cuda\n#include <cub/cub.cuh>\nextern "C" __global__ void k(int* x) { x[0] = 1; }\n')
    error = result.error_in_exec
    assert isinstance(error, xcuda.CompileError)
    text = str(error.args[0]) if error.args else str(error)
    diagnostics = error.diagnostics
    assert diagnostics and any("/cub/" in d["file"] or "/thrust/" in d["file"] for d in diagnostics)
    hints = {d["hint"] for d in diagnostics if "/cub/" in d["file"] or "/thrust/" in d["file"]}
    assert hints and all("<cub/block/block_reduce.cuh>" in h and "host code" in h for h in hints), hints
    assert "header cell /" not in text


def test_a_message_in_a_toolkit_header_is_located_as_a_header_not_a_header_cell(capsys):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    shell.run_cell('%%cuda\n#include <cub/cub.cuh>\nextern "C" __global__ void k(int* x) { x[0] = 1; }\n')
    shown = capsys.readouterr().out
    assert "header /usr/local/cuda" in shown or "header /" in shown, shown[:2000]
    assert "header cell /" not in shown, shown[:2000]


def test_the_caret_column_counts_characters_with_tabs_and_non_ascii_text():
    source = 'extern "C" __global__ void k(int* x)\n{\n\tx[0] = nope;\n    /* é ü */ x[1] = nada;\n}\n'
    by_line = {d["line"]: d for d in diagnostics_of(source)}
    # line 3: "\tx[0] = nope;" -> 'n' is the 9th character (the tab counts as one, as in the editor)
    assert by_line[3]["column"] == 9, by_line[3]
    # line 4: "    /* é ü */ x[1] = nada;" -> 'n' is the 22nd character (é and ü are two bytes each)
    assert by_line[4]["column"] == source.splitlines()[3].index("nada") + 1, by_line[4]


def test_launching_a_template_kernel_says_how_to_instantiate_it():
    module = xcuda.compile("template <class T> __global__ void scale(T* x, T a) { x[0] *= a; }\n")
    with pytest.raises(TypeError, match=r"--instantiate 'scale<float>'.*module\['scale<float>'\]"):
        module.scale[1, 1](None, 2.0)


def test_cuda_status_says_what_made_each_module():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    shell.run_cell_magic("cuda", "", 'extern "C" __global__ void status_k(float* x) { x[0] = 1; }\n')
    shell.user_ns["status_k"].variant(defines=["X=1"])
    text = repr(xcuda.status())
    assert "made by" in text
    assert "Kernel.variant() of status_k (not bound to a name; kept while referenced)" in text
    assert "a %%cuda cell or xcuda.compile()" in text


def test_cuda_status_names_a_cache_folder_under_home_from_home(monkeypatch):
    import os
    cache_dir = os.environ["XCUDA_CACHE_DIR"]  # tests/conftest.py: the build's test cache
    monkeypatch.setenv("HOME", os.path.dirname(cache_dir))
    text = repr(xcuda.status())
    assert "~/" + os.path.basename(cache_dir) in text, text
    assert cache_dir not in text, text
