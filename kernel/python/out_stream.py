"""The xcuda kernel's sys.stdout and sys.stderr (kernel/xcuda_interpreter.cpp runs this file, which CMake
embeds in the kernel binary, with `_write` and `_flush` in its namespace: the C++ output buffer's write and
flush, kernel/output_buffer.hpp). Text streams, as ipykernel's OutStream, so that code checking for one
(logging, tqdm, print(file=...)) accepts them.
"""
import io


class OutStream(io.TextIOBase):
    """A cell's standard output or error: writes are buffered and published as stream messages."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, name):
        super().__init__()
        self._name = name
        self.name = "<" + name + ">"

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        raise io.UnsupportedOperation("fileno: the kernel's output goes to the notebook, not to a file")

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not " + type(text).__name__)
        _write(self._name, text)
        return len(text)

    def flush(self):
        _flush()


import sys
sys.stdout = OutStream("stdout")
sys.stderr = OutStream("stderr")
