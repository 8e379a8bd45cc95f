"""The compile cache on disk, seen from new processes: hits, corruption, atomic concurrent writes,
XCUDA_CACHE=0, the folder's permissions and the size cap. NVRTC only: no GPU needed."""
import os
import stat
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

import xcuda

MODULE_DIR = os.path.dirname(xcuda.__file__)


def compile_in_new_process(cache_dir, source, **env):
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {MODULE_DIR!r})
        import xcuda
        module = xcuda.compile({source!r}, arch="compute_75")
        print(module.origin, module.kernels["k"].name)
    """)
    environment = dict(os.environ, XCUDA_CACHE_DIR=str(cache_dir), **env)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()[0]


def entries(folder):
    return sorted(p for p in folder.iterdir() if p.suffix == ".xcc") if folder.exists() else []


def source(tag):
    return f'extern "C" __global__ void k(int* x) {{ x[0] = {tag}; }}\n'


def test_a_new_process_loads_the_binary_from_disk(tmp_path):
    cache = tmp_path / "cache"
    assert compile_in_new_process(cache, source(1)) == "nvrtc"
    assert len(entries(cache)) == 1
    assert compile_in_new_process(cache, source(1)) == "disk"
    assert compile_in_new_process(cache, source(2)) == "nvrtc"
    assert len(entries(cache)) == 2


def test_the_cache_folder_is_private(tmp_path):
    cache = tmp_path / "nested" / "cache"
    compile_in_new_process(cache, source(3))
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "empty", "garbage"])
def test_a_corrupt_entry_is_a_miss_and_is_replaced(tmp_path, damage):
    cache = tmp_path / "cache"
    compile_in_new_process(cache, source(4))
    [entry] = entries(cache)
    data = bytearray(entry.read_bytes())
    if damage == "flip a byte":
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) - 7]
    elif damage == "empty":
        data = bytearray()
    else:
        data = bytearray(b"not a cache entry at all" * 10)
    entry.write_bytes(bytes(data))
    assert compile_in_new_process(cache, source(4)) == "nvrtc"
    assert compile_in_new_process(cache, source(4)) == "disk"


def test_xcuda_cache_0_turns_the_disk_cache_off(tmp_path):
    cache = tmp_path / "cache"
    assert compile_in_new_process(cache, source(5), XCUDA_CACHE="0") == "nvrtc"
    assert compile_in_new_process(cache, source(5), XCUDA_CACHE="0") == "nvrtc"
    assert entries(cache) == []


def test_processes_compiling_the_same_cell_at_once_leave_one_valid_entry(tmp_path):
    cache = tmp_path / "cache"
    with ThreadPoolExecutor(max_workers=4) as pool:
        origins = list(pool.map(lambda _: compile_in_new_process(cache, source(6)), range(4)))
    assert set(origins) <= {"nvrtc", "disk"}
    assert len(entries(cache)) == 1
    assert not [p for p in cache.iterdir() if ".tmp." in p.name]
    assert compile_in_new_process(cache, source(6)) == "disk"


def test_the_size_cap_evicts_the_least_recently_used_entries(tmp_path):
    cache = tmp_path / "cache"
    compile_in_new_process(cache, source(7))
    size = entries(cache)[0].stat().st_size
    cap = str(int(size * 2.5))  # room for two entries
    for tag in (8, 9):
        compile_in_new_process(cache, source(tag), XCUDA_CACHE_SIZE=cap)
    assert len(entries(cache)) == 2
    assert compile_in_new_process(cache, source(7), XCUDA_CACHE_SIZE=cap) == "nvrtc"  # the oldest went
    assert compile_in_new_process(cache, source(9), XCUDA_CACHE_SIZE=cap) == "disk"
