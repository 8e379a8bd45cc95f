#!/usr/bin/env bash
# The GPU benchmark in one command, run from the repository root on a GPU host:
#
#     tests/bench/run_gpu.sh          # tables on stdout, in ${OUT:-/tmp}/bench_*.md and ${OUT:-/tmp}/results.json
#
# 1. builds the `xcuda` Python module against this host's python3 (no kernel, no C++ tests) in build-host/;
# 2. builds the C++ driver-API baseline (tests/bench/launch_baseline.cpp) with nvcc into build-host/bench/;
# 3. bench_gpu.py: launch cost, SAXPY bandwidth, the CUDA Python tutorial end to end (every way of copying
#    pageable numpy arrays beside C++ pageable and page-locked) against C++, cuda.core, cuda.bindings, CuPy
#    and PyTorch in one process                                                      -> $OUT/bench_gpu.md
# 4. bench_compile.py: cold NVRTC compiles, xcuda's and CuPy's compile caches, where a disk hit's time goes
#                                                                                    -> $OUT/bench_compile.md
# 5. bench_transfers.py: a 256 MiB numpy array to and from the device in each way    -> $OUT/bench_transfers.md
# 6. bench_graphs.py: a chain of 100 small kernels eager and replayed as a CUDA graph -> $OUT/bench_graphs.md
# 7. bench_multigpu.py: SAXPY across every device; with one GPU its rows say why they are skipped
#                                                                                    -> $OUT/bench_multigpu.md
# 8. launch_rounds.py: the launch host costs of step 3 again over 5 alternating rounds, pinned to one core and
#    not, each round in new processes: the medians issue 27's goal 1 is judged by      -> $OUT/launch_rounds.md
# 9. launch_baseline variants: C++ launches of SAXPY and 16 + 16 through other driver calls (the parameters as one
#    buffer, cuLaunchKernelEx, other streams) beside the plain loop, pinned and not  -> $OUT/launch_variants.txt
# 10. launch_floor.py: xcuda's launch against the cheapest launch a Python call can make and the C loop, in one
#    process, pinned and not                                                         -> $OUT/launch_floor.md
# 11. staging_ab.py: the tutorial with new numpy arrays every call over 5 alternating rounds of new processes, the
#    C++ page-locked tutorial a process of its own in each: issue 48's goal 3 is judged by these medians
#                                                                                    -> $OUT/tutorial_rounds.md
# 12. the gpu-marked tests of CUDA graphs and transfers (tests/runtime/test_graphs_transfers.py -m gpu), when pytest
#    is there                                                                        -> $OUT/gpu_tests.log
# Steps 3-8, 10 and 11 also write their tables into $OUT/results.json (--results: an earlier run's file there is
# updated, not replaced, so give each run a new OUT). Then, in the checkout the run's files came back to, `python3 tests/bench/assemble_results.py --merge
# $OUT/results.json` takes them into tests/bench/results.json and writes tests/bench/RESULTS.md from it.
#
# A benchmark only: each script prints ratios against baselines measured in the same run and asserts
# nothing; a failing step is reported and the others still run (the exit status says whether any failed).
# About 8 minutes on the lent nvidia-h200 (16 cores): the build 1-2, bench_compile 2, the rounds 2, the others 2-3.
# Environment: OUT (output folder, default /tmp), XCUDA_BENCH_COMMIT (the commit the entries name, where the copy
# of the tree has no git; docs/environment.md), CUDA_HOME (default: nvcc's toolkit, else /usr/local/cuda),
# JOBS (build parallelism, default 16), LAUNCH_ROUNDS (steps 8 and 11, default 5), STEPS (the steps 3-12 to run,
# default "gpu compile transfers graphs multigpu rounds variants floor tutorial tests").
set -uo pipefail
export PYTHONUNBUFFERED=1

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
python=$(command -v python3)
cuda_home=${CUDA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")")}
nvcc=$cuda_home/bin/nvcc
out_dir=${OUT:-/tmp}
steps=" ${STEPS:-gpu compile transfers graphs multigpu rounds variants floor tutorial tests} "
mkdir -p "$out_dir"
status=0
started=$(date +%s)
elapsed() { echo "   ($(( $(date +%s) - started )) s since the start)"; }
step() {  # step NAME COMMAND...: runs it when NAME is in STEPS; a failure is reported, not fatal
  local name=$1
  shift
  case "$steps" in *" $name "*) ;; *) echo "== skipping $name (not in STEPS)"; return 0 ;; esac
  echo "== $name: $*"
  "$@"
  local rc=$?
  if [ $rc -ne 0 ]; then
    echo "== $name FAILED (exit $rc)"
    status=1
  fi
  elapsed
}

