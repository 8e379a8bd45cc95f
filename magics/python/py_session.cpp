// The session as seen from Python: xcuda.compile, info(), status(), set_device(), device_count(),
// and _shutdown() (called by the xcuda kernel at shutdown_request).
//
// info() and status() return a Report (frontend/session_report builds it from core state): a few
// tables rendered as HTML in notebooks (_repr_html_) and as aligned text elsewhere (__repr__).

#include "py_common.hpp"

#include <optional>
#include <utility>

#include <cstdio>

#include "cuda_driver.hpp"
#include "cuda_module.hpp"
#include "parse_interrupts.hpp"
#include "cell_build.hpp"
#include "device_scope.hpp"
#include "launch_progress.hpp"
#include "session_control.hpp"
#include "session_report.hpp"
#include "cuda_session.hpp"
#include "module_registry.hpp"
#include "nvrtc_library.hpp"

namespace xcuda::python
{
    namespace
    {
        // The device choice as xcuda.device_choice() reports it (the engine placement knows the registry).
        device_placement placement(notebook_session& notebook)
        {
            return device_placement::of(notebook.placement.choice_report());
        }

        session_report info(notebook_session& notebook) { return session_report::info(notebook.session, placement(notebook)); }

        // The device arrays of the namespace as core values; the report leaves out IPython's '_' names.
        session_report status(notebook_session& notebook, py::object namespace_object)
        {
            std::vector<named_array> arrays;
            if (!namespace_object.is_none())
            {
                PyTypeObject* type = device_array_type();
                for (auto item : py::reinterpret_borrow<py::dict>(namespace_object))
                {
                    if (Py_TYPE(item.second.ptr()) == type)
                    {
                        const device_array& array = unchecked_instance<device_array>(item.second.ptr());
                        arrays.push_back({str_of(item.first), str_of(py::tuple(py::cast(array.shape))),
                                          str_of(array.dtype), array.nbytes(),
                                          array.buffer->valid() ? array.buffer->device() : -1});
                    }
                }
            }
            return session_report::status(notebook.registry, notebook.compiler, arrays, &notebook.session.resources());
        }
    }

    bool python_interrupted()
    {
        py::gil_scoped_acquire acquire;
        if (PyErr_CheckSignals() != 0)
        {
            PyErr_Clear();  // re-raised as KeyboardInterrupt saying what was stopped
            return true;
        }
        return false;
    }

    py::object compile_module(notebook_session& notebook, const std::string& source, const std::string& name,
                              compile_options options, const std::map<std::string, std::string>* headers)
    {
        return wrap_module(build_module(notebook, source, name, std::move(options), headers));
    }

    std::shared_ptr<cuda_module> build_module(notebook_session& notebook, const std::string& source, const std::string& name,
                                              compile_options options, const std::map<std::string, std::string>* headers)
    {
        return cell_build::build(
            notebook.registry, notebook.session, source, name, std::move(options), headers,
            [](const std::function<void()>& compile) {
                py::gil_scoped_release release;
                compile();
            },
            [](const std::string& warning) {
                if (PyErr_WarnEx(PyExc_UserWarning, warning.c_str(), 1) < 0)
                {
                    throw py::error_already_set();
                }
            });
    }

