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
     * Threading: called with the GIL not held; every request acquires it. IPython's history database is a
     * sqlite connection of the shell thread (the main thread, which makes this object), and sqlite refuses
     * its use from another thread with an error that IPython takes for a corrupt file: it renames the user's
     * history.sqlite to history-corrupt-<time>.sqlite and starts an empty one (three times, then it keeps no
     * history at all). A history_request that comes on the control channel runs on xeus' control thread: it
     * is answered with an error saying to send it on the shell channel, and IPython is not asked.
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
