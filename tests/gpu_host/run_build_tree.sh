#!/usr/bin/env bash
# On the GPU host, in ONE device call, with Debian's packed runtime (../shared/device/README.md): the
# build tree's GPU tests, a before/after of the launch and unchanged-cell costs, and the tutorial
# notebooks executed in the xcuda kernel. What comes back in $OUT: gpu-tests.log, ab.log, and the
# executed notebooks (01-saxpy.ipynb, 02-ptx-inspection.ipynb) for docs/notebooks/.
#
#   device run, carry [".gpu", ".devrt"], command:  bash tests/gpu_host/run_build_tree.sh
#
# .gpu/build holds the build's python/, bin/, lib/ and share/ (no objects), .gpu/base the python/ of the
# build to compare against (-DXCUDA_BUILD_KERNEL=OFF); .devrt the packed runtime. PYTEST_ARGS narrows the
# tests (default: every test marked gpu, and the launches from several threads against the fake driver).
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-$repo/build/gpu-host-out}
mkdir -p "$out"
cd "$repo"
source .devrt/runtime-env.sh >/dev/null
export XCUDA_BUILD_DIR=$repo/.gpu/build
nvidia-smi -L | tee "$out/gpu.txt"
status=0
# -v: one line per test as it ends, so a run cut off by the time limit still names what failed (a -q run
# cut off on 2026-12-07 left only dots and Fs).
timeout ${TEST_TIMEOUT:-330} python3 -m pytest tests -v -p no:cacheprovider -rfs ${PYTEST_ARGS:--m gpu} \
    >"$out/gpu-tests.log" 2>&1 || status=1
grep -E " (FAILED|ERROR)" "$out/gpu-tests.log" | head -40; tail -n 3 "$out/gpu-tests.log"
if [ -d .gpu/base ]; then
  # .gpu/base2, when there, is a third build (each round runs base, base2, build)
  bash tests/bench/ab_rounds.sh .gpu/base $( [ -d .gpu/base2 ] && echo .gpu/base2 ) .gpu/build "${AB_ROUNDS:-6}" 3 >"$out/ab.log" 2>&1 || status=1
  tail -n 14 "$out/ab.log"
fi
# The kernelspec the tests made for this copied tree (tests/conftest.py), for nbclient.
export JUPYTER_PATH=$XCUDA_BUILD_DIR/share/jupyter-tests
for notebook in 01-saxpy 02-ptx-inspection; do
  timeout 200 python3 notebooks/run_notebook.py notebooks/$notebook.ipynb --save "$out/$notebook.ipynb" \
      >"$out/$notebook.log" 2>&1 || { status=1; echo "$notebook failed: see $notebook.log"; }
  tail -n 3 "$out/$notebook.log"
done
exit $status
