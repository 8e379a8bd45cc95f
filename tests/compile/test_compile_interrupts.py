"""Kernel > Interrupt while NVRTC compiles a cell ends the cell with KeyboardInterrupt and the session goes on.

NVRTC installs its own SIGINT handler while it compiles, and that handler ends the process; xcuda runs
NVRTC in a child process (compile_process) that an interrupt stops. The cell below (48 CUB block sorts) takes
about 5 s to compile on this machine; the interrupts come at several moments of its first second (a margin
of five for faster machines). No GPU needed.
"""
import os
import uuid

import pytest
from jupyter_client.manager import start_new_kernel

from conftest import execute_asking_again, execute_code, interrupted_reply, text_of

HEADER = """#include <cub/block/block_radix_sort.cuh>
// {nonce}
template <typename T, int THREADS, int ITEMS>
__device__ void sort_block(T* data)
{{
    using Sort = cub::BlockRadixSort<T, THREADS, ITEMS>;
    __shared__ typename Sort::TempStorage storage;
    T keys[ITEMS];
    for (int i = 0; i < ITEMS; ++i) keys[i] = data[blockIdx.x * THREADS * ITEMS + threadIdx.x * ITEMS + i];
    Sort(storage).Sort(keys);
    for (int i = 0; i < ITEMS; ++i) data[blockIdx.x * THREADS * ITEMS + threadIdx.x * ITEMS + i] = keys[i];
}}
"""
TYPES = ["int", "float", "unsigned long long", "double", "short", "unsigned int", "long long", "unsigned short"]
SHAPES = [(128, 4), (256, 8), (64, 16), (512, 2), (32, 32), (128, 12)]


def slow_cell(tag):
    """A %%cuda cell of 48 CUB block sorts; a fresh source each time, so that no cache can answer."""
    cell = f"%%cuda --name slow{tag}\n" + HEADER.format(nonce=uuid.uuid4())
    for i, type_name in enumerate(TYPES):
        for j, (threads, items) in enumerate(SHAPES):
            cell += (f'extern "C" __global__ void sort_{i}_{j}({type_name}* d) '
                     f"{{ sort_block<{type_name}, {threads}, {items}>(d); }}\n")
    return cell


def start(kernel_name):
    return start_new_kernel(kernel_name=kernel_name, startup_timeout=60, env=dict(os.environ, XCUDA_CACHE="0"))


def check_interrupts_at_several_moments(manager, client, prefix=""):
    for number, delay in enumerate([0.05, 0.3, 0.6, 1.0]):
        reply = interrupted_reply(manager, client, prefix + slow_cell(number), delay)
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", (delay, reply)
        assert manager.is_alive()
        reply, messages = execute_asking_again(client, f"print('alive after {delay}', 6 * 7)")
        assert reply["status"] == "ok" and f"alive after {delay} 42" in text_of(messages), (delay, reply)
    # Nothing was bound by the stopped compiles, and the same cell compiles when left alone.
    reply, messages = execute_asking_again(client, "print([name for name in dir() if name.startswith('slow')])")
    assert "[]" in text_of(messages)
    reply, messages = execute_code(client, prefix + slow_cell(9), timeout=180)
    assert reply["status"] == "ok", reply
    reply, messages = execute_code(client, "print(slow9.kernels)")
    assert "sort_7_5" in text_of(messages)


def test_interrupting_a_compile_in_the_xcuda_kernel_keeps_the_session():
    manager, client = start("xcuda")
    try:
        execute_code(client, "kept = 'still here'")
        check_interrupts_at_several_moments(manager, client)
        reply, messages = execute_code(client, "print(kept)")
        assert "still here" in text_of(messages)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_interrupting_a_compile_in_ipykernel_keeps_the_session():
    try:
        manager, client = start("python3")
    except Exception as error:  # noqa: BLE001 - any failure to start is the reason to skip
        pytest.skip(f"ipykernel's kernelspec 'python3' could not start: {error}")
    try:
        reply, _ = execute_code(client, "%load_ext xcuda")
        assert reply["status"] == "ok", reply
        check_interrupts_at_several_moments(manager, client)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
