#pragma once
// Declarations shared by the files of the Python module `xcuda`. Each file registers one piece of
// the module (register_*); the objects they share are declared here.
//
// Threading: every function here is called with the GIL held unless it says otherwise; long waits
// (NVRTC compiles, synchronisation) release it.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cuda.h>

#include "bandwidth_probe.hpp"
#include "compiler.hpp"
#include "cuda_graph.hpp"
#include "cuda_kernel.hpp"
#include "cuda_session.hpp"
#include "device_buffer.hpp"
#include "kernel_signature.hpp"
#include "launch_call.hpp"
#include "errors.hpp"
#include "kernel_views.hpp"
#include "profile_result.hpp"
#include "sanitizer_result.hpp"
#include "engine_placement.hpp"
#include "launch_plan.hpp"
#include "magic_arguments.hpp"
#include "module_registry.hpp"
#include "notebook_session.hpp"
#include "nvrtc_compiler.hpp"
#include "text.hpp"

namespace py = pybind11;

namespace xcuda::python
{
    // A grid or block as Python sees it: (x, y, z).
    inline py::tuple dims_tuple(const std::array<unsigned, 3>& dims)
    {
        return py::make_tuple(dims[0], dims[1], dims[2]);
    }

    // The C++ object held by a pybind11 instance whose exact type the caller has already checked. A few
    // loads instead of pybind11's generic cast (type lookup, holder search): for the launch hot path.
    template <class T>
    T& unchecked_instance(PyObject* object)
    {
        auto* instance = reinterpret_cast<py::detail::instance*>(object);
        if (instance->simple_layout)
        {
            return *static_cast<T*>(instance->simple_value_holder[0]);  // one C++ base: what pybind11 itself reads
        }
        return *static_cast<T*>(instance->get_value_and_holder().value_ptr());
    }

    // Whether a pybind11 instance keeps its C++ object in the simple layout. pybind11 decides it by the
    // Python type alone (instance::allocate_layout: one C++ base, a small holder), so one instance answers for
    // every instance of its exact type: the launch fast path asks once per type signature, then reads
    // simple_instance<T> without the test.
    inline bool has_simple_layout(PyObject* object)
    {
        return reinterpret_cast<py::detail::instance*>(object)->simple_layout;
    }
    template <class T>
    T& simple_instance(PyObject* object)
    {
        return *static_cast<T*>(reinterpret_cast<py::detail::instance*>(object)->simple_value_holder[0]);
    }

    // The Python type's name of object, for messages ("numpy.ndarray", "list").
    inline std::string type_name(py::handle object)
    {
        return Py_TYPE(object.ptr())->tp_name;
    }

    // str(object) as a C++ string (py::str's constructor is ambiguous for some pybind11 types).
    inline std::string str_of(py::handle object)
    {
        return py::str(object).cast<std::string>();
    }
    // ---- the notebook's core state ----
    // The binding makes one notebook_session (frontend/notebook_session.hpp) when the module is imported
    // and hands it to each register_* below; each keeps it for its functions. Objects that are given a
    // session later (a Graph, a Launcher) take it from whatever made them; nothing reaches for a global.

    // ---- errors (py_errors.cpp) ----
    void register_errors(py::module_& m);
    // Diagnostics as dicts (file, line, column, severity, message, [source_line,] hint): CompileError's
    // .diagnostics, and without source_line the messages the JupyterLab extension marks.
    py::list diagnostics_list(const std::vector<diagnostic>& messages, bool with_source_line = true);
    // Raises xcuda.CompileError(summary) for an error whose diagnostics `shown` (lines moved by line_offset)
    // are already on screen: its traceback is the summary alone.
    [[noreturn]] void raise_shown_compile_error(const compile_error& error, const std::vector<diagnostic>& shown,
                                                int line_offset, const std::string& summary);

    // ---- device arrays (py_device_array.cpp) ----
    // How many device_array values have been destroyed in this process (a counter that only grows): while it
    // reads the same, every DeviceArray object seen before is still alive, so a pointer to one is not a new
    // object's (the launch fast path compares its last arguments by identity: py_fast_launch.hpp).
    extern std::atomic<std::uint64_t> g_device_arrays_gone;
    struct device_array_departure
    {
        device_array_departure() = default;
        device_array_departure(const device_array_departure&) = default;
        device_array_departure& operator=(const device_array_departure&) = default;
        ~device_array_departure() { g_device_arrays_gone.fetch_add(1, std::memory_order_relaxed); }
    };

