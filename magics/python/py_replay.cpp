// Launcher.profile, Launcher.sanitize and Launcher.replay_bundle: the Python side of one launch replayed
// in a child process under ncu or compute-sanitizer (frontend/launch_replayer.hpp says why and how).
// Here: the Python arguments bound as for a launch (in replay mode), the GIL released while the core
// writes the bundle and runs the tools, and Ctrl-C passed to the tools' waits.

#include "py_common.hpp"

#include <optional>

#include "launch_replayer.hpp"

namespace xcuda::python
{
    namespace
    {
        // The interrupt check of the tools' waits: Ctrl-C in the notebook (the GIL is taken to ask).
        bool interrupt_requested()
        {
            py::gil_scoped_acquire acquire;
            if (PyErr_CheckSignals() != 0)
            {
                PyErr_Clear();
                return true;
            }
            return false;
        }

        // The bundle of kernel[dims](*args) written. With need_gpu false and no GPU (replay_bundle on a
        // machine without one), the bundle is for device 0 and the module's inspection arch; only numpy
        // arguments can be captured then.
        void prepare(std::optional<launch_replayer>& replayer, cuda_kernel& kernel, const launch_dims& dims,
                     py::handle stream_object, py::args args, bool keep, bool need_gpu = true)
        {
            cuda_session& session = kernel.module()->session();
            bool gpu = need_gpu || session.try_ensure();
            if (gpu)
            {
                session.ensure();  // CudaUnavailableError without a GPU, before any work
            }
            launch_call call(kernel, dims, gpu ? stream_from_object(session, stream_object) : nullptr);
            call.record_for_replay();
            call_objects objects;
            bind_argument_tuple(call, args, objects);
            py::gil_scoped_release release;
            replayer.emplace(call, gpu, kernel.module()->source(), keep);
        }
    }

    py::object profile_launch(const std::shared_ptr<cuda_kernel>& kernel, const launch_dims& dims,
                              py::handle stream_object, py::args args, const profile_options& options)
    {
        auto tools = launch_replayer::tools_for("ncu", "%cuda_profile (kernel.profile)", launch_replayer::own_folder());
        std::optional<launch_replayer> replayer;
        prepare(replayer, *kernel, dims, stream_object, args, options.keep);
        profile_result result;
        {
            py::gil_scoped_release release;
            result = replayer->profile(tools, options, &interrupt_requested);
        }
        result.kernel = kernel;
        return py::cast(std::move(result));
    }

    py::object sanitize_launch(const std::shared_ptr<cuda_kernel>& kernel, const launch_dims& dims,
                               py::handle stream_object, py::args args, const std::string& tool, bool keep)
    {
        launch_replayer::check_sanitizer_tool(tool);
        auto tools = launch_replayer::tools_for("compute-sanitizer", "%cuda_sanitize (kernel.sanitize)",
                                                launch_replayer::own_folder());
        std::optional<launch_replayer> replayer;
        prepare(replayer, *kernel, dims, stream_object, args, keep);
        sanitizer_result result;
        {
            py::gil_scoped_release release;
            result = replayer->sanitize(tools, tool, &interrupt_requested);
        }
        return py::cast(std::move(result));
    }

    py::object replay_bundle_of(const std::shared_ptr<cuda_kernel>& kernel, const launch_dims& dims,
                                py::handle stream_object, py::args args)
    {
        std::optional<launch_replayer> replayer;
        prepare(replayer, *kernel, dims, stream_object, args, true, false);
        return py::str(replayer->folder());
    }
}
