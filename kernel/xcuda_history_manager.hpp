#ifndef XCUDA_HISTORY_MANAGER_HPP
#define XCUDA_HISTORY_MANAGER_HPP

#include <string>
#include <thread>

#include "nlohmann/json.hpp"
#include "xeus/xhistory_manager.hpp"

namespace nl = nlohmann;

namespace xcuda
{
    class xcuda_interpreter;

    /**
     * Answers history_request from IPython's own history (shell.history_manager), the one that `%history`,
     * `_ih` and `Out[]` use. xeus's in-memory manager keeps a second, malformed copy (rows with output=True
     * lack the output, every line numbered 1), and IPython already records each cell in run_cell.
     *
     * Ownership: refers to the interpreter, which owns the shell; both live as long as the kernel.
     * Threading: called with the GIL not held; every request acquires it. IPython's history database was a
     * sqlite connection of the shell thread (the main thread, which makes this object), and sqlite refused
     * its use from another thread with an error that IPython takes for a corrupt file: it renamed the user's
     * history.sqlite to history-corrupt-<time>.sqlite and started an empty one. The interpreter now opens it
     * for any thread (xcuda_interpreter::share_history_connection), for code run on the control channel; a
     * history_request that comes on the control channel (no client sends one there) is still answered with an
     * error saying to send it on the shell channel, and IPython is not asked: its query writes the shell's
     * input cache out, which the shell thread does too.
     */
    class xcuda_history_manager : public xeus::xhistory_manager
    {
    public:

        explicit xcuda_history_manager(const xcuda_interpreter& interpreter);

    private:

        void configure_impl() override;
        void store_inputs_impl(int session, int line_num, const std::string& input, const std::string& output) override;
        nl::json get_tail_impl(int n, bool raw, bool output) const override;
        nl::json get_range_impl(int session, int start, int stop, bool raw, bool output) const override;
        nl::json search_impl(const std::string& pattern, bool raw, bool output, int n, bool unique) const override;

        // The error reply to a request made on another thread than the shell's, or null on the shell's.
        const nl::json* refuse_off_shell_thread() const;

        const xcuda_interpreter& m_interpreter;
        std::thread::id m_shell_thread;
        nl::json m_off_thread_reply;
    };
}

#endif