    // A typed, C-contiguous view of a device_buffer: what xcuda.to_device / empty / zeros return. Immutable
    // once made (views are new values): the launch fast path relies on it.
    struct device_array
    {
        std::shared_ptr<device_buffer> buffer;
        std::vector<py::ssize_t> shape;
        py::dtype dtype;
        scalar_kind kind = scalar_kind::unknown;

        // Elements: a 1-D array's (the launch path's common case) without the loop over the shape.
        std::size_t size() const { return shape.size() == 1 ? static_cast<std::size_t>(shape[0]) : size_of_shape(); }
        std::size_t size_of_shape() const;
        std::size_t nbytes() const { return size() * static_cast<std::size_t>(dtype.itemsize()); }
        std::uint64_t pointer() const { return buffer->pointer(); }

        device_array_departure departure;  // counts this value's end
    };
    void register_device_array(py::module_& m, notebook_session& notebook);
    // The scalar kind of a numpy dtype: ml_dtypes' bfloat16 and fp8 by name, a structured dtype of two float16
    // (or bfloat16) fields as a packed pair; unknown for other structured, object, ... dtypes.
    scalar_kind kind_of_dtype(const py::dtype& dtype);
    // The numpy dtype matching a scalar kind (ml_dtypes' for bfloat16 and fp8, when installed), or None.
    py::object dtype_of_kind(scalar_kind kind);
    // Whether the ml_dtypes package (numpy's bfloat16 and fp8 dtypes) cannot be imported.
    bool ml_dtypes_missing();
    // The numpy dtype of a value layout: a scalar's, uint64 for a pointer, a structured dtype with the
    // fields at their offsets and the record's itemsize for a struct or CUDA vector type, V<size> for
    // bytes numpy has no kind for (bfloat16, fp8); None when the layout is not known.
    py::object dtype_of_layout(const std::shared_ptr<const value_layout>& layout);
    // A parameter's dtype: of its value, or of its pointee for a pointer; None when not known.
    py::object dtype_of_parameter(const kernel_parameter& parameter);
    // The Python type object of DeviceArray, for exact-type checks on the launch path.
    PyTypeObject* device_array_type();

    // ---- CUDA arrays, textures and surfaces (py_textures.cpp) ----
    void register_textures(py::module_& m, notebook_session& notebook);
    // The handle of an xcuda.Texture or xcuda.Surface, with its kind ("texture" or "surface"); false for any
    // other object. Raises when the object's session is gone.
    bool object_handle(PyObject* object, std::uint64_t& handle, const char*& kind);

    // ---- streams and events (py_stream.cpp) ----
    void register_streams(py::module_& m, notebook_session& notebook);
    // A CUstream from None (the session's default stream), xcuda.Stream, an int handle, or an object
    // with __cuda_stream__ (cuda.core), .ptr (CuPy) or .cuda_stream (PyTorch).
    // Inside a `with xcuda.graph()` block of this thread, None is the graph's stream and another stream is
    // refused (session.captures()).
    CUstream stream_from_object(const cuda_session& session, py::handle object);

    // ---- argument conversion (py_arguments.cpp) ----
    // The Python objects one call needs alive beside its launch_call (the core's transaction): the
    // contiguous numpy arrays the call reads and writes, and, for each user's array that was not
    // contiguous and is written by the kernel, the array and the copy to write back into it.
    struct call_objects
    {
        std::vector<py::object> hosts;
        std::vector<std::pair<py::object, py::object>> write_back;
    };
    // The arguments of a call that gave some by name (kwnames, vectorcall's: their values follow the
    // nargs positional ones) or left some out: in the order of the signature, the parameters left out
    // filled with their default arguments. Only called when a call needs it: a call with every
    // argument positional goes straight to bind_arguments.
    struct completed_arguments
    {
        std::vector<PyObject*> pointers;  // borrowed from the call, or from `owned`
        std::vector<py::object> owned;    // the defaults' values
    };
    void complete_arguments(const cuda_kernel& kernel, PyObject* const* args, std::size_t nargs, PyObject* kwnames,
                            completed_arguments& out);
    // Converts args into call's arguments (its block, host arrays, producers). Raises TypeError/ValueError
    // for a wrong count or type; makes no GPU call (the call does its GPU work when it runs).
    void bind_arguments(launch_call& call, PyObject* const* args, std::size_t nargs, call_objects& objects);
    // Runs the call (without the GIL when it may block) and writes its results back into the user's
    // arrays that were not contiguous.
    void run_call(launch_call& call, call_objects& objects);
    void write_back(call_objects& objects);
    // bind_arguments for a tuple of positional arguments (with the defaults of those left out).
    void bind_argument_tuple(launch_call& call, py::handle args, call_objects& objects);
    // DLPack (py_dlpack.cpp): DeviceArray's export, and DLPack-only arrays as kernel arguments.
    void register_dlpack(py::class_<device_array>& cls);
    bool has_dlpack(PyObject* object);
    void bind_dlpack(launch_call& call, std::size_t index, PyObject* object);

