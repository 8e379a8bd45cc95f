"""Running one piece of work in several threads at once, for the tests of what users may call from two
threads (the brief: each such call gets a test calling it from several threads)."""
import threading


def run_in_threads(work, count):
    """work(i) for i in range(count), each in a thread of its own, started together (a barrier); the first
    error any of them raised is raised again here, naming its thread and how many failed."""
    barrier = threading.Barrier(count)
    errors = []

    def body(index):
        try:
            barrier.wait()
            work(index)
        except BaseException as error:  # noqa: BLE001 - reported below with the thread
            errors.append((index, error))

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        index, error = errors[0]
        raise AssertionError(f"thread {index} of {count}: {error!r} ({len(errors)} threads failed)") from error
