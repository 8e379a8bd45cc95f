#pragma once
// The signature reader listens for interrupts: its loops (the macro expander's, which every token of the
// unit passes through, and the declaration parser's) count their steps, and every `interval` steps ask
// the check the binding sets (Python's pending signals: Ctrl-C, Kernel > Interrupt). A yes ends the parse
// with interrupted_error, which the binding raises as KeyboardInterrupt. With the reader's limits
// (signature_limits) a parse ends within about a second anyway; the check makes an interrupt answered
// within milliseconds of work, as during a compile (compile_process asks every 20 ms).
//
// Threading: set_check() at start-up, before any parse (the binding's module init); step() from any
// thread (its counter is per thread; the check is called on the thread that parses).

#include <cstddef>
#include <functional>

namespace xcuda
{
    class parse_interrupts
    {
    public:
        using check = std::function<bool()>;
        static constexpr std::size_t interval = 16384;

        // Replaces the check (none: never interrupted).
        static void set_check(check interrupted);
        // One step of a parse loop; throws interrupted_error when the check, asked every interval steps,
        // says to stop.
        static void step()
        {
            if (++counter() % interval == 0)
            {
                ask();
            }
        }

    private:
        static std::size_t& counter() noexcept
        {
            thread_local std::size_t steps = 0;
            return steps;
        }
        static void ask();
    };
}
