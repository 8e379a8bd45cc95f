"""One compile recipe per module: every later compile of a cell (the inspection compile behind lines(),
SASS and ptxas' resources; a variant; a replay's binary; the recipe %cuda_recover rebuilds from) uses the
header cells the cell was compiled with, even after a header cell changed."""
import shutil
from pathlib import Path

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

import xcuda

# 3.25f is 0f40500000 in PTX, 5.5f is 0f40B00000: which header a compile saw shows in its PTX.
HEADER_325 = "__device__ inline float vec_scale(float v) { return v * 3.25f; }\n"
HEADER_55 = "__device__ inline float vec_scale(float v) { return v * 5.5f; }\n"
CELL = ('#include "recipe_vecmath.cuh"\n'
        'extern "C" __global__ void scaled(float* x, int n)\n'
        '{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = vec_scale(x[i]); }\n')


def saw_325(ptx_text):
    return "0f40500000" in str(ptx_text).lower().replace("0F", "0f")


@pytest.fixture()
def module():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    shell.run_cell_magic("cuda_header", "recipe_vecmath.cuh", HEADER_325)
    # compute_90: PTX only, so lines(), SASS and ptxas' report need a compile of their own (sm_90).
    shell.run_cell_magic("cuda", "--name recipe_module --arch compute_90", CELL)
    yield shell.user_ns["recipe_module"]
    shell.run_cell_magic("cuda_header", "recipe_vecmath.cuh", HEADER_325)


def test_the_inspection_views_of_a_cell_that_includes_a_header_cell_use_the_header(module):
    kernel = module.scaled
    assert saw_325(module.ptx)
    lines = kernel.lines()
    assert saw_325(str(lines)), "lines() compiled without the header cell"
    assert kernel.ptxas_resources.registers > 0
    assert kernel.resources.registers > 0


def test_sass_of_a_cell_that_includes_a_header_cell(module):
    if not any(shutil.which(tool) or shutil.which(f"/usr/local/cuda/bin/{tool}") for tool in ("nvdisasm", "cuobjdump")):
        pytest.skip("no nvdisasm or cuobjdump on this machine (the CUDA toolkit's binary utilities): no SASS to show")
    assert "FMUL" in str(module.scaled.sass) or "FFMA" in str(module.scaled.sass)


def test_a_variant_keeps_the_modules_own_header_cells_after_the_header_changed(module):
    xcuda.set_header("recipe_vecmath.cuh", HEADER_55)
    assert module.stale
    variant = module.scaled.variant(defines=["VARIANT=1"])
    assert saw_325(variant.ptx), "the variant was compiled with the changed header, not the module's"
    assert saw_325(module.scaled.lines())


def test_the_recovery_recipe_rebuilds_with_the_modules_own_header_cells(module):
    recipe = module._recipe
    assert recipe["headers"] == {"recipe_vecmath.cuh": HEADER_325}
    xcuda.set_header("recipe_vecmath.cuh", HEADER_55)
    rebuilt = xcuda.compile(**recipe)
    assert saw_325(rebuilt.ptx)
    assert rebuilt.headers == {"recipe_vecmath.cuh": HEADER_325}


def test_a_replay_bundle_of_a_cell_that_includes_a_header_cell(module):
    xcuda.set_header("recipe_vecmath.cuh", HEADER_55)
    x = np.ones(64, dtype=np.float32)
    folder = Path(module.scaled[2, 32].replay_bundle(x, 64))
    try:
        assert folder.is_dir() and any(folder.iterdir())
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    # The replay's binary came from the module's recipe: the same compile as lines() (sm_90, line info).
    assert saw_325(module.scaled.lines())
