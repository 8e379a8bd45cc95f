// Where this process computes, as seen from Python: xcuda.device_choice() (which device and why),
// the ipyparallel engine's place among the xcuda engines of its host, and the warning when two
// engines use one GPU (xcuda.DeviceSharingWarning).
//
// An engine joins its host at `import xcuda` (and again, harmlessly, at %load_ext xcuda): the pure
// Python xcuda.parallel.engine_label() says whether this process is an ipyparallel engine, and only
// then does the core's engine_placement (runtime/engine_placement) make the host registry, lease a
// slot and record each GPU this process makes a context on. Here: the report as a dict, and its
// warnings raised as Python warnings.

#include "py_common.hpp"

#include "cuda_driver.hpp"
#include "host_registry.hpp"

namespace xcuda::python
{
    namespace
    {
        PyObject* sharing_warning_type = nullptr;

        // Raises (error_already_set) only when warnings are errors.
        void warn(PyObject* category, const std::string& message)
        {
            if (PyErr_WarnEx(category, message.c_str(), 1) != 0)
            {
                throw py::error_already_set();
            }
        }

        // The session's context hook: records device `ordinal` and warns when other engines use its GPU.
        void record_gpu(engine_placement& placement, int ordinal)
        {
            std::string message = placement.record_gpu(ordinal);
            if (!message.empty())
            {
                py::gil_scoped_acquire acquire;
                warn(sharing_warning_type, message);
            }
        }

        // The first context after the driver layer fell back to the PTX simulator (the first launch, allocation
        // or xcuda.info()): xcuda.on_the_simulator's notice, in the cell that made it. Once: the core hands the reason
        // to one caller.
        void show_fallback_notice()
        {
            std::string reason = cuda_driver::take_fallback_notice();
            if (!reason.empty())
            {
                py::gil_scoped_acquire acquire;
                py::module_::import("xcuda.on_the_simulator").attr("show_fallback_notice")(reason);
            }
        }

        template <class T>
        py::object none_or(const std::optional<T>& value)
        {
            return value ? py::cast(*value) : py::none();
        }
    }

    void join_host_if_engine(notebook_session& notebook)
    {
        py::object label = py::module_::import("xcuda.parallel").attr("engine_label")();
        if (label.is_none() || notebook.placement.joined())
        {
            return;
        }
        std::string failure = notebook.placement.join(label.cast<std::string>(), host_registry::default_directory(),
                                                     [](const std::string& message) { warn(sharing_warning_type, message); });
        if (!failure.empty())
        {
            warn(PyExc_RuntimeWarning, failure);
        }
    }

    py::dict device_choice_report(notebook_session& notebook)
    {
        engine_placement::report r = notebook.placement.choice_report();
        py::dict report;
        report["ordinal"] = none_or(r.ordinal);
        report["source"] = r.source;
        report["reason"] = r.reason;
        report["engine"] = none_or(r.engine);
        report["host_slot"] = none_or(r.host_slot);
        report["registry"] = none_or(r.registry);
        report["gpu_uuid"] = none_or(r.gpu_uuid);
        report["shared_with"] = r.shared_with;
        return report;
    }

    void register_placement(py::module_& m, notebook_session& notebook)
    {
        sharing_warning_type = PyErr_NewExceptionWithDoc(
            "xcuda.DeviceSharingWarning",
            "Two xcuda engines of one host use one GPU: they share its memory and compute.", PyExc_UserWarning,
            nullptr);
        m.attr("DeviceSharingWarning") = py::handle(sharing_warning_type);
        engine_placement& placement = notebook.placement;
        notebook.session.set_context_hook([&placement](int ordinal) {
            show_fallback_notice();
            record_gpu(placement, ordinal);
        });

        m.def("device_choice", [&notebook] { return device_choice_report(notebook); },
              R"(Which device this process computes on, and why.

Returns
-------
dict
    ordinal : int or None
        The current device (None when the environment's value was refused).
    source : str
        "XCUDA_DEVICE", a launcher's local-rank variable ("OMPI_COMM_WORLD_LOCAL_RANK",
        "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"), "host slot" (an ipyparallel engine's
        order among this host's xcuda engines), "xcuda.set_device", "default" or "refused"; on the
        PTX simulator who chose it: "XCUDA_DEVICE" (=simulator), the call xcuda.use_simulator() as
        written, or "simulator fallback" (no driver or no device was found and nothing was set).
    reason : str
        One sentence naming the variables, or why a value was refused.
    engine : str or None
        This ipyparallel engine's label, None outside an engine.
    host_slot : int or None
        The engine's slot on its host (None when a variable chose, or outside an engine).
    registry : str or None
        The folder of this host's engine registry ($XCUDA_HOST_REGISTRY, else /tmp/xcuda-<uid>/engines).
    gpu_uuid : str or None
        The GPU's UUID once xcuda has a context on it.
    shared_with : list of str
        Other live engines of this host on the same GPU.

A local rank or slot is taken modulo the device count once the driver has told it; without a
driver it is shown as it is.)");
        m.def("_join_host", [&notebook] { join_host_if_engine(notebook); },
              "Join this host's engine registry when this process is an ipyparallel engine (done at import "
              "and at %load_ext xcuda; calling it again does nothing).");
    }
}
