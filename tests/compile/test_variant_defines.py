"""kernel.variant(defines=[...], options=[...]) against the module's own macros (runtime/modules/kernel_variant):
a variant's macro wins for that variant, however the module's was given (%%cuda -D, a raw -D after --,
xcuda.compile(options=['-D...']), defines=); the module itself keeps its own. NVRTC takes the last of several
definitions and puts raw options after the defines, so without the rule a raw -D of the module beat the
variant's define."""
import pytest
from IPython.core.interactiveshell import InteractiveShell

import xcuda

# X stored as a float shows in the PTX as its bits: 1.0f is 1065353216, 2.0f 1073741824, 3.0f 1077936128, 4.0f
# 1082130432.
SOURCE = ('#ifndef X\n#define X 3\n#endif\n'
          'extern "C" __global__ void scaled(float* a) { a[0] = X; }\n')
ONE, TWO, THREE, FOUR = "1065353216", "1073741824", "1077936128", "1082130432"


@pytest.fixture(scope="module")
def shell():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    return shell


@pytest.mark.parametrize("given", ["raw -D option", "defines=", "two-token -D", "--define-macro="])
def test_a_variants_define_wins_over_the_modules_however_that_was_given(given):
    options = {"raw -D option": {"options": ["-DX=1"]}, "defines=": {"defines": ["X=1"]},
               "two-token -D": {"options": ["-D", "X=1"]}, "--define-macro=": {"options": ["--define-macro=X=1"]}}
    module = xcuda.compile(SOURCE, arch="compute_80", **options[given])
    assert ONE in module.ptx
    variant = module.scaled.variant(defines=["X=2"])
    assert TWO in variant.ptx and ONE not in variant.ptx, variant.ptx
    assert ONE in module.ptx  # the module keeps its own


def test_a_variants_raw_define_wins_over_the_modules_define(shell):
    shell.run_cell_magic("cuda", "--arch compute_80 -D X=1", SOURCE)
    kernel = shell.user_ns["scaled"]
    assert TWO in kernel.variant(options=["-DX=2"]).ptx
    assert FOUR in kernel.variant(options=["--define-macro", "X=4"]).ptx


def test_a_raw_define_after_the_cells_options_and_a_variant_define(shell):
    shell.run_cell_magic("cuda", "--arch compute_80 -- -DX=1", SOURCE)
    kernel = shell.user_ns["scaled"]
    assert ONE in kernel.ptx
    assert FOUR in kernel.variant(defines=["X=4"]).ptx


def test_a_variant_define_replaces_the_modules_undefine():
    module = xcuda.compile(SOURCE, arch="compute_80", options=["-UX"])
    assert THREE in module.ptx
    assert TWO in module.scaled.variant(defines=["X=2"]).ptx


def test_other_macros_of_the_module_stay_in_the_variant():
    source = SOURCE.replace("a[0] = X;", "a[0] = X; a[1] = Y;")
    module = xcuda.compile(source, arch="compute_80", options=["-DX=1", "-DY=1"])
    variant = module.scaled.variant(defines=["X=2"])
    assert TWO in variant.ptx and variant.ptx.count(ONE) == 1  # X from the variant, Y still the module's
    assert "-DY=1" in variant.module.options and "-DX=1" not in variant.module.options, variant.module.options
