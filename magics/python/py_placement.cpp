// Where this process computes, as seen from Python: xcuda.device_choice() (which device and why),
// the ipyparallel engine's place among the xcuda engines of its host, and the warning when two
// engines use one GPU (xcuda.DeviceSharingWarning).
//
// An engine joins its host at `import xcuda` (and again, harmlessly, at %load_ext xcuda): the pure
// Python xcuda.parallel.engine_label() says whether this process is an ipyparallel engine, and only
// then is the host registry (runtime/host_registry) made. The engine leases a slot there, which
// chooses its device when neither XCUDA_DEVICE nor a launcher's local rank did; and each device it
// makes a context on is recorded there by its UUID, so an engine arriving on a GPU that another
// engine already uses is warned, naming the other. A plain notebook never touches the registry.

#include "py_common.hpp"

#include <unistd.h>

#include "host_registry.hpp"

namespace xcuda::python
{
    namespace
    {
        PyObject* sharing_warning_type = nullptr;

        std::string ordinal_label(int ordinal)
        {
            return state().engine_label + " on device " + std::to_string(ordinal);
        }

        std::string joined(const std::vector<std::string>& labels)
        {
            std::string text;
            for (const auto& label : labels)
            {
                text += (text.empty() ? "" : "; ") + label;
            }
            return text;
        }

        // Records device `ordinal` (its context exists) in the host registry and warns when other
        // engines use the same GPU. Raises (error_already_set) only when warnings are errors.
        void record_gpu(int ordinal)
        {
            process_state& s = state();
            if (!s.host)
            {
                return;
            }
            std::string uuid = s.session.gpu_uuid(ordinal);
            if (uuid.empty())
            {
                return;  // a driver without cuDeviceGetUuid: no id that every process agrees on
            }
            std::vector<std::string> others = s.host->use_gpu(uuid, ordinal_label(ordinal));
            if (others.empty())
            {
                return;
            }
            py::gil_scoped_acquire acquire;
            std::string message = "xcuda: device " + std::to_string(ordinal) + " (" + uuid +
                                  ") is also used by " + joined(others) + ". Engines on one GPU share its memory and "
                                  "compute. Start as many engines per host as it has GPUs, or give each engine its "
                                  "own XCUDA_DEVICE.";
            if (PyErr_WarnEx(sharing_warning_type, message.c_str(), 1) != 0)
            {
                throw py::error_already_set();
            }
        }

        // The labels of the other engines on the current device's GPU, when this is an engine with a
        // context there; empty otherwise.
        std::vector<std::string> sharing_now()
        {
            process_state& s = state();
            int ordinal = s.session.device_ordinal();
            if (!s.host || ordinal < 0 || !s.session.context(ordinal))
            {
                return {};
            }
            std::string uuid = s.session.gpu_uuid(ordinal);
            return uuid.empty() ? std::vector<std::string>{} : s.host->others_on(uuid);
        }
    }

    void join_host_if_engine()
    {
        py::object label = py::module_::import("xcuda.parallel").attr("engine_label")();
        process_state& s = state();
        if (label.is_none() || s.host)
        {
            return;
        }
        s.engine_label = label.cast<std::string>();
        try
        {
            s.host = std::make_unique<host_registry>(host_registry::default_directory());
            // A refused XCUDA_DEVICE or rank stays refused: no slot hides it.
            if (s.session.choice_problem().empty() && s.session.choice().open_to_host_slot())
            {
                int slot = s.host->lease_slot(s.engine_label);
                s.session.set_host_slot({slot, s.engine_label});
            }
            for (int ordinal = 0; ordinal < 64; ++ordinal)
            {
                if (s.session.context(ordinal))
                {
                    record_gpu(ordinal);  // contexts made before this process knew it was an engine
                }
            }
        }
        catch (const xcuda::error& e)
        {
            // The engine still works, on the device chosen without a slot; say why it was not placed.
            s.host.reset();
            std::string message = std::string("xcuda: this engine could not join its host's engine registry: ") +
                                  e.what() + ". It stays on device " + std::to_string(s.session.device_ordinal()) +
                                  " and is not checked for sharing a GPU.";
            if (PyErr_WarnEx(PyExc_RuntimeWarning, message.c_str(), 1) != 0)
            {
                throw py::error_already_set();
            }
        }
    }

    py::dict device_choice_report()
    {
        cuda_session& session = process_session();
        session.settle_device_choice();
        const device_choice& choice = session.choice();
        process_state& s = state();
        py::dict report;
        std::string problem = session.choice_problem();
        report["ordinal"] = problem.empty() ? py::object(py::int_(session.device_ordinal())) : py::none();
        report["source"] = problem.empty() ? choice.source_name() : std::string("refused");
        report["reason"] = problem.empty() ? choice.reason() : problem;
        report["engine"] = s.host ? py::object(py::str(s.engine_label)) : py::none();
        report["host_slot"] = s.host && s.host->slot() >= 0 ? py::object(py::int_(s.host->slot())) : py::none();
        report["registry"] = s.host ? py::object(py::str(s.host->directory())) : py::none();
        int ordinal = session.device_ordinal();
        bool has_context = ordinal >= 0 && session.context(ordinal);
        report["gpu_uuid"] = has_context ? py::object(py::str(session.gpu_uuid(ordinal))) : py::none();
        report["shared_with"] = sharing_now();
        return report;
    }

    void register_placement(py::module_& m)
    {
        sharing_warning_type = PyErr_NewExceptionWithDoc(
            "xcuda.DeviceSharingWarning",
            "Two xcuda engines of one host use one GPU: they share its memory and compute.", PyExc_UserWarning,
            nullptr);
        m.attr("DeviceSharingWarning") = py::handle(sharing_warning_type);
        process_session().set_context_hook(record_gpu);

        m.def("device_choice", &device_choice_report,
              R"(Which device this process computes on, and why.

Returns
-------
dict
    ordinal : int or None
        The current device (None when the environment's value was refused).
    source : str
        "XCUDA_DEVICE", a launcher's local-rank variable ("OMPI_COMM_WORLD_LOCAL_RANK",
        "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"), "host slot" (an ipyparallel engine's
        order among this host's xcuda engines), "xcuda.set_device", "default" or "refused".
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
        m.def("_join_host", &join_host_if_engine,
              "Join this host's engine registry when this process is an ipyparallel engine (done at import "
              "and at %load_ext xcuda; calling it again does nothing).");
    }
}