echo "== building the xcuda module for $python ($("$python" --version 2>&1))"
cmake -S . -B build-host -DXCUDA_BUILD_KERNEL=OFF -DXCUDA_BUILD_TESTS=OFF -DPython_EXECUTABLE="$python" || exit 1
cmake --build build-host --target xcuda_python -j"${JOBS:-16}" || exit 1
elapsed

echo "== building the C++ baseline with $nvcc"
mkdir -p build-host/bench
"$nvcc" -O2 -std=c++17 -o build-host/bench/launch_baseline tests/bench/launch_baseline.cpp \
    -lcuda -lnvrtc -Xlinker -rpath -Xlinker "$cuda_home/lib64" || exit 1
elapsed

export XCUDA_BUILD_DIR=build-host
baseline=build-host/bench/launch_baseline
results=$out_dir/results.json
step gpu "$python" tests/bench/bench_gpu.py --baseline "$baseline" --out "$out_dir/bench_gpu.md" --results "$results"
step compile "$python" tests/bench/bench_compile.py --out "$out_dir/bench_compile.md" --results "$results"
step transfers "$python" tests/bench/bench_transfers.py --baseline "$baseline" --out "$out_dir/bench_transfers.md" \
    --results "$results"
step graphs "$python" tests/bench/bench_graphs.py --baseline "$baseline" --out "$out_dir/bench_graphs.md" \
    --results "$results"
step multigpu "$python" tests/bench/bench_multigpu.py --out "$out_dir/bench_multigpu.md" --results "$results"
step rounds "$python" tests/bench/launch_rounds.py --baseline "$baseline" --rounds "${LAUNCH_ROUNDS:-5}" \
    --out "$out_dir/launch_rounds.md" --results "$results"
step variants bash -c "set -o pipefail; { echo '# pinned (taskset -c 3)'; taskset -c 3 \"$baseline\" variants; echo '# unpinned'; \
    \"$baseline\" variants; } | tee \"$out_dir/launch_variants.txt\""
rm -f "$out_dir/launch_floor.md"
step floor bash -c "taskset -c 3 \"$python\" tests/bench/launch_floor.py build-host --floor-dir build-host/bench/floor \
    --out \"$out_dir/launch_floor.md\" --results \"$results\" && \"$python\" tests/bench/launch_floor.py build-host \
    --floor-dir build-host/bench/floor --out \"$out_dir/launch_floor.md\" --results \"$results\""
step tutorial bash -c "set -o pipefail; \"$python\" tests/bench/staging_ab.py build-host --rounds \"${LAUNCH_ROUNDS:-5}\" \
    --baseline \"$baseline\" --results \"$results\" | tee \"$out_dir/tutorial_rounds.md\""
if "$python" -c "import pytest" 2>/dev/null; then
  # The scenarios in child processes on the GPU; the fake-driver ones need the test build, not made here.
  step tests bash -c "\"$python\" -m pytest tests/runtime/test_graphs_transfers.py -m gpu -v -ra -p no:cacheprovider \
      >\"$out_dir/gpu_tests.log\" 2>&1; rc=\$?; tail -n 20 \"$out_dir/gpu_tests.log\"; exit \$rc"
else
  echo "== tests: no pytest in $python; the gpu tests were not run" | tee "$out_dir/gpu_tests.log"
fi
echo "== done in $(( $(date +%s) - started )) s; outputs in $out_dir (the tables for results.json in $results)"
exit $status
