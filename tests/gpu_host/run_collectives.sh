#!/usr/bin/env bash
# On the GPU host, in one device call: xcuda's NCCL collectives (issue 50) with Debian's packed runtime and
# nccl4py. nccl4py, cuda-core, cuda-bindings 13 and cuda-pathfinder come as cp311 wheels in .gpunccl/wheels
# (downloaded here: pip download --only-binary=:all: --python-version 3.11 --platform manylinux_2_28_x86_64
# --no-deps nccl4py cuda-core "cuda-bindings~=13.0" cuda-pathfinder), unpacked onto PYTHONPATH; the NCCL
# library is the host's own (PyTorch's libnccl.so.2, found by path). The build is .gpu/build (as for
# run_build_tree.sh). To fit the carry limit the wheels may travel unpacked, stripped and packed as
# .gpunccl/site.tar.xz (about 8 MB instead of 18) in place of .gpunccl/wheels/*.whl.
#
#   device run, carry [".gpu", ".gpunccl", ".devrt"], command:  bash tests/gpu_host/run_collectives.sh
#
# Runs the collectives' tests (every gpu one; the multigpu ones where the host has 2+ GPUs) and, with
# BENCH=1 on a host with 2+ GPUs, tests/bench/bench_collectives.py against PyTorch's all_reduce
# (TORCH_PYTHON, default python3.12, the host's Python with PyTorch) into $OUT/collectives.md.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-$repo/build/gpu-host-out}
mkdir -p "$out"
cd "$repo"
nccl_so=$(find / -xdev -name 'libnccl.so.2*' 2>/dev/null | head -1)
echo "NCCL: ${nccl_so:-none found}"
torch_python=${TORCH_PYTHON:-$(command -v python3.12 || true)}
source .devrt/runtime-env.sh >/dev/null
site=$(mktemp -d)
for wheel in .gpunccl/wheels/*.whl; do
  [ -f "$wheel" ] && python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" "$wheel" "$site"
done
[ -f .gpunccl/site.tar.xz ] && tar xJf .gpunccl/site.tar.xz -C "$site" --strip-components=1
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} XCUDA_BUILD_DIR=$repo/.gpu/build
[ -n "$nccl_so" ] && export LD_LIBRARY_PATH=$(dirname "$nccl_so")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi -L | tee "$out/gpu.txt"
python3 -c "import nccl.core as n; print('nccl4py', n.__version__)" 2>&1 | tail -3
status=0
timeout ${TEST_TIMEOUT:-300} python3 -m pytest tests/kernel/test_collectives.py tests/kernel/test_engines.py -q \
    -p no:cacheprovider -rfs >"$out/collectives-tests.log" 2>&1 || status=1
tail -n 25 "$out/collectives-tests.log"
if [ "${BENCH:-0}" = 1 ] && [ -n "$torch_python" ]; then
  TORCH_PYTHON=$torch_python timeout 400 python3 tests/bench/bench_collectives.py --rounds "${ROUNDS:-5}" \
      --results "$out/results.json" | tee "$out/collectives.md" || status=1
fi
exit $status
