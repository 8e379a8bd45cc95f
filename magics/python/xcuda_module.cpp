// The Python extension module `xcuda`: CUDA from notebook cells.
//
// Importing it touches no driver: the CUDA session starts at the first GPU operation.

#include "py_common.hpp"

PYBIND11_MODULE(xcuda, m)
{
    m.doc() = R"(xcuda: write and run CUDA C++ from notebook cells.

%%cuda compiles a cell with NVRTC and binds every __global__ function as a Kernel object;
kernel[grid, block](*args) launches it with arguments checked against its C++ signature.
Load the magics into any IPython with %load_ext xcuda (the xcuda Jupyter kernel does this itself).
Importing the module never touches the CUDA driver: the session starts at the first GPU operation.)";
    m.attr("__version__") = "0.1.0";
    using namespace xcuda::python;
    register_errors(m);
    register_device_array(m);
    register_streams(m);
    register_transfers(m);
    register_transfers_options(m);
    register_launcher(m);
    register_graphs(m);
    register_views(m);
    register_kernels(m);
    register_session(m);
    register_placement(m);
    register_bench(m);
    register_replay(m);
    register_magics(m);
    // Any interpreter's exit closes the session (scripts, ipykernel, plain IPython): buffers, modules
    // and the page-locked staging buffers are freed before the contexts go, so a leak check at exit
    // (compute-sanitizer --leak-check full) finds nothing of xcuda's own. The xcuda kernel calls
    // _shutdown itself: xeus ends with std::exit, where atexit handlers never run.
    py::module_::import("atexit").attr("register")(m.attr("_shutdown"));
    // Pure Python beside this module: %cuda_recover, and the placeholder of arrays lost in a recovery.
    m.attr("LostArray") = py::module_::import("xcuda_recovery").attr("LostArray");
    // Pure Python beside it too: ipyparallel engines (scatter, gather, engine detection), and the
    // function a pickled DeviceArray is rebuilt with, under the name pickle records (xcuda._from_host).
    py::module_ parallel = py::module_::import("xcuda_parallel");
    m.attr("parallel") = parallel;
    m.attr("HostFallbackWarning") = parallel.attr("HostFallbackWarning");
    py::object from_host = parallel.attr("_from_host");
    from_host.attr("__module__") = "xcuda";
    from_host.attr("__qualname__") = "_from_host";
    m.attr("_from_host") = from_host;
    // An ipyparallel engine takes its place on its host when it imports xcuda (%px import xcuda or
    // %px %load_ext xcuda): before any GPU operation, so the slot can choose its device.
    join_host_if_engine();
}