    // xcuda.In, xcuda.Out, xcuda.InOut.
    void register_transfers(py::module_& m);
    // xcuda.transfer_options, transfer_stats, release_host_registrations (py_transfers.cpp).
    void register_transfers_options(py::module_& m, notebook_session& notebook);
    // What keeps a numpy buffer allocated while it is registered in place: null when host is not the
    // caller's own array (a contiguous copy made for one call) or is below the size that is ever
    // registered, else a reference to the array that owns the buffer. GIL held.
    std::shared_ptr<host_memory_owner> memory_owner(const cuda_session& session, const py::array& host, py::handle original);

    // ---- CUDA graphs (py_graph.cpp) ----
    void register_graphs(py::module_& m, notebook_session& notebook);
    // A capture belongs to its stream, as in CUDA (runtime/capture_registry): the refusals below apply to
    // the thread that opened a `with xcuda.graph()` block; another thread's work on another stream goes on.
    // The graph whose `with xcuda.graph()` block this thread opened, or null.
    inline cuda_graph* capturing_graph(const cuda_session& session) noexcept { return session.captures().of_this_thread(); }
    // Raises GraphCaptureError ("<what> cannot be captured in a CUDA graph: <instead>") while this thread has a
    // block open.
    void refuse_while_capturing(const cuda_session& session, const std::string& what, const std::string& instead);
    // The same for one of the core's named refusals (cuda_graph::refusal).
    using graph_refusal = cuda_graph::refusal_kind;
    void refuse_while_capturing(const cuda_session& session, graph_refusal kind);
    // Raises GraphCaptureError for a host array passed as a launch argument (parameter: plan.describe's
    // text) while this thread has a block open, graph.update binds arguments on it, or the launch's stream
    // is capturing.
    void refuse_host_argument(const launch_call& call, const std::string& parameter, const std::string& what);
    // After a launch on a capturing stream (from any thread): records its node in that graph and keeps args
    // alive with it.
    void note_captured_launch(cuda_graph& graph, const std::shared_ptr<cuda_kernel>& kernel, const launch_dims& dims,
                              PyObject* const* args, std::size_t nargs);
    // While this thread has a block open: captures a copy between device and page-locked host (or raises
    // GraphCaptureError for pageable memory), or between two device arrays of the graph's device;
    // returns false (nothing done) when no block is open.
    bool capture_host_copy(const device_array& device, const py::array& host, bool to_device);
    bool capture_device_copy(device_array& destination, const device_array& source);

    // ---- launchers (py_launcher.cpp) ----
    void register_launcher(py::module_& m);
    // Parses kernel[grid, block(, stream(, shared_mem))] into dims and a stream.
    void parse_launch_key(const cuda_session& session, py::handle key, launch_dims& dims, py::object& stream_object);
    // One dimension triple as kernel[grid, block] reads it (an int or a tuple of 1 to 3), `what` naming it.
    std::array<unsigned, 3> parse_dims(py::handle value, const char* what);
    // A new Launcher. It owns a reference to the C++ kernel, not to the Kernel object, so a Kernel
    // caching its last Launcher makes no reference cycle.
    // `fast`: the Kernel object's fast-path cache (py_fast_launch.hpp), shared by its Launchers.
    class fast_launch_cache;
    py::object make_launcher(std::shared_ptr<cuda_kernel> kernel, const launch_dims& dims, py::object stream_object,
                             std::shared_ptr<fast_launch_cache> fast);
    // Times launches with CUDA events; returns a KernelTiming object.
    py::object time_launch(cuda_kernel& kernel, const launch_dims& dims, py::object stream_object, py::args args,
                           int repeat, int warmup, py::object nbytes);

    // ---- kernels and modules (py_kernel.cpp) ----
    void register_kernels(py::module_& m, notebook_session& notebook);
    // ---- module variables and raw addresses (py_module_variable.cpp) ----
    void register_module_variables(py::module_& m);
    // xcuda.ModuleVariable for the variable `name` of module (KeyError listing the known ones).
    py::object wrap_module_variable(const std::shared_ptr<cuda_module>& module, const std::string& name);
    // xcuda.ModuleGlobals: the module's variables by attribute.
    py::object module_globals(const std::shared_ptr<cuda_module>& module);
    // Whether object is an explicit device address (xcuda.Pointer, numpy.uintp, ctypes.c_void_p); its
    // address and extent (0: unknown) if so.
    bool pointer_address(PyObject* object, std::uint64_t& address, std::size_t& nbytes);
    // The Python Module object for a built module (its kernels as Kernel objects).
    py::object wrap_module(const std::shared_ptr<cuda_module>& module);

