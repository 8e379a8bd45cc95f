# Extra checks on the GPU host (issue 28 item 2: integers in the stream slot; the pageable scenario 3 times with each build). Sourced after run_build_tree.sh, with PYTHONPATH at the build tree: bash tests/gpu_host/extra_checks.sh
echo "== issue 28 item 2: integers in the stream slot"
python3 - <<'PY'
import numpy as np, xcuda
m = xcuda.compile('extern "C" __global__ void fill(float* x, float v, unsigned n) { unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = v; }')
for value in (1024, 2**31):
    try:
        m.fill[1, 32, value]
        print(value, "NOT REFUSED")
    except TypeError as e:
        print(value, "refused:", str(e)[:120])
x = np.zeros(32, np.float32)
m.fill[1, 32](x, 3.0, 32)
print("session goes on:", bool((x == 3.0).all()), xcuda.device_count(), "device(s)")
PY
echo "== the pageable scenario, 3 times with each build"
for i in 1 2 3; do for b in .gpu/base/python .gpu/build/python; do
  PYTHONPATH=$b timeout 60 python3 tests/runtime/graph_transfer_scenarios.py pageable_copies_are_exact_for_every_way 2>&1 | tail -1 | sed "s#^#$b: #"
done; done
