#ifndef XCUDA_REPLACEABLE_SERVER_HPP
#define XCUDA_REPLACEABLE_SERVER_HPP

#include <memory>

#include "xeus/xeus_context.hpp"
#include "xeus/xkernel_configuration.hpp"
#include "xeus/xserver_shell_main.hpp"

namespace xcuda
{
    /**
     * xeus' server with the shell on the main thread, able to replace the kernel process with a new
     * one between two requests.
     *
     * Why: after a CUDA kernel fault only a new process gets the GPU back (see xcuda_recovery.py in
     * magics/python). The new process must start after the request that asked for it has replied and
     * published its idle status, and before the next request is read, or that request would be lost.
     * Requests run on the main thread, and the idle status is the last thing published for a request,
     * so publish_impl is that point: when the environment holds XCUDA_REPLACE_AFTER_REPLY (set by
     * %cuda_recover, naming the file of carried variables), it answers requests already queued with
     * status "aborted" (they would die with the old image), gives the publisher a moment to send, then
     * execs this kernel's own command line with XCUDA_RESTORE naming the file. exec keeps the
     * pid, so the Jupyter server still sees a live kernel, and the notebook's sockets reconnect.
     *
     * Threading: publish_impl runs on the main thread (the shell's), which is where exec happens.
     */
    class __attribute__((visibility("hidden"))) replaceable_server : public xeus::xserver_shell_main
    {
    public:
        using xeus::xserver_shell_main::xserver_shell_main;

        // A xeus server builder (the signature xeus::xkernel takes).
        static std::unique_ptr<xeus::xserver> make(xeus::xcontext& context, const xeus::xconfiguration& config,
                                                   nl::json::error_handler_t handler);

    protected:
        void publish_impl(xeus::xpub_message message, xeus::channel c) override;
    };
}

#endif
