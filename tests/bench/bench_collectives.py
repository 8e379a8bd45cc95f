"""All-reduce bus bandwidth: xcuda's collectives (nccl4py) against PyTorch's all_reduce (NCCL), same host, same
run (issue 50 item 3: xcuda at >= 90% of PyTorch's).

    python3 tests/bench/bench_collectives.py [--mib 1024] [--rounds 5] [--torch-python /usr/bin/python3.12] [--results]

One process per GPU for each side (as engines or torch.distributed ranks are), rank 0 reporting: xcuda's ranks
join one communicator through a unique id written to a file; PyTorch's through a TCP store on 127.0.0.1. Each
round runs xcuda, then PyTorch (alternating, in fresh processes), each timing ITERATIONS all-reduces of a
float32 array of --mib MiB after WARMUP, with the device synchronised around them (wall clock, per call).
Bus bandwidth = bytes x 2 (n - 1) / n / time (NCCL's own definition, nccl-tests' busbw); with one GPU it is 0,
so the table shows the algorithm bandwidth (bytes / time) as well. The table prints the median over rounds
and xcuda's ratio to PyTorch; the result is checked on every rank (the sum of ranks' values).

PyTorch runs in another interpreter where it is installed (--torch-python; the GPU host's python3.12);
NCCL_NVLS_ENABLE=0 and TORCH_SYMM_MEM_DISABLE_MULTICAST=1 are set for both sides (no NVLink multicast).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import add_results_option, benchmark_entry, markdown_table, result_row, write_results  # noqa: E402

WARMUP, ITERATIONS = 5, 20
ENVIRONMENT = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def xcuda_rank(rank, n, mib, rendezvous):
    import numpy as np

    import xcuda
    from xcuda import collectives

    xcuda.set_device(rank)
    if rank == 0:
        import nccl.core as nccl

        Path(rendezvous + ".part").write_bytes(bytes(nccl.get_unique_id()))
        os.replace(rendezvous + ".part", rendezvous)
    while not os.path.exists(rendezvous):
        time.sleep(0.01)
    comm = collectives.Communicator.join(n, rank, Path(rendezvous).read_bytes())
    array = xcuda.to_device(np.full(mib << 18, rank + 1, np.float32))
    for _ in range(WARMUP):
        comm.all_reduce(array, op="sum")
    xcuda.synchronize()
    start = time.perf_counter()
    for _ in range(ITERATIONS):
        comm.all_reduce(array, op="sum", wait=False)
    comm.stream.synchronize()
    seconds = (time.perf_counter() - start) / ITERATIONS
    # WARMUP + ITERATIONS sums of (1 + ... + n), starting from rank + 1: check one element
    expected = (n * (n + 1) // 2) * n ** (WARMUP + ITERATIONS - 1) if n > 1 else 1
    got = float(np.asarray(array[:1])[0])
    return seconds, abs(got - expected) <= 1e-3 * abs(expected)


def torch_rank(rank, n, mib, port):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n)
    array = torch.full((mib << 18,), float(rank + 1), dtype=torch.float32, device="cuda")
    for _ in range(WARMUP):
        dist.all_reduce(array)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(ITERATIONS):
        dist.all_reduce(array)
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / ITERATIONS
    expected = (n * (n + 1) // 2) * n ** (WARMUP + ITERATIONS - 1) if n > 1 else 1
    good = abs(float(array[0]) - expected) <= 1e-3 * abs(expected)
    dist.destroy_process_group()
    return seconds, good


def worker(args):
    if args.side == "xcuda":
        seconds, good = xcuda_rank(args.rank, args.n, args.mib, args.rendezvous)
    else:
        seconds, good = torch_rank(args.rank, args.n, args.mib, int(args.rendezvous))
    print(json.dumps({"rank": args.rank, "seconds": seconds, "good": good}), flush=True)


def one_side(side, python, n, mib, port):
    """One round of one side: n rank processes; returns (seconds per all-reduce of rank 0, all good)."""
    with tempfile.TemporaryDirectory() as folder:
        rendezvous = os.path.join(folder, "unique-id") if side == "xcuda" else str(port)
        processes = [subprocess.Popen([python, __file__, "--worker", side, "--rank", str(rank), "--n", str(n),
                                       "--mib", str(mib), "--rendezvous", rendezvous],
                                      stdout=subprocess.PIPE, env=dict(os.environ, **ENVIRONMENT), text=True)
                     for rank in range(n)]
        answers = []
        for process in processes:
            out, _ = process.communicate(timeout=600)
            if process.returncode != 0:
                raise RuntimeError(f"{side} rank failed ({process.returncode})")
            answers.append(json.loads(out.strip().splitlines()[-1]))
    return answers[0]["seconds"], all(a["good"] for a in answers)


def device_count():
    import xcuda

    return xcuda.device_count()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON", "python3"))
    parser.add_argument("--worker", choices=["xcuda", "torch"])
    parser.add_argument("--rank", type=int)
    parser.add_argument("--n", type=int)
    parser.add_argument("--rendezvous")
    add_results_option(parser)
    args = parser.parse_args()
    if args.worker:
        args.side = args.worker
        return worker(args)
    n = device_count()
    size = args.mib << 20
    times = {"xcuda": [], "torch": []}
    good = {"xcuda": True, "torch": True}
    for round_ in range(args.rounds):
        for side, python in (("xcuda", sys.executable), ("torch", args.torch_python)):
            seconds, ok = one_side(side, python, n, args.mib, 29500 + round_)
            times[side].append(seconds)
            good[side] &= ok
    rows, results = [], []
    for side in ("xcuda", "torch"):
        seconds = statistics.median(times[side])
        algbw = size / seconds / 1e9
        busbw = algbw * 2 * (n - 1) / n
        rows.append([side, f"{seconds * 1e3:.3f}", f"{algbw:.1f}", f"{busbw:.1f}", "yes" if good[side] else "NO"])
        results.append((side, busbw if n > 1 else algbw))
    ratio = results[0][1] / results[1][1]
    print(f"all-reduce of {args.mib} MiB float32 over {n} GPU(s), median of {args.rounds} alternating rounds "
          f"({ITERATIONS} calls each after {WARMUP}):")
    print(markdown_table(["side", "ms per all-reduce", "algbw GB/s", "busbw GB/s", "result right"], rows))
    print(f"xcuda / PyTorch ({'bus' if n > 1 else 'algorithm'} bandwidth): {ratio:.3f} (goal >= 0.90)")
    unit = "GB/s"
    entry = benchmark_entry("collectives", f"All-reduce of {args.mib} MiB over {n} GPU(s): xcuda (nccl4py) against "
                            "PyTorch (NCCL)", [
                                result_row("pytorch-all-reduce-busbw", results[1][1], unit),
                                result_row("xcuda-all-reduce-busbw", results[0][1], unit, baseline="pytorch-all-reduce-busbw",
                                           base=results[1][1], goal=">= 0.90x")],
                            device=f"{n} GPU(s)", gpu_host=True)
    write_results(args.results, entry)


if __name__ == "__main__":
    main()
