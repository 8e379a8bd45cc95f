"""Compile diagnostics: NVRTC's log parsed into (line, column, severity, message) with hints for the
known traps, shown as HTML with a caret and as text; warnings do not fail the cell."""
import xml.etree.ElementTree as ElementTree

import pytest
from IPython.core.interactiveshell import InteractiveShell

import xcuda


def compile_error(source, **options):
    with pytest.raises(xcuda.CompileError) as error:
        xcuda.compile(source, name="diagnostics", arch=options.pop("arch", "compute_75"), **options)
    return error.value


def test_errors_carry_line_column_severity_and_the_source_line():
    error = compile_error('extern "C" __global__ void f(int* x)\n{\n  x[0] = missing_name;\n}\n')
    [first] = [d for d in error.diagnostics if d["severity"] == "error"]
    assert first["line"] == 3 and first["column"] == 10
    assert "missing_name" in first["message"] and first["source_line"] == "  x[0] = missing_name;"
    html = error.html
    ElementTree.fromstring(f"<root>{html}</root>")
    assert "line 3, column 10" in html and "         ^" in html


def test_a_host_library_use_in_device_code_gets_a_hint():
    error = compile_error('#include <iostream>\nextern "C" __global__ void f() { std::cout << 1; }\n')
    assert any("headers such as <iostream>" in d["hint"] for d in error.diagnostics)
    assert "hint: NVRTC compiles device code only" in str(error)


def test_an_unsupported_arch_names_the_supported_ones():
    error = compile_error('extern "C" __global__ void f() {}\n', arch="sm_20")
    assert any("75" in d["hint"] and "90" in d["hint"] for d in error.diagnostics), error.diagnostics


def test_warnings_are_shown_without_failing_the_cell(capfd):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    shell.run_cell_magic("cuda", "--arch compute_75 --name warned",
                         'extern "C" __global__ void w(int* x) { int unused = 3; x[0] = 1; }\n')
    assert "warned" in shell.user_ns
    # Shown as the errors are: where, what, the line with a caret (text/plain here, HTML in a notebook).
    shown = capfd.readouterr().out
    assert 'line 2, column 44: warning: variable "unused" was declared but never referenced' in shown, shown
    assert "int unused = 3;" in shown


def test_the_magic_shows_the_messages_as_html_before_the_traceback():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    shown = []
    original = shell.display_pub.publish
    shell.display_pub.publish = lambda data, **kwargs: shown.append(data)
    try:
        with pytest.raises(xcuda.CompileError):
            shell.run_cell_magic("cuda", "--arch compute_75", 'extern "C" __global__ void f() { nope(); }\n')
    finally:
        shell.display_pub.publish = original
    assert any("xcuda-diagnostics" in d.get("text/html", "") for d in shown)
