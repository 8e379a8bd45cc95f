"""Hosts stood in for by Linux network namespaces, for tests of engines on several hosts (issue 50).

`namespaced_hosts(["ctl", "a", "b"])` makes one network namespace per host, each with only its loopback
and one end of a veth pair; the other ends sit on a bridge in the first namespace (the controller's
"host"). Every address is inside those namespaces (10.77.0.0/24 by default: the controller's host .1, the
others .2, .3, ...), so nothing the test starts listens on or sends to an address of the machine, and
nothing outside can reach them. Processes are started in a namespace with `ip netns exec`; the
filesystem is shared (as a cluster's home folder on NFS is), the network is not. Everything is torn down
at the end: the processes left in each namespace are killed, then the namespaces are deleted (deleting a
namespace takes its veth ends and the bridge with it).

`lose(host)` stands for a host that went away: its processes are killed (SIGKILL: no goodbye to the
controller) and its namespace deleted, so its address no longer answers.

Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2's `ip`; `unavailable()` says why not, for a skip.
"""
import os
import shutil
import signal
import subprocess
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field

SUBNET = "10.77.0"
IP = shutil.which("ip") or "/usr/sbin/ip"


def unavailable():
    """None where network namespaces can be made here, else the reason (for pytest.skip)."""
    if not os.path.exists(IP):
        return "iproute2's `ip` is not installed (Debian: iproute2)"
    if os.geteuid() != 0:
        return "making network namespaces needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN); run the tests as root"
    probe = f"xcprobe{os.getpid()}"
    made = subprocess.run([IP, "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` failed here: {made.stderr.strip()}"
    subprocess.run([IP, "netns", "del", probe], capture_output=True)
    return None


def _ip(*args):
    done = subprocess.run([IP, *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")
    return done.stdout


@dataclass
class Host:
    name: str        # the test's name for it ("ctl", "a")
    namespace: str   # the network namespace's name (unique to this run)
    address: str     # its one IPv4 address
    processes: list = field(default_factory=list)
    lost: bool = False

    def command(self, argv):
        """argv run inside this host's namespace."""
        return [IP, "netns", "exec", self.namespace, *argv]

    def start(self, argv, **popen):
        """Start argv in this host's namespace (its own process group); the caller's env, cwd, output."""
        process = subprocess.Popen(self.command(argv), start_new_session=True, **popen)
        self.processes.append(process)
        return process

    def run(self, argv, timeout, **run):
        return subprocess.run(self.command(argv), timeout=timeout, **run)

    def pids(self):
        """Every process in this namespace, whoever started it (an engine's nanny and kernel too)."""
        if self.lost:
            return []
        listed = subprocess.run([IP, "netns", "pids", self.namespace], capture_output=True, text=True)
        return [int(pid) for pid in listed.stdout.split()]


class Hosts:
    def __init__(self, names, subnet):
        tag = uuid.uuid4().hex[:6]
        self.hosts = {name: Host(name, f"xc{tag}{index}", f"{subnet}.{index + 1}")
                      for index, name in enumerate(names)}
        self.subnet = subnet

    def __getitem__(self, name):
        return self.hosts[name]

    def make(self):
        first, *others = self.hosts.values()
        for host in self.hosts.values():
            _ip("netns", "add", host.namespace)
            _ip("-n", host.namespace, "link", "set", "lo", "up")
        # The bridge and the first host's address live in the first namespace; each other host is one veth
        # pair away from it. The pairs are made inside the namespaces (`ip -n`), never in the machine's own.
        _ip("-n", first.namespace, "link", "add", "xcbr", "type", "bridge")
        _ip("-n", first.namespace, "link", "set", "xcbr", "up")
        _ip("-n", first.namespace, "addr", "add", f"{first.address}/24", "dev", "xcbr")
        for index, host in enumerate(others):
            port = f"xcp{index}"
            _ip("-n", first.namespace, "link", "add", port, "type", "veth", "peer", "name", "eth0",
                "netns", host.namespace)
            _ip("-n", first.namespace, "link", "set", port, "master", "xcbr")
            _ip("-n", first.namespace, "link", "set", port, "up")
            _ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
            _ip("-n", host.namespace, "link", "set", "eth0", "up")

    def lose(self, name):
        """The host goes away: everything in it killed without warning, its namespace (and link) gone."""
        host = self.hosts[name]
        self._kill(host)
        subprocess.run([IP, "netns", "del", host.namespace], capture_output=True)
        host.lost = True

    @staticmethod
    def _kill(host):
        for pid in host.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for process in host.processes:
            if process.poll() is None:
                process.kill()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def tear_down(self):
        for host in self.hosts.values():
            if not host.lost:
                # A polite stop first (engines and the controller clean up), then whatever is left.
                for process in host.processes:
                    if process.poll() is None:
                        os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(p.poll() is None for h in self.hosts.values() for p in h.processes):
            time.sleep(0.2)
        for host in self.hosts.values():
            if not host.lost:
                self._kill(host)
                subprocess.run([IP, "netns", "del", host.namespace], capture_output=True)
                host.lost = True


@contextmanager
def namespaced_hosts(names, subnet=SUBNET):
    """One network namespace per name (the first holds the bridge), torn down at the end."""
    hosts = Hosts(names, subnet)
    try:
        hosts.make()
        yield hosts
    finally:
        hosts.tear_down()


def addresses_of_this_namespace():
    """The IPv4 addresses of the namespace this process runs in (from /proc: no tool needed)."""
    found = set()
    with open("/proc/net/fib_trie") as trie:
        lines = trie.read().splitlines()
    for previous, line in zip(lines, lines[1:]):
        if "/32 host LOCAL" in line:
            found.add(previous.split()[-1])
    return sorted(found)
