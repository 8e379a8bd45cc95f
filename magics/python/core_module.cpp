// The compiled part of the Python package `xcuda`: the extension module `xcuda._core`. The package's
// __init__.py (xcuda/__init__.py) imports everything from it and adds the pure-Python parts.
//
// Importing it touches no driver: the CUDA session starts at the first GPU operation.

#include "py_common.hpp"

PYBIND11_MODULE(_core, m)
{
    m.doc() = R"(xcuda: write and run CUDA C++ from notebook cells.

%%cuda compiles a cell with NVRTC and binds every __global__ function as a Kernel object;
kernel[grid, block](*args) launches it with arguments checked against its C++ signature.
Load the magics into any IPython with %load_ext xcuda (the xcuda Jupyter kernel does this itself).
Importing the module never touches the CUDA driver: the session starts at the first GPU operation.)";
    m.attr("__version__") = "0.1.0";
    using namespace xcuda::python;
    // The notebook's core state, handed to each part that needs it. Never destroyed: see notebook_session.
    xcuda::notebook_session& notebook = *new xcuda::notebook_session();
    register_errors(m);
    register_device_array(m, notebook);
    register_streams(m, notebook);
    register_transfers(m);
    register_transfers_options(m, notebook);
    register_launcher(m);
    register_graphs(m, notebook);
    register_views(m);
    register_kernels(m, notebook);
    register_module_variables(m);
    register_textures(m, notebook);
    register_session(m, notebook);
    register_placement(m, notebook);
    register_bench(m, notebook);
    register_replay(m);
    register_magics(m, notebook);
    // Called by xcuda/__init__.py once the package is complete: an ipyparallel engine takes its place on
    // its host when it imports xcuda (%px import xcuda or %px %load_ext xcuda), before any GPU operation,
    // so the slot can choose its device.
    m.def("_join_host_if_engine", [&notebook] { join_host_if_engine(notebook); });
}
