"""Issue 46's 24-program list: the programs its first paragraph tried as a new user would (CUDA samples,
mini-nbody, cuRAND Monte Carlo, CuPy and PyCUDA examples, a GPU MODE lecture), with the six CUDA samples,
the GPU MODE lecture 5 matmul and PyCUDA's demo_struct it names. PROGRAMS lists them in that order."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cuda_samples_more import MORE_SAMPLES  # noqa: E402
from cuda_samples_named import NAMED_SAMPLES  # noqa: E402
from other_families import OTHER_FAMILIES  # noqa: E402

PROGRAMS = [*NAMED_SAMPLES, *MORE_SAMPLES, *OTHER_FAMILIES]
