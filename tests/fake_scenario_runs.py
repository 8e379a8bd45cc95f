"""Runs one scenario of a scenario script against the fake driver (tests/fake_driver) in a child process, as
the fake-driver tests of tests/runtime do: XCUDA_LIBCUDA pointing at the fake, the build's python folder first
on the path, XCUDA_DEVICE unset."""
import os
import subprocess
import sys


def run_against_the_fake_driver(script, name, build_dir, env_update=None, drop=()):
    """Runs `python script name`; asserts it exits 0 and prints 'scenario held: name'."""
    library = build_dir / "lib" / "libxcuda_fake_cuda.so"
    assert library.exists(), f"{library} was not built: configure with -DXCUDA_BUILD_TESTS=ON"
    env = dict(os.environ)
    for key in ("XCUDA_DEVICE", *drop):
        env.pop(key, None)
    env.update(env_update or {})
    env["XCUDA_LIBCUDA"] = str(library)
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, str(script), name], capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode == 0, f"scenario {name} failed:\n{ran.stdout[-3000:]}\n{ran.stderr[-6000:]}"
    assert f"scenario held: {name}" in ran.stdout