    // ---- session: info, status, compile, shutdown (py_session.cpp) ----
    void register_session(py::module_& m, notebook_session& notebook);
    // Ctrl-C / Kernel > Interrupt, asked by the core's waits with the GIL released (it takes the GIL).
    bool python_interrupted();

    // ---- TMA tensor maps (py_tensor_map.cpp) ----
    void register_tensor_maps(py::module_& m, notebook_session& notebook);

    // ---- placement: device choice, ipyparallel engines on a host (py_placement.cpp) ----
    void register_placement(py::module_& m, notebook_session& notebook);
    // Joins this host's engine registry when the process is an ipyparallel engine (idempotent).
    void join_host_if_engine(notebook_session& notebook);
    // What xcuda.device_choice() returns: ordinal, source, reason, engine, host_slot, registry,
    // gpu_uuid, shared_with.
    py::dict device_choice_report(notebook_session& notebook);
    // Compiles (through the cache and the module registry), loads the module when a GPU session is
    // active, and returns the Python Module. Releases the GIL while NVRTC runs.
    // headers: the header cells to compile with (a module's own, for a variant or a recovery); null: the
    // session's header cells the source includes.
    // compile_module's build, for a caller that wraps the module after looking at it (%%cuda).
    std::shared_ptr<cuda_module> build_module(notebook_session& notebook, const std::string& source, const std::string& name, compile_options options,
                                              const std::map<std::string, std::string>* headers = nullptr);
    py::object compile_module(notebook_session& notebook, const std::string& source, const std::string& name, compile_options options,
                              const std::map<std::string, std::string>* headers = nullptr);

    // ---- one launch replayed under ncu and compute-sanitizer (py_replay.cpp, py_replay_results.cpp) ----
    // (profile_options, sanitize_options, profile_result and sanitizer_result are the core's: frontend/.)
    // Launcher.profile / Kernel.profile; raises ToolNotFoundError, CudaUnavailableError, ToolError.
    py::object profile_launch(const std::shared_ptr<cuda_kernel>& kernel, const launch_dims& dims,
                              py::handle stream_object, py::args args, const profile_options& options);
    // Launcher.sanitize / Kernel.sanitize with tool memcheck, racecheck, initcheck or synccheck.
    py::object sanitize_launch(const std::shared_ptr<cuda_kernel>& kernel, const launch_dims& dims,
                               py::handle stream_object, py::args args, const std::string& tool, bool keep);
    // Launcher.replay_bundle: the bundle's folder (kept), for running xcuda-replay under other tools.
    py::object replay_bundle_of(const std::shared_ptr<cuda_kernel>& kernel, const launch_dims& dims,
                                py::handle stream_object, py::args args);
    // The options of .profile() and .sanitize() from keywords; TypeError naming an unknown one.
    profile_options profile_options_from(py::dict keywords);
    // The options of .sanitize() from keywords (tool, keep); TypeError naming an unknown one.
    sanitize_options sanitize_options_from(py::dict keywords, const char* takes);
    void register_replay(py::module_& m);

    // ---- teaching views (py_views.cpp) ----
    void register_views(py::module_& m);
    py::object ptx_text(const std::string& text);                 // an xcuda.PTX
    py::object kernel_ptx(cuda_kernel& kernel);                   // the kernel's own .entry
    py::object kernel_sass(cuda_kernel& kernel);                  // the kernel's own SASS
    py::object module_sass_text(cuda_module& module);             // the whole module's SASS
    // source <-> PTX/SASS view; with notes (a profile's per-line figures) shown on the source lines.
    py::object kernel_lines(cuda_kernel& kernel, bool sass,
                            const std::map<int, std::pair<std::string, double>>& notes = {});
    py::object compare_kernels(cuda_kernel& left, cuda_kernel& right, bool sass);

    // ---- size sweeps: xcuda.bench, BenchResult, peak_bandwidth (py_bench.cpp) ----
    void register_bench(py::module_& m, notebook_session& notebook);

    // ---- the core's side of the IPython magics (py_magics.cpp; the magics are xcuda/magics.py) ----
    void register_magics(py::module_& m, notebook_session& notebook);
}
