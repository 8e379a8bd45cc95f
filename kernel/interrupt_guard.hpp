#ifndef XCUDA_INTERRUPT_GUARD_HPP
#define XCUDA_INTERRUPT_GUARD_HPP

namespace xcuda
{
    /**
     * Lets SIGINT interrupt the Python code of one cell, and only that.
     *
     * Jupyter interrupts a "signal" mode kernel with SIGINT. Left to itself, the signal would land on any
     * thread at any time: xeus's zmq polls fail with EINTR, and an interrupt sent while the kernel is idle
     * trips Python's handler and raises a stray KeyboardInterrupt in the next cell. So SIGINT stays blocked
     * in every thread (block_in_all_threads, called from main before any thread starts, so that every
     * thread inherits the mask) and an interrupt_guard opens it for the duration of one cell.
     *
     * Threading: construct and destroy on the thread that initialised Python (the thread running the
     * shell, where Python's SIGINT handler raises KeyboardInterrupt), with the GIL NOT held: the guard
     * acquires it itself to drop or discard a KeyboardInterrupt that Python's handler already recorded.
     */
    class interrupt_guard
    {
    public:

        // Blocks SIGINT in the calling thread; threads started afterwards inherit the blocked mask.
        static void block_in_all_threads();

        // Drops any SIGINT that arrived while idle, then unblocks SIGINT on the calling thread.
        interrupt_guard();

        // Blocks SIGINT again and discards a KeyboardInterrupt that arrived after the cell's code ended.
        ~interrupt_guard();

        interrupt_guard(const interrupt_guard&) = delete;
        interrupt_guard& operator=(const interrupt_guard&) = delete;
        interrupt_guard(interrupt_guard&&) = delete;
        interrupt_guard& operator=(interrupt_guard&&) = delete;
    };
}

#endif
