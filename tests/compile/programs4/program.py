"""What one program of the 24-program list is: its cells, the header cells it pastes first, and `run(ns)`."""
from dataclasses import dataclass, field


@dataclass
class Program:
    name: str
    cells: list  # (magic line after %%cuda, source)
    run: object  # run(ns) -> [(name, got, expected), ...]: the launches its host code makes
    provenance: str  # the public program it is written after: repository, path, licence
    family: str  # the family: CUDA samples, mini-nbody, cuRAND, CuPy, PyCUDA, GPU MODE
    tolerance: dict = field(default_factory=dict)  # assert_allclose's rtol/atol where the device rounds otherwise
    headers: list = field(default_factory=list)  # (name, source) pasted with %%cuda_header first
    shrunk: str = ""  # where a size is smaller than the published one, which and why
    # Pointee types the signature reader cannot see (cuRAND's states live in curand_kernel.h, a system header
    # it does not read): their pointers stay untyped and take xcuda.Pointer(array.ptr), as the programs pass them.
    opaque: tuple = ()


def xcuda():
    import xcuda as module

    return module


def cdiv(a, b):
    return (a + b - 1) // b
