"""The C++ unit tests built with AddressSanitizer and UndefinedBehaviorSanitizer (issue 28: the seeded fuzz
runs of the signature reader, the views' parsers and the simulator, under ASan+UBSan in CI).

`.ci/setup --tests` builds them into build/sanitize (-O1 -g1, -fsanitize=address,undefined,
-fno-sanitize-recover=undefined). Each binary runs whole, once: any sanitizer report (a heap overflow, a use
after free, a leak at exit, undefined behaviour such as a signed overflow or a null pointer given to memcpy)
fails its item with the report. Found and fixed when this came in: memset and memcpy of null pointers in the
simulator (an empty shared-memory block, a variable without initializer) and a signed overflow in a test's
inputs.
"""
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
BUILD = Path(os.environ.get("XCUDA_BUILD_DIR", REPO / "build")).resolve()
SANITIZED = Path(os.environ.get("XCUDA_SANITIZE_BUILD_DIR", BUILD / "sanitize")).resolve()
REPORTS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer")


# Leak checking at exit, where LeakSanitizer works: at the end of xcuda_core_tests (NVRTC loaded in the
# process, the compile worker's threads) its tracer itself crashes on this machine ("Tracer caught signal
# 11 ... LeakSanitizer has encountered a fatal error"), so that binary runs with ASan and UBSan but no leak
# check.
LEAK_CHECK = {"xcuda_core_tests": False, "xcuda_launch_tests": True, "xcuda_simulator_tests": True}


@pytest.mark.parametrize("binary", sorted(LEAK_CHECK))
def test_the_unit_tests_pass_under_asan_and_ubsan(binary):
    path = SANITIZED / "bin" / binary
    if not path.exists():
        pytest.skip(f"{path} was not built: `bash .ci/setup --tests` builds the sanitized C++ tests into {SANITIZED}")
    leaks = 1 if LEAK_CHECK[binary] else 0
    env = dict(os.environ, ASAN_OPTIONS=f"detect_leaks={leaks}:abort_on_error=0:exitcode=23",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=24")
    env.pop("XCUDA_LIBCUDA", None)
    ran = subprocess.run([str(path)], capture_output=True, text=True, timeout=1200, env=env)
    output = ran.stdout + ran.stderr
    reports = [line for line in output.splitlines() if any(marker in line for marker in REPORTS)]
    assert not reports, "\n".join(reports[:20]) + "\n" + output[-4000:]
    assert ran.returncode == 0, output[-4000:]
    assert "[  PASSED  ]" in output, output[-2000:]
