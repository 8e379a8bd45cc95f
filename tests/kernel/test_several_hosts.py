"""Engines on several hosts, tested on one machine (issue 50): hosts are network namespaces.

tests/kernel/network_hosts.py makes three namespaces joined by veth pairs on a bridge, with addresses
only inside them (10.77.0.1 the controller's host, .2 and .3 the engines' hosts): the ipyparallel
controller runs in the first, listening on 10.77.0.1 (not loopback: nothing in the other namespaces
could reach a loopback address of the first), and two engines run in each of the other two, each host
with its own xcuda engine registry (as separate machines' /tmp would be). The client, which a notebook
would be, runs in the controller's namespace (tests/kernel/several_hosts_client.py, driven over a pipe:
this process cannot reach those addresses). Then:

- every engine is where it should be (its namespace's one address) and connected to the controller's
  address, not loopback;
- notebooks/04-several-hosts.ipynb's flow passes: load xcuda and compile on every engine, scatter,
  SAXPY, gather, a reduction over all engines (on the simulator where there is no GPU);
- a host is lost mid-way (its processes killed without warning, its namespace removed): a gather over
  all engines fails with xcuda.parallel.EngineLostError naming lost engines (those the controller has
  given up on by then) and where they were, within the bounded wait; once the controller has dropped
  them all, a gather names every one of them; and the other host's engines keep their data.

What this cannot test: separate filesystems (the namespaces share this machine's, as a cluster's NFS home
would: the connection files are read from the profile folder), SSH/MPI/Slurm launchers, firewalls, real
latency and bandwidth, several GPUs (docs/several-hosts.md).

Needs root and iproute2 (network namespaces) and ipyparallel; without them the tests skip and say why.
"""
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import HAS_GPU
from network_hosts import namespaced_hosts, unavailable

try:
    import ipyparallel  # noqa: F401 (only whether it is there)

    MISSING = None
except ImportError as error:
    MISSING = f"ipyparallel is not importable ({error}); Debian: python3-ipyparallel, which bash .ci/setup installs"

NAMESPACES = None if MISSING else unavailable()
pytestmark = [pytest.mark.skipif(MISSING is not None, reason=MISSING or ""),
              pytest.mark.skipif(NAMESPACES is not None, reason=f"no network namespaces: {NAMESPACES}")]

HERE = Path(__file__).resolve().parent
START_S = 180   # generous for a loaded 2-core CI machine; every wait ends when it is done
CALL_S = 120
ENGINES_PER_HOST = 2
# The controller declares an engine gone after this many missed heartbeats of HEARTBEAT_MS.
HEARTBEAT_MS = 500
MISSES = 6


class Driven:
    """The client process in the controller's namespace, asked one step at a time."""

    def __init__(self, process):
        self.process = process

    def ask(self, step, wait_s=START_S, **request):
        self.process.stdin.write(json.dumps({"step": step, **request}) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], wait_s)
        if not ready:
            raise TimeoutError(f"the client did not answer step {step!r} within {wait_s} s")
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the client ended during step {step!r} (exit {self.process.poll()})")
        return json.loads(line)