    namespace
    {
        // A long launch on the simulator (frontend/launch_progress): on Python's main thread, which alone
        // receives Ctrl-C (Kernel > Interrupt), the interrupt is asked for and the progress drawn by
        // xcuda/progress.py; other threads' launches are neither drawn nor interrupted. The check of the
        // thread needs no GIL, so a launch from another thread never waits for it.
        void connect_launch_progress()
        {
            const unsigned long main_thread = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
            auto on_main = [main_thread] { return PyThread_get_thread_ident() == main_thread; };
            auto* view = new py::object();  // the Progress shown for the running launch; never freed (outlives Python)
            // Ctrl-C while Python draws raises KeyboardInterrupt in the drawing code: it stops the launch at the next call.
            auto interrupted_while_drawing = std::make_shared<bool>(false);
            launch_progress::connect([on_main, interrupted_while_drawing] {
                                         return on_main() && (std::exchange(*interrupted_while_drawing, false) ||
                                                              python_interrupted());
                                     },
                                     [on_main, view, interrupted_while_drawing](const launch_progress::update& u) {
                                         if (!on_main())
                                         {
                                             return;
                                         }
                                         py::gil_scoped_acquire acquire;
                                         try
                                         {
                                             py::module_ progress = py::module_::import("xcuda.progress");
                                             if (!u.warning.empty())
                                             {
                                                 progress.attr("warn")(u.warning);
                                             }
                                             if (u.what == launch_progress::update::kind::show)
                                             {
                                                 if (view->is_none() || !*view)
                                                 {
                                                     *view = progress.attr("open_progress")(true);
                                                 }
                                                 if (!view->is_none())
                                                 {
                                                     view->attr("show")(u.text, u.html, u.line);
                                                 }
                                             }
                                             else if (u.what == launch_progress::update::kind::clear && !view->is_none() && *view)
                                             {
                                                 view->attr("clear")(u.line);
                                                 *view = py::none();
                                             }
                                         }
                                         catch (py::error_already_set& e)
                                         {
                                             if (e.matches(PyExc_KeyboardInterrupt))
                                             {
                                                 *interrupted_while_drawing = true;
                                                 return;
                                             }
                                             // Drawing failed mid-launch, where no cell can end with it: reported
                                             // as Python reports errors of callbacks, and the launch goes on.
                                             e.discard_as_unraisable("xcuda's progress of a simulated launch");
                                         }
                                     });
        }

        // Waits and compiles connected to Python: interrupts, and device printf output to sys.stdout.
        void connect_session_hooks(notebook_session& notebook)
        {
            connect_launch_progress();
            cuda_session& session = notebook.session;
            session_control::connect_driver_version();  // nothing is loaded here
            // Waits for the GPU poll; these connect them to Python: Ctrl-C (Kernel > Interrupt) ends a
            // wait, and device printf output goes to sys.stdout, which is the cell's output in a notebook.
            // A compile polls too (it runs in a child process that an interrupt stops).
            session.waits().set_interrupt_check(python_interrupted);
            notebook.compiler.set_interrupt_check(python_interrupted);
            parse_interrupts::set_check(python_interrupted);  // the signature reader, which runs in this process
            session_control::use_worker_beside_this_library(notebook.compiler);  // else a fork per compile
            session.waits().set_output_sink([](const std::string& text) {
                py::gil_scoped_acquire acquire;
                try
                {
                    py::object out = py::module_::import("sys").attr("stdout");
                    out.attr("write")(py::str(text));
                    out.attr("flush")();
                }
                catch (py::error_already_set&)
                {
                    std::fwrite(text.data(), 1, text.size(), stderr);  // no sys.stdout: keep the text anyway
                }
            });
        }

        // Report, info(), status().
        void register_reports(py::module_& m, notebook_session& notebook)
        {
            py::class_<session_report>(m, "Report", "Tables shown as HTML in notebooks and as text elsewhere.")
                .def("_repr_html_", &session_report::html)
                .def("__repr__", &session_report::text)
                .def_property_readonly("tables",
                                       [](const session_report& r) {
                                           py::list tables;
                                           for (const auto& table : r.tables)
                                           {
                                               py::dict entry;
                                               entry["title"] = table.title;
                                               entry["columns"] = table.columns;
                                               entry["rows"] = table.rows;
                                               tables.append(entry);
                                           }
                                           return tables;
                                       },
                                       "The tables as dicts: title, columns, rows.");

            m.def("info", [&notebook] { return info(notebook); }, "The current device, its memory, and the driver and NVRTC versions (a Report).");
            m.def("status", [&notebook](py::object names) { return status(notebook, names); }, py::arg("namespace") = py::none(),
                  "Resident modules, the device arrays bound in `namespace` (a dict), and the compile cache (a Report).");
        }

