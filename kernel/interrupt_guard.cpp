#include "interrupt_guard.hpp"

#include <csignal>
#include <ctime>

#include <pthread.h>

#include "pybind11/pybind11.h"

namespace py = pybind11;

namespace xcuda
{
    namespace
    {
        sigset_t sigint_set()
        {
            sigset_t set;
            sigemptyset(&set);
            sigaddset(&set, SIGINT);
            return set;
        }

        // Consumes SIGINTs pending on the process or this thread; SIGINT must be blocked here.
        void drop_pending_sigint()
        {
            const sigset_t set = sigint_set();
            const timespec no_wait{0, 0};
            while (sigtimedwait(&set, nullptr, &no_wait) == SIGINT)
            {
            }
        }

        // Runs the Python handlers of signals already caught (Python records them and raises later, at the
        // next bytecode) and throws away the KeyboardInterrupt that SIGINT's handler raises. Any other
        // exception from a handler has no cell to end, so it goes to sys.unraisablehook.
        void discard_recorded_keyboard_interrupt()
        {
            py::gil_scoped_acquire acquire;
            if (PyErr_CheckSignals() != 0)
            {
                if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt))
                {
                    PyErr_Clear();
                }
                else
                {
                    PyErr_WriteUnraisable(nullptr);
                }
            }
        }
    }

    void interrupt_guard::block_in_all_threads()
    {
        const sigset_t set = sigint_set();
        pthread_sigmask(SIG_BLOCK, &set, nullptr);
    }

    interrupt_guard::interrupt_guard()
    {
        drop_pending_sigint();
        // A thread started by an earlier cell inherited the unblocked mask and may have caught an idle
        // SIGINT for Python: drop that too.
        discard_recorded_keyboard_interrupt();
        const sigset_t set = sigint_set();
        pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    }

    interrupt_guard::~interrupt_guard()
    {
        const sigset_t set = sigint_set();
        pthread_sigmask(SIG_BLOCK, &set, nullptr);
        discard_recorded_keyboard_interrupt();
    }
}
