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


# ---- trust: a folder or an entry someone else could have written is never read -------------------


def compile_with_warnings(cache_dir, source_text):
    code = textwrap.dedent(f"""
        import sys, warnings
        sys.path.insert(0, {MODULE_DIR!r})
        import xcuda
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = xcuda.compile({source_text!r}, arch="compute_75")
            xcuda.compile({source_text!r} + "// again", arch="compute_75")
        print(module.origin)
        for w in caught:
            print("WARNING", w.message)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=dict(os.environ, XCUDA_CACHE_DIR=str(cache_dir)), timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    return lines[0], [line[len("WARNING "):] for line in lines[1:]]


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_a_cache_folder_others_can_write_is_not_used_and_says_so_once(tmp_path, mode):
    cache = tmp_path / "shared"
    cache.mkdir()
    cache.chmod(mode)
    origin, warnings = compile_with_warnings(cache, source(20))
    assert origin == "nvrtc"
    assert len(warnings) == 1 and str(cache) in warnings[0] and "writable by" in warnings[0]
    assert "chmod 700" in warnings[0]
    assert entries(cache) == []  # nothing written there either
    origin, _ = compile_with_warnings(cache, source(20))
    assert origin == "nvrtc"  # and nothing read


def test_a_cache_folder_that_is_a_symbolic_link_is_not_used(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    origin, warnings = compile_with_warnings(link, source(21))
    assert origin == "nvrtc" and len(warnings) == 1 and "symbolic link" in warnings[0]
    assert entries(real) == []


def plant(cache, how):
    """Compiles source(22) into cache, then replaces its entry the way `how` says; returns the entry."""
    assert compile_in_new_process(cache, source(22)) == "nvrtc"
    [entry] = entries(cache)
    data = entry.read_bytes()
    if how == "symlink":
        target = cache.parent / "elsewhere.xcc"
        target.write_bytes(data)
        entry.unlink()
        entry.symlink_to(target)
    elif how == "hard link":
        os.link(entry, cache.parent / "second-name.xcc")
    elif how == "group writable":
        entry.chmod(0o660)
    elif how == "another owner":
        os.chown(entry, 65534, 65534)
    return entry


@pytest.mark.parametrize("how", ["symlink", "hard link", "group writable", "another owner"])
def test_a_planted_entry_is_ignored(tmp_path, how):
    if how == "another owner" and os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root (CI runs as root)")
    cache = tmp_path / "cache"
    plant(cache, how)
    # The entry's bytes are a valid binary for this very source: only where it came from is wrong.
    assert compile_in_new_process(cache, source(22)) == "nvrtc"


def test_an_untouched_entry_is_still_a_hit(tmp_path):
    cache = tmp_path / "cache"
    plant(cache, "nothing")
    assert compile_in_new_process(cache, source(22)) == "disk"


def nvrtc_mapped_after_a_compile(cache_dir, source_text, **env):
    """(origin, whether libnvrtc was mapped into the process, its version) for a compile in a new process."""
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {MODULE_DIR!r})
        import xcuda
        module = xcuda.compile({source_text!r}, arch="compute_75")
        mapped = any("libnvrtc" in line and "builtins" not in line for line in open("/proc/self/maps"))
        print(module.origin, mapped)
    """)
    environment = dict(os.environ, XCUDA_CACHE_DIR=str(cache_dir), **env)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    origin, mapped = result.stdout.split()
    return origin, mapped == "True"


def test_a_disk_hit_does_not_load_nvrtc(tmp_path):
    cache = tmp_path / "cache"
    assert nvrtc_mapped_after_a_compile(cache, source(21)) == ("nvrtc", True)
    memo = (cache / "nvrtc-version").read_text()
    major, minor = xcuda.nvrtc_version()
    assert memo.splitlines()[1] == f"{major} {minor}"
    assert stat.S_IMODE((cache / "nvrtc-version").stat().st_mode) == 0o600
    assert nvrtc_mapped_after_a_compile(cache, source(21)) == ("disk", False)


def test_nvrtc_is_loaded_again_when_its_search_would_find_another_library(tmp_path):
    cache = tmp_path / "cache"
    nvrtc_mapped_after_a_compile(cache, source(22))
    # Another CUDA_PATH could hold another NVRTC: the memo does not answer for it.
    assert nvrtc_mapped_after_a_compile(cache, source(22), CUDA_PATH=str(tmp_path)) == ("disk", True)
    # A memo that does not describe this machine (another file, a damaged text) is not believed either.
    (cache / "nvrtc-version").write_text("xcuda nvrtc-version 1\n99 9\n/nonexistent/libnvrtc.so.13\n1:2:3:4\n")
    assert nvrtc_mapped_after_a_compile(cache, source(22)) == ("disk", True)
    assert (cache / "nvrtc-version").read_text().splitlines()[1] != "99 9", "the wrong memo was not replaced"