def _wait_for(path, process, seconds, what):
    deadline = time.monotonic() + seconds
    while not path.exists():
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited ({process.returncode}) before writing {path.name}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not write {path} within {seconds} s")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    root = tmp_path_factory.mktemp("hosts")
    profile = root / "profile"
    logs = root / "logs"
    logs.mkdir()
    environment = dict(os.environ,
                       # NVLink multicast stays off wherever NCCL could run (issue 50's rule)
                       NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    for name in ("XCUDA_DEVICE", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"):
        environment.pop(name, None)
    if not HAS_GPU:
        environment["XCUDA_DEVICE"] = "simulator"
    with namespaced_hosts(["ctl", "a", "b"]) as made:
        controller = made["ctl"].start(
            [sys.executable, "-m", "ipyparallel.controller", f"--ip={made['ctl'].address}",
             f"--profile-dir={profile}", f"--HeartMonitor.period={HEARTBEAT_MS}",
             f"--HeartMonitor.max_heartmonitor_misses={MISSES}", "--log-level=WARN"],
            env=environment, stdout=open(logs / "controller.log", "w"), stderr=subprocess.STDOUT)
        _wait_for(profile / "security" / "ipcontroller-engine.json", controller, START_S, "the controller")
        for host in ("a", "b"):
            registry = root / f"host-{host}" / "registry"
            registry.mkdir(parents=True)
            for index in range(ENGINES_PER_HOST):
                made[host].start([sys.executable, "-m", "ipyparallel.engine", f"--profile-dir={profile}",
                                  "--log-level=WARN"],
                                 env=dict(environment, XCUDA_HOST_REGISTRY=str(registry)),
                                 stdout=open(logs / f"engine-{host}{index}.log", "w"), stderr=subprocess.STDOUT)
        client = made["ctl"].start(
            [sys.executable, str(HERE / "several_hosts_client.py"), str(profile), str(2 * ENGINES_PER_HOST), str(CALL_S)],
            env=environment, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=open(logs / "client.log", "w"), text=True)
        made.driven = Driven(client)
        made.logs = logs
        yield made
        client.stdin.close()


@pytest.fixture(scope="module")
def places(hosts):
    answer = hosts.driven.ask("engines")
    assert answer["ok"], answer
    return answer


def test_each_engine_runs_on_its_own_host_and_reaches_the_controller_by_its_address(hosts, places):
    assert len(places["ids"]) == 2 * ENGINES_PER_HOST, places
    addresses = sorted(tuple(place["addresses"]) for place in places["places"])
    # Each engine's namespace has its host's address and loopback only; two engines on each host.
    expected = sorted([("10.77.0.2", "127.0.0.1")] * 2 + [("10.77.0.3", "127.0.0.1")] * 2)
    assert addresses == expected, places
    assert "10.77.0.1" in places["controller"] and "127.0.0.1" not in places["controller"], places


def test_the_notebook_04_flow_passes_across_the_hosts(hosts, places):
    answer = hosts.driven.ask("flow")
    assert answer["ok"], answer
    assert answer["saxpy_equal"], answer
    assert answer["sum_close"], answer
    assert [part["engine"] for part in answer["parts"]] == places["ids"]
    assert sum(part["shape"][0] for part in answer["parts"]) == 1 << 14


def _named(message, places):
    """The engines an EngineLostError's message names, each with where it ran (its pid there)."""
    return [engine for engine, place in zip(places["ids"], places["places"])
            if f"{engine} (ipyparallel engine {engine} (pid {place['pid']}," in message]


def _controller_drops(hosts, engines):
    """Waits until the controller no longer has any of engines (its heartbeat limit, HEARTBEAT_MS * MISSES)."""
    deadline = time.monotonic() + START_S
    while set(engines) & set(hosts.driven.ask("ids")["ids"]):
        assert time.monotonic() < deadline, f"the controller still has some of {engines} after {START_S} s"
        time.sleep(HEARTBEAT_MS / 1000)


def test_a_lost_host_is_named_and_the_other_hosts_engines_keep_their_data(hosts, places):
    if not hosts.driven.ask("gather", name="out")["ok"]:
        pytest.skip("the flow did not leave `out` on the engines (see the flow test's failure)")
    lost = [engine for engine, place in zip(places["ids"], places["places"]) if "10.77.0.3" in place["addresses"]]
    kept = [engine for engine in places["ids"] if engine not in lost]
    hosts.lose("b")
    # At once: the gather fails naming the lost engines the controller has dropped by then. It drops each on its
    # own: a gather sent between the two names only the first, refused before it is sent ("no longer has them";
    # once in CI and once in 4 runs here, 2026-12-07, where one engine was dropped before the test asked at once
    # and the other later); one sent before both fails in its wait, naming both. Never a kept engine.
    answer = hosts.driven.ask("gather", name="out", wait_s=START_S)
    assert not answer["ok"], answer
    assert answer["error"] == "EngineLostError", answer
    named = _named(answer["message"], places)
    assert named and set(named) <= set(lost), (named, answer)
    assert answer["message"].startswith("engine") and " lost: " in answer["message"], answer
    # Once the controller has dropped them all, a gather is refused before anything is sent, naming both lost
    # engines and the way on without them.
    _controller_drops(hosts, lost)
    again = hosts.driven.ask("gather", name="out")
    assert again["error"] == "EngineLostError" and "no longer has them" in again["message"], again
    assert _named(again["message"], places) == lost, again
    assert again["message"].startswith("engines ") and " are lost: " in again["message"], again
    assert f"rc[{kept}]" in again["message"], again
    kept_parts = [places["ids"].index(engine) for engine in kept]
    answer = hosts.driven.ask("gather", name="out", engines=kept, parts=kept_parts)
    assert answer["ok"] and answer["equal"], answer
