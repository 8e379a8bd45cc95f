"""The client of tests/kernel/test_several_hosts.py, run inside the controller's network namespace.

The test process itself stays in the machine's namespace, from where the namespaced controller cannot be
reached; it starts this script there (`ip netns exec`) and drives it over stdin/stdout: one JSON request
per line ({"step": name, ...}), one JSON answer per line ({"ok": true, ...} or {"ok": false, "error":
class name, "message": text}). The steps are notebooks/04-several-hosts.ipynb's flow, with the notebook's
%px lines as the DirectView calls they stand for.

    python3 several_hosts_client.py PROFILE_DIR ENGINES TIMEOUT_S
"""
import json
import os
import sys

import ipyparallel as ipp
import numpy as np

import xcuda

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}

extern "C" __global__ void block_sum(const float* x, double* total, size_t n)
{
    __shared__ double partial[256];
    double v = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        v += x[i];
    partial[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1)
    {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(total, partial[0]);
}
"""

N = 1 << 14  # the simulator's size: the flow, not the speed, is what these hosts test


def where_am_i(tests_folder):
    """On an engine: the addresses of its namespace and its pid (tests_folder: where network_hosts is)."""
    import os
    import sys

    sys.path.insert(0, tests_folder)
    from network_hosts import addresses_of_this_namespace

    kernel = get_ipython().kernel  # noqa: F821 (an engine's IPython)
    return {"addresses": addresses_of_this_namespace(), "pid": os.getpid(),
            "registration": str(getattr(kernel, "session", None) and kernel.engine_id)}


class Flow:
    def __init__(self, profile_dir, engines, timeout):
        self.timeout = timeout
        self.client = ipp.Client(profile_dir=profile_dir, timeout=timeout)
        self.client.wait_for_engines(engines, timeout=timeout)
        self.view = self.client[:]
        rng = np.random.default_rng(50)
        self.a = np.float32(2.0)
        self.x = rng.random(N, dtype=np.float32)
        self.y = rng.random(N, dtype=np.float32)

    def step_engines(self, request):
        url = self.client._config.get("registration") or self.client._config.get("interface")
        here = os.path.dirname(os.path.abspath(__file__))
        places = self.view.apply_async(ipp.interactive(where_am_i), here).get(timeout=self.timeout)
        return {"ids": self.client.ids, "controller": str(url), "places": places}

    def step_flow(self, request):
        view, timeout = self.view, self.timeout
        view.execute("get_ipython().run_line_magic('load_ext', 'xcuda')").get(timeout=timeout)
        view.push({"_source": SOURCE}).get(timeout=timeout)
        view.execute("get_ipython().run_cell_magic('cuda', '', _source)").get(timeout=timeout)
        parts = xcuda.parallel.scatter(view, "x", self.x, timeout=timeout)
        xcuda.parallel.scatter(view, "y", self.y, timeout=timeout)
        view.push({"a": self.a}).get(timeout=timeout)
        view.execute("import xcuda\nm = x.size\nout = xcuda.empty(m, 'float32')\n"
                     "saxpy[xcuda.grid_for(m, 256), 256](a, x, y, out, m)").get(timeout=timeout)
        out = xcuda.parallel.gather(view, "out", timeout=timeout)
        view.execute("total = xcuda.zeros(1, 'float64')\n"
                     "block_sum[min(xcuda.grid_for(x.size, 256), 1024), 256](x, total, x.size)").get(timeout=timeout)
        partial = xcuda.parallel.gather(view, "total", timeout=timeout)
        expected_sum = float(self.x.sum(dtype=np.float64))
        return {"parts": [{**p, "shape": list(p["shape"])} for p in parts],
                "saxpy_equal": bool(np.allclose(out, self.a * self.x + self.y, rtol=1e-6, atol=1e-6)),
                "sum": float(partial.sum()), "expected_sum": expected_sum,
                "sum_close": bool(np.isclose(partial.sum(), expected_sum, rtol=1e-9))}

    def step_gather(self, request):
        engines = request.get("engines")
        view = self.client[engines] if engines is not None else self.view
        out = xcuda.parallel.gather(view, request["name"], timeout=self.timeout)
        expected = self.a * self.x + self.y
        parts = np.array_split(expected, len(self.view.targets) if isinstance(self.view.targets, list)
                               else len(self.client.ids))
        wanted = np.concatenate([parts[i] for i in request.get("parts", range(len(parts)))])
        return {"equal": bool(np.allclose(out, wanted, rtol=1e-6, atol=1e-6)), "size": int(out.size)}

    def step_ids(self, request):
        return {"ids": self.client.ids}


def main():
    profile_dir, engines, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    flow = None
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if flow is None:
                flow = Flow(profile_dir, engines, timeout)
            answer = {"ok": True, **getattr(flow, "step_" + request["step"])(request)}
        except Exception as error:  # the test asserts on it
            answer = {"ok": False, "error": type(error).__name__, "message": str(error)}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