        // xcuda.compile.
        void register_compile(py::module_& m, notebook_session& notebook)
        {
            m.def("compile",
                  [&notebook](const std::string& source, const std::string& name, const std::string& arch, const std::string& std,
                     std::vector<std::string> defines, std::vector<std::string> include_dirs, bool lineinfo,
                     bool fast_math, std::vector<std::string> options, std::vector<std::string> instantiate,
                     std::optional<std::map<std::string, std::string>> headers) {
                      compile_options o;
                      o.arch = arch;
                      o.std = std;
                      o.defines = std::move(defines);
                      o.include_dirs = std::move(include_dirs);
                      o.lineinfo = lineinfo;
                      o.fast_math = fast_math;
                      o.extra = std::move(options);
                      o.name_expressions = std::move(instantiate);
                      return compile_module(notebook, source, name, o, headers ? &*headers : nullptr);
                  },
                  py::arg("source"), py::kw_only(), py::arg("name") = "", py::arg("arch") = "", py::arg("std") = "",
                  py::arg("defines") = std::vector<std::string>{}, py::arg("include_dirs") = std::vector<std::string>{},
                  py::arg("lineinfo") = false, py::arg("fast_math") = false,
                  py::arg("options") = std::vector<std::string>{}, py::arg("instantiate") = std::vector<std::string>{},
                  py::arg("headers") = py::none(),
                  R"(Compile CUDA C++ with NVRTC, as %%cuda does, and return the Module.

    Parameters
    ----------
    source : str
        CUDA C++ with one or more __global__ functions.
    name : str, optional
        The module's name; re-compiling under the same name replaces the module.
    arch : str, optional
        sm_XX (CUBIN and PTX) or compute_XX (PTX only); default: the GPU's sm_XX, or compute_75.
    std, defines, include_dirs, lineinfo, fast_math, options, instantiate
        As the %%cuda options --std, -D, -I, --lineinfo, --fast-math, raw NVRTC options and
        --instantiate ('saxpy<float>': the instance becomes module['saxpy<float>']).
    headers : dict, optional
        Header cells to compile with (name -> text), as Module.headers gives them; default: the
        session's header cells (%%cuda_header) that the source includes.

    Raises
    ------
    CompileError
        With NVRTC's log, the source line numbers and the options.)");
        }

        // What lives in the session: memory, resources, header cells, modules, device output.
        void register_session_contents(py::module_& m, notebook_session& notebook)
        {
            cuda_session& session = notebook.session;
            m.def("memory_info",
                  [&session] {
                                auto [free_bytes, total_bytes] = session.memory_info(session.device_ordinal());
                      return py::make_tuple(free_bytes, total_bytes);
                  },
                  "(free, total) device memory in bytes, as the driver reports it.");
            m.def("session_stats",
                  [&notebook, &session] {
                                auto modules = session.resources().totals("module");
                      auto buffers = session.resources().totals("buffer");
                      py::dict stats;
                      stats["active"] = session.active();
                      stats["loaded_modules"] = modules.first;
                      stats["buffers"] = buffers.first;
                      stats["buffer_bytes"] = buffers.second;
                      auto cached = session.resources().totals("cached");
                      stats["cached_temporaries"] = cached.first;
                      stats["cached_temporary_bytes"] = cached.second;
                      stats["registered_modules"] = notebook.registry.modules().size();
                      auto arrays = session.resources().totals("cuda array");
                      stats["cuda_arrays"] = arrays.first;
                      stats["cuda_array_bytes"] = arrays.second;
                      stats["textures"] = session.resources().totals("texture").first;
                      stats["surfaces"] = session.resources().totals("surface").first;
                      return stats;
                  },
                  "Counts of what lives in the session: loaded modules, device buffers and their bytes, the launch "
                  "temporaries kept for the next launch (xcuda.release_cached_temporaries), CUDA arrays and their "
                  "bytes, texture and surface objects.");
            m.def("set_header",
                  [&notebook](const std::string& name, const std::string& text) {
                      py::list stale;
                      for (const auto& module : notebook.registry.set_header(name, text))
                      {
                          stale.append(module->name());
                      }
                      return stale;
                  },
                  py::arg("name"), py::arg("text"),
                  R"(Keep a header in memory for later cells' #include "name" (what %%cuda_header does). Returns the
    names of the modules compiled with an older text of it: they are stale until their cells run again.)");
            m.def("remove_header",
                  [&notebook](const std::string& name) {
                      bool found = false;
                      py::list stale;
                      for (const auto& module : notebook.registry.remove_header(name, found))
                      {
                          stale.append(module->name());
                      }
                      if (!found)
                      {
                          throw py::key_error("no header cell named '" + name + "': xcuda.headers() lists them");
                      }
                      return stale;
                  },
                  py::arg("name"),
                  R"(Forget a header cell (from %%cuda_header or set_header): a later #include of the name finds the
    include folders or xcuda's stand-in of a standard header again. Returns the names of the modules compiled with
    it, now stale until their cells run again. KeyError when there is no header of that name.)");
            m.def("headers", [&notebook] { return notebook.registry.headers(); }, "Header cells: name -> text.");
            m.def("_modules",
                  [&notebook] {
                      py::list modules;
                      for (const auto& module : notebook.registry.modules())
                      {
                          modules.append(wrap_module(module));
                      }
                      return modules;
                  },
                  "The modules of the session's %%cuda cells and compile() calls, oldest first.");
            m.def("_flush_device_output",
                  [&session] {
                      // End of a cell: device printf output of launches not yet waited for appears in that
                      // cell. Only while a module that calls printf is loaded (the wait costs the async).
                                if (session_control::output_waiting(session))
                      {
                          int ordinal = session.device_ordinal();
                          py::gil_scoped_release release;
                          session.waits().synchronize(ordinal);
                      }
                  },
                  "Wait for launches not yet waited for when a loaded module calls printf, so that its output "
                  "appears in the cell that launched (called after each cell).");
            m.def("_interrupted_work_running", [&session] { return session.waits().interrupted_work_running(); },
                  "Whether GPU work whose wait was interrupted is still running (then only a new process stops it).");
            m.def("_session_lost", [&session] { return session.lost_reason(); },
                  "Why the GPU is unusable in this process (\"\" while it is usable).");
        }

        // Which device: the simulator, set_device, current_device, xcuda.device(n), peers, copies between devices, device_count.
        void register_device_choice(py::module_& m, notebook_session& notebook)
        {
            cuda_session& session = notebook.session;
            m.def("_use_simulator", [&session] { return session_control::use_simulator(session); },
                  "The core of xcuda.use_simulator(): switches, and returns the line that confirms it.");
            m.def("_use_gpu", [&session] { return session_control::use_gpu(session); },
                  "The core of xcuda.use_gpu(): switches back to the NVIDIA driver, and returns the line that "
                  "confirms it.");
            m.def("_take_fallback_notice", [] { return cuda_driver::take_fallback_notice(); },
                  "Why the process fell back to the PTX simulator (\"no NVIDIA driver was found\"), the first time "
                  "it is asked after the fallback; \"\" every other time.");
            m.def("simulated",
                  [] {
                      try
                      {
                          return cuda_driver::get().simulated();
                      }
                      catch (const std::exception&)
                      {
                          return false;  // no device at all (XCUDA_DEVICE=gpu without a driver): not simulated
                      }
                  },
                  R"(True when this session's kernels run on the PTX simulator, on the CPU.

    Asks the driver layer, which falls back to the simulator where no NVIDIA driver or no device is
    found and nothing chose the device (as the first launch would); makes no CUDA context. A notebook
    uses it to keep measuring cells short there (xcuda.sized) and to label what it measured
    (xcuda.measured). False on a GPU, and where there is no device at all.)");
            m.def("set_device", [&session](int ordinal) { session.set_device(ordinal); }, py::arg("ordinal"),
                  R"(Choose the current device: later allocations, Streams, Events, launches and synchronize() use it.

    Any time: every device keeps its own primary context, modules and buffers. XCUDA_DEVICE, a
    launcher's local rank or an ipyparallel engine's slot on its host set the initial choice
    (xcuda.device_choice() says which). `with xcuda.device(n):` chooses one for a block.)");
            m.def("current_device",
                  [&session] {
                                session.settle_device_choice();
                      return session.device_ordinal();
                  },
                  "The ordinal of the current device (-1 while a malformed XCUDA_DEVICE or local rank is refused; "
                  "xcuda.device_choice() says why).");
            py::class_<device_scope>(m, "DeviceScope", "What xcuda.device(n) returns: a context manager.")
                .def("__enter__", [&session](device_scope& scope) { return scope.enter(session); })
                .def("__exit__", [&session](device_scope& scope, py::args) { scope.exit(session); return false; })
                .def_property_readonly("ordinal", &device_scope::ordinal, "The device chosen inside the block.")
                .def("__repr__", [](const device_scope& scope) { return "xcuda.device(" + std::to_string(scope.ordinal()) + ")"; });
            m.def("device", [&session](int ordinal) { return device_scope(session, ordinal); },
                  py::arg("ordinal"),
                  R"(A context manager choosing device `ordinal` for its block, restoring the previous one after.

        with xcuda.device(1):
            y1 = xcuda.to_device(y[half:])      # lives on device 1
            saxpy[grid, block](a, x1, y1, out1, m)   # runs on device 1)");
            m.def("can_access_peer", [&session](int a, int b) { return session.can_access_peer(a, b); },
                  py::arg("a"), py::arg("b"), "Whether kernels on device a can use memory of device b (a peer path).");
            m.def("enable_peer_access", [&session](int a, int b) { session.enable_peer_access(a, b); },
                  py::arg("a"), py::arg("b"),
                  R"(Let devices a and b use each other's memory (both directions; calling again does nothing).

    Afterwards a kernel on device a may take a DeviceArray of device b as an argument (it reads and
    writes it over NVLink or PCIe). Raises ValueError when the hardware has no peer path.)");
            m.def("copy",
                  [](py::handle destination, py::handle source, py::object method) {
                      PyTypeObject* type = device_array_type();
                      if (Py_TYPE(destination.ptr()) != type || Py_TYPE(source.ptr()) != type)
                      {
                          throw py::type_error("xcuda.copy(dst, src) copies between DeviceArrays (any devices); got " +
                                               type_name(destination) + " and " + type_name(source) +
                                               ". For host arrays use xcuda.to_device(a) or arr.copy_to_host()");
                      }
                      device_array& to = unchecked_instance<device_array>(destination.ptr());
                      const device_array& from = unchecked_instance<device_array>(source.ptr());
                      session_control::check_copy_sizes(to.nbytes(), from.nbytes());
                      std::string how = method.is_none() ? std::string() : method.cast<std::string>();
                      if (capture_device_copy(to, from))
                      {
                          return std::string("device");
                      }
                      py::gil_scoped_release release;
                      return device_buffer::copy(*to.buffer, *from.buffer, from.nbytes(), how, true);
                  },
                  py::arg("dst"), py::arg("src"), py::arg("method") = py::none(),
                  R"(Copy device array src into dst (equal byte sizes, any devices); returns when done.

    Returns the method used: "device" (same device), "peer" (cuMemcpyPeer over NVLink or PCIe, when
    the devices have a peer path) or "staged" (through page-locked host memory). method= forces one.)");
            m.def("device_count", [&session] { return session.device_count(); },
                  "Number of CUDA devices (raises CudaUnavailableError without a driver).");
            m.def("driver_available", [&session] { return session.try_ensure(); },
                  "True when a driver and a GPU can be used; never raises.");
        }

        // Where and how NVRTC compiles; the default target.
        void register_compiler_info(py::module_& m, notebook_session& notebook)
        {
            cuda_session& session = notebook.session;
            m.def("nvrtc_version", [] { return nvrtc_compiler::version(); }, "NVRTC's (major, minor).");
            m.def("compile_process",
                  [&notebook] {
                      compiler::process_info where = notebook.compiler.where_compiles();
                      py::dict d;
                      d["mode"] = where.mode;
                      d["program"] = where.program.empty() ? py::object(py::none()) : py::cast(where.program);
                      d["pid"] = where.pid > 0 ? py::cast(where.pid) : py::object(py::none());
                      d["starts"] = where.starts;
                      return d;
                  },
                  R"(Where NVRTC compiles run; never raises.

    Returns
    -------
    dict
        ``mode``: "worker" (the long-lived helper xcuda-compile beside the module: the normal case),
        "fork" (no xcuda-compile was found beside the module: a fork of this process per compile, which
        pays NVRTC's first-call cost every time and is slow in a large process) or "in-process"
        (XCUDA_COMPILE_PROCESS=0); ``program``: xcuda-compile's path or None; ``pid``: the worker's
        process id while it runs, else None; ``starts``: how many workers this process started (1 once
        it compiled; more when one was interrupted, crashed or was killed, each start paying NVRTC's
        first call again).)");
            m.def("nvrtc_library",
                  [] {
                      py::dict d;
                      d["path"] = nvrtc_library::available() ? py::cast(nvrtc_library::path()) : py::object(py::none());
                      d["searched"] = nvrtc_library::search_log();
                      auto version = nvrtc_library::loaded_version();
                      d["version"] = nvrtc_library::available() ? py::cast(version) : py::object(py::none());
                      d["reason"] = nvrtc_library::reason();
                      d["driver_note"] = nvrtc_library::driver_note();
                      return d;
                  },
                  R"(Where NVRTC was loaded from; never raises.

    Returns
    -------
    dict
        ``path``: the libnvrtc.so.13 or libnvrtc.so.12 file in use, or None when none was found;
        ``version``: its (major, minor) or None; ``reason``: why this one ("NVRTC 12.9: the driver
        supports CUDA 12.9"), or, when XCUDA_NVRTC names something unusable, what is wrong;
        ``driver_note``: one line when the driver is older than this NVRTC (its modules will not load)
        saying what to install, else ""; ``searched``: each place tried, in order (XCUDA_NVRTC, already
        loaded, $CUDA_HOME, $CUDA_PATH, NVIDIA's wheels beside this module, the loader path, the
        build's toolkit, /usr/local/cuda), with what came of it, and the choice.)");
            m.def("default_arch", [&session] { return session.default_arch(); },
                  "The compile target used when none is given: the GPU's sm_XX, or compute_75 without one.");
        }

        // _shutdown (the kernel's shutdown_request).
        void register_shutdown(py::module_& m, notebook_session& notebook)
        {
            cuda_session& session = notebook.session;
            m.def("_shutdown",
                  [&notebook, &session] {
                      notebook.registry.clear();
                      session.close();
                  },
                  "Free every module and buffer and release the CUDA context (the kernel calls this at shutdown).");
        }
    }

    void register_session(py::module_& m, notebook_session& notebook)
    {
        connect_session_hooks(notebook);
        register_reports(m, notebook);
        register_compile(m, notebook);
        register_session_contents(m, notebook);
        register_device_choice(m, notebook);
        register_compiler_info(m, notebook);
        register_shutdown(m, notebook);
    }
}
