#ifndef XCUDA_REPLACEABLE_SERVER_HPP
#define XCUDA_REPLACEABLE_SERVER_HPP

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "xeus/xeus_context.hpp"
#include "xeus/xkernel_configuration.hpp"
#include "xeus/xguid.hpp"
#include "xeus/xserver_shell_main.hpp"

namespace xcuda
{
    class wire_gate;

    /**
     * xeus' server with the shell on the main thread, able to replace the kernel process with a new
     * one between two requests.
     *
     * Why: after a CUDA kernel fault only a new process gets the GPU back (see xcuda_recovery.py in
     * magics/python). The new process must start after the request that asked for it has replied and
     * published its idle status, and before the next request is read, or that request would be lost.
     * Requests run on the main thread, and the idle status is the last thing published for a request,
     * so publish_impl is that point: when the environment holds XCUDA_REPLACE_AFTER_REPLY (set by
     * %cuda_recover, naming the file of carried variables), it takes the requests already queued (a
     * notebook runner sends the next cell the moment the faulting cell replies) until none has come for
     * 500 ms, writes them beside that file (private, see base/private_files), then execs this kernel's own
     * command line with XCUDA_RESTORE naming the file. exec keeps the pid, so the Jupyter server still sees
     * a live kernel, and the clients' sockets reconnect; what they send meanwhile waits in their own queues.
     * The new process runs the saved requests first, as if they had just arrived (busy, outputs, reply,
     * idle), after giving the clients a moment to reconnect (XCUDA_REPLAY_DELAY_MS, default 1000): a PUB
     * socket drops what it publishes before a subscriber is back, a ROUTER what it sends to a peer that is
     * not. Nothing a client sent after the faulting reply is lost or answered "aborted".
     *
     * It is also where iopub messages are put in order: before any message that is not a stream message,
     * the before-publish hook runs (the kernel flushes buffered output there, see output_buffer), and
     * publish_stream() lets that buffer publish from its own thread. xeus' shell publisher socket is not
     * thread-safe, so every publish goes through one mutex (which also gives zmq the memory barrier it
     * asks for when a socket changes threads).
     *
     * Threading: requests run on the main thread (the shell's), which is where exec happens; publish_impl
     * and publish_stream may be called from any thread.
     */
    class __attribute__((visibility("hidden"))) replaceable_server : public xeus::xserver_shell_main
    {
    public:
        using xeus::xserver_shell_main::xserver_shell_main;

        // A xeus server builder (the signature xeus::xkernel takes).
        static std::unique_ptr<xeus::xserver> make(xeus::xcontext& context, const xeus::xconfiguration& config,
                                                   nl::json::error_handler_t handler);

        // Runs before every iopub message other than a stream message; set once, before start().
        void set_before_publish(std::function<void()> hook);
        // Asked after each idle status: when it returns true (exit or quit ran in the cell), on_exit runs
        // and the process ends, as after a shutdown_request; Jupyter then restarts the kernel.
        void set_exit_check(std::function<bool()> requested, std::function<void()> on_exit);
        // Whether the kernel has a debugger: without one the gate answers debug_request with an error
        // reply (xeus 2.4.1 sends none). False until set.
        void set_debugger_present(bool present);
        // Publishes a stream message (name "stdout" or "stderr") with the given parent header.
        void publish_stream(const std::string& name, const std::string& text, const nl::json& parent);

    protected:
        void publish_impl(xeus::xpub_message message, xeus::channel c) override;
        // After a cell fails, xeus 2.4.1 answers the requests already queued with {"status": "error"} and
        // nothing on iopub (stop_on_error), so a client that sent the next cell at once waits forever for
        // its idle status. Answer them as ipykernel does: status "aborted", with busy and idle published,
        // after the failed cell's own idle status (JupyterLab drops the prompt of a cell whose idle comes
        // after a later cell's reply).
        void abort_queue_impl(const listener& l, long polling_interval) override;

        // The ports of the connection file stay as they are: they are the gate's (xeus' own sockets are on
        // inproc endpoints, which have no port to report).
        void update_config_impl(xeus::xconfiguration&) const override {}

    private:
        // xeus 2.4.1's xserver_shell_main::start_server, with the saved requests run before the shell loop.
        void start_server(zmq::multipart_t& wire_message) override;
        void replay_saved_requests();
        void answer_aborted(const xeus::xmessage& request);

        wire_gate* m_gate = nullptr;  // the connection file's ports; never destroyed (see wire_gate)
        std::function<void()> m_before_publish;
        bool m_answering_aborted = false;  // the idle of an aborted request is not the end of a cell
        std::vector<xeus::xmessage> m_to_abort;  // taken by abort_queue_impl, answered after the next idle
        std::function<bool()> m_exit_requested;
        std::function<void()> m_on_exit;
        std::mutex m_publish_mutex;
        std::string m_session = xeus::new_xguid();
    };
}

#endif
