"""The compute-capability guard of the gpu tests that need sm_90 features (TMA, clusters).

xcuda.default_arch() falls back to compute_75 when no context can be made, as after a sticky fault earlier
in the same pytest process lost the session: a skip saying "compute_75 has none" then hid the fault (the
H100 run of 2026-12-07). This guard asks xcuda.info() first, which raises the loss with its cause, and fails
the test with it; only a device that really is older is skipped.
"""
import re

import pytest

import xcuda


def needs_compute_capability(major, what):
    arch = xcuda.default_arch()
    if int(re.match(r"\w+?_(\d+)", arch).group(1)) // 10 >= major:  # compute_90, sm_90a, compute_100
        return
    try:
        described = xcuda.info()
    except Exception as error:  # the session lost its GPU (or never had one): say why, do not skip
        pytest.fail(f"{what}: default_arch() is {arch} because the session has no usable device: {error}")
    name = next((line.split(None, 1)[1] for line in str(described).splitlines() if line.strip().startswith("name ")), "?")
    pytest.skip(f"{what} needs compute capability {major}.0; the device, {name}, compiles for {arch}")
