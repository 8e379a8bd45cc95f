#!/usr/bin/env bash
# On the GPU host, in ONE device call: pip-install xcuda into the host's own Python 3.12 (the one with
# CuPy 14, PyTorch 2.11, cuda.core, scikit-build-core, pybind11 and cmake), run the interop tests with
# real CuPy and PyTorch arrays, streams and DLPack (none may skip), and run every notebook in ipykernel
# with `%load_ext xcuda` through nbclient. The executed notebooks come back in $OUT, for nbconvert to
# HTML under docs/ (tests/gpu_host/render_html.sh, here).
#
#   device run, carry [".whl"], command:  bash tests/gpu_host/run_interop.sh
#
# The host has no ipykernel, jupyter_client or nbclient: they travel as wheels in .whl/ (gitignored),
# downloaded on the development machine, in the repository's root, with:
#
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
#     --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl -r tests/gpu_host/wheels.txt
#
# (about 15 MiB: ipykernel 7, IPython 9, jupyter_client 8, nbclient and what they need that the host
# lacks; versions as the test venv resolves them). Exits non-zero when the install, a test, a skip or a
# notebook fails; $OUT/summary.txt says which.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-$repo/build/gpu-host-out}
mkdir -p "$out"
cd "$repo"
python=${PYTHON:-python3}
site=${XCUDA_WHEEL_SITE:-/tmp/site}   # where the carried wheels go (another folder to try it elsewhere)
status=0
summary() { echo "$*" | tee -a "$out/summary.txt"; }
: >"$out/summary.txt"

{
  echo "== host"; nvidia-smi -L 2>&1; "$python" -c 'import sys; print(sys.version)'
  "$python" -m pip list 2>/dev/null | grep -iE '^(cupy|torch|cuda-core|cuda-bindings|numpy|scikit-build-core|pybind11|cmake|nvidia-cuda-nvrtc) '
} >"$out/install.log" 2>&1

# 1. The carried wheels, beside (not into) the host's site-packages.
if ! "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
     .whl/*.whl >>"$out/install.log" 2>&1; then
  summary "FAILED: installing the carried wheels (.whl/ carried? see install.log)"; exit 1
fi
export PYTHONPATH=$site

# 2. xcuda into the host's Python, with its own build tools. Headers: /usr/local/cuda, else nvcc's toolkit.
if [ -z "${CUDA_HOME:-}" ] && [ ! -f /usr/local/cuda/include/cuda.h ] && command -v nvcc >/dev/null; then
  export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
fi
start=$(date +%s)
if ! CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$python" -m pip install --no-build-isolation --no-deps -v . \
     >>"$out/install.log" 2>&1; then
  summary "FAILED: pip install --no-build-isolation . (see install.log)"; exit 1
fi
summary "installed: pip install --no-build-isolation . took $(( $(date +%s) - start )) s"
"$python" - >>"$out/install.log" 2>&1 <<'PY'
import json, subprocess, xcuda
print("xcuda", xcuda.__version__, "from", xcuda.__file__)
print("NVRTC:", json.dumps(xcuda.nvrtc_library(), indent=1))
print(subprocess.run(["readelf", "-d", xcuda.__file__], capture_output=True, text=True).stdout)
PY

# 3. The interop tests, with the pip-installed module (no build tree here): none may skip.
XCUDA_BUILD_DIR=$repo/build-gpu-host "$python" -m pytest tests/runtime/test_interop.py -v -ra -p no:cacheprovider \
  >"$out/interop.log" 2>&1
rc=$?
tail -n 3 "$out/interop.log" | tee -a "$out/summary.txt"
if [ $rc -ne 0 ]; then
  summary "FAILED: tests/runtime/test_interop.py (exit $rc; see interop.log)"; status=1
elif grep -qE "[0-9]+ skipped" "$out/interop.log"; then
  summary "FAILED: interop tests skipped on the GPU host (see interop.log)"; status=1
fi

# 4. The notebooks in ipykernel with %load_ext xcuda, through nbclient; the executed copies to $OUT.
# 04-several-hosts starts ipyparallel engines, which this Python lacks: it runs in the Debian runtime
# (tests/package/test_notebooks.py) instead.
# The kernelspec "python3" is this Python's ipykernel (not a system one that names another Python).
kernels=$(mktemp -d)
mkdir -p "$kernels/kernels/python3"
printf '{"argv": ["%s", "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "Python 3 (ipykernel)", "language": "python"}\n' \
  "$(command -v "$python")" >"$kernels/kernels/python3/kernel.json"
export JUPYTER_PATH=$kernels
for notebook in notebooks/0[1-3]-*.ipynb; do
  name=$(basename "$notebook")
  if "$python" notebooks/run_notebook.py "$notebook" --kernel python3 --load-ext xcuda --timeout 600 \
       --save "$out/$name" >>"$out/notebooks.log" 2>&1; then
    summary "ran: $(grep -F "$notebook:" "$out/notebooks.log" | tail -n 1)"
  else
    summary "FAILED: $name (see notebooks.log)"; status=1
  fi
done
exit $status
