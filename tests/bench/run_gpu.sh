#!/usr/bin/env bash
# The GPU benchmark in one command, run from the repository root on a GPU host:
#
#     tests/bench/run_gpu.sh          # tables on stdout and in ${OUT:-/tmp}/bench_gpu.md
#
# 1. builds the `xcuda` Python module against this host's python3 (no kernel, no C++ tests) in build-host/;
# 2. builds the C++ driver-API baseline (tests/bench/launch_baseline.cpp) with nvcc into build-host/bench/;
# 3. runs tests/bench/bench_gpu.py, which runs the baseline and measures xcuda, cuda.core, cuda.bindings,
#    CuPy and PyTorch in one process (see its docstring for what is measured and the goals).
# A benchmark only: it prints ratios against baselines measured in the same run and asserts nothing.
# Environment: OUT (folder for bench_gpu.md, default /tmp), CUDA_HOME (default: nvcc's toolkit, else
# /usr/local/cuda), JOBS (build parallelism, default 16).
set -euo pipefail
export PYTHONUNBUFFERED=1

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
python=$(command -v python3)
cuda_home=${CUDA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")")}
nvcc=$cuda_home/bin/nvcc
out_dir=${OUT:-/tmp}
mkdir -p "$out_dir"

echo "== building the xcuda module for $python ($("$python" --version 2>&1))"
cmake -S . -B build-host -DXCUDA_BUILD_KERNEL=OFF -DXCUDA_BUILD_TESTS=OFF -DPython_EXECUTABLE="$python"
cmake --build build-host --target xcuda_python -j"${JOBS:-16}"

echo "== building the C++ baseline with $nvcc"
mkdir -p build-host/bench
"$nvcc" -O2 -std=c++17 -o build-host/bench/launch_baseline tests/bench/launch_baseline.cpp \
    -lcuda -lnvrtc -Xlinker -rpath -Xlinker "$cuda_home/lib64"

echo "== running the benchmark"
XCUDA_BUILD_DIR=build-host "$python" tests/bench/bench_gpu.py \
    --baseline build-host/bench/launch_baseline --out "$out_dir/bench_gpu.md"

# 4. the compile benchmark (tests/bench/bench_compile.py: cold NVRTC compiles, xcuda's and CuPy's compile
#    caches), with the same module and Python; its tables also go to $out_dir/bench_compile.md.
echo "== running the compile benchmark"
XCUDA_BUILD_DIR=build-host "$python" tests/bench/bench_compile.py --out "$out_dir/bench_compile.md"

# 5. the multi-GPU benchmark (tests/bench/bench_multigpu.py: SAXPY split across every device against one,
#    copies between devices); with one GPU its multi-GPU rows say why they are skipped. Its tables also go
#    to $out_dir/bench_multigpu.md.
echo "== running the multi-GPU benchmark"
XCUDA_BUILD_DIR=build-host "$python" tests/bench/bench_multigpu.py --out "$out_dir/bench_multigpu.md"
