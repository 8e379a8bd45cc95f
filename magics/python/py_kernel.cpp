// xcuda.Kernel and xcuda.Module: compiled kernels as Python objects.
//
// A Kernel keeps its module alive (std::shared_ptr), so one kept from an earlier run of a cell stays
// launchable. kernel[grid, block] returns a Launcher; the last one is cached on the kernel, so a loop
// launching with the same configuration creates no objects. The texts, resources, variant options and
// the cache itself are the core's (runtime/module_report, kernel_variant, recent_cache).

#include "py_common.hpp"
#include "py_fast_launch.hpp"

#include "cuda_module.hpp"
#include "cuda_session.hpp"
#include "kernel_variant.hpp"
#include "launch_configuration.hpp"
#include "module_report.hpp"
#include "recent_cache.hpp"
#include "resource_usage.hpp"
#include "errors.hpp"

namespace xcuda::python
{
    namespace
    {
        // stream= and shared_mem= taken out of keywords into dims (with grid and block); the rest returned.
        py::dict pop_launch_keywords(const cuda_session& session, py::kwargs keywords, launch_dims& dims, py::object& stream_object, py::object grid,
                                     py::object block)
        {
            py::dict rest;
            py::object shared = py::int_(0);
            for (auto item : keywords)
            {
                std::string key = item.first.cast<std::string>();
                if (key == "stream")
                    stream_object = py::reinterpret_borrow<py::object>(item.second);
                else if (key == "shared_mem")
                    shared = py::reinterpret_borrow<py::object>(item.second);
                else
                    rest[item.first] = item.second;
            }
            parse_launch_key(session, py::make_tuple(grid, block, stream_object, shared), dims, stream_object);
            return rest;
        }

        struct py_kernel
        {
            std::shared_ptr<cuda_kernel> kernel;
            // The launch fast path's entries, by argument types, shared by this kernel's Launchers.
            std::shared_ptr<fast_launch_cache> fast = std::make_shared<fast_launch_cache>();
            // The launchers of the last few configurations: a loop over devices alternates between
            // one (grid, block, stream) per device, and each should find its own.
            recent_cache<py::object, py::object, 4> launchers;
            // The key and Launcher `launchers` found last (borrowed: it holds both, and remember() forgets the
            // hit before it may drop them). Read and written with the GIL held, like `launchers`.
            PyObject* hit_key = nullptr;
            PyObject* hit_launcher = nullptr;

            // The loop's case in a few compares: a (grid, block) tuple of the very objects of the last hit.
            PyObject* last_hit(PyObject* key) const noexcept
            {
                PyObject* hit = hit_key;
                return hit && PyTuple_CheckExact(key) && PyTuple_GET_SIZE(key) == 2 && PyTuple_CheckExact(hit) &&
                               PyTuple_GET_SIZE(hit) == 2 && PyTuple_GET_ITEM(key, 0) == PyTuple_GET_ITEM(hit, 0) &&
                               PyTuple_GET_ITEM(key, 1) == PyTuple_GET_ITEM(hit, 1)
                           ? hit_launcher
                           : nullptr;
            }

            PyObject* cached(PyObject* key)
            {
                PyObject* found_key = nullptr;
                const py::object* launcher = launchers.find([key, &found_key](const py::object& k) {
                    bool same = same_items(k.ptr(), key) || same_launch_key(k.ptr(), key, 0);
                    found_key = same ? k.ptr() : nullptr;
                    return same;
                });
                if (!launcher)
                {
                    return nullptr;
                }
                hit_key = found_key;
                hit_launcher = launcher->ptr();
                return hit_launcher;
            }

            void remember(py::object key, py::object launcher)
            {
                hit_key = nullptr;
                hit_launcher = nullptr;
                launchers.remember(std::move(key), std::move(launcher));
            }

            // The loop's case first: a new (grid, block) tuple of the very objects of a remembered key (small
            // ints are cached by Python, and a loop passes the same variables): pointer compares only.
            static bool same_items(PyObject* a, PyObject* b) noexcept
            {
                if (!PyTuple_CheckExact(a) || !PyTuple_CheckExact(b) || PyTuple_GET_SIZE(a) != PyTuple_GET_SIZE(b))
                {
                    return false;
                }
                for (Py_ssize_t i = 0, n = PyTuple_GET_SIZE(a); i < n; ++i)
                {
                    if (PyTuple_GET_ITEM(a, i) != PyTuple_GET_ITEM(b, i))
                    {
                        return false;
                    }
                }
                return true;
            }

            // a == b as Python's == says. A loop's key is a new tuple of the same ints every call: tuples
            // (grid and block, or their own tuples of up to 3) and ints are compared here by value, without
            // tuple_richcompare's generic path (half of the cached lookup's cost); anything else, such as
            // a numpy integer or a stream object, by PyObject_RichCompareBool.
            static bool same_launch_key(PyObject* a, PyObject* b, int depth)
            {
                if (a == b)
                {
                    return true;
                }
                if (PyLong_CheckExact(a) && PyLong_CheckExact(b))
                {
                    int overflow_a = 0;
                    int overflow_b = 0;
                    long long x = PyLong_AsLongLongAndOverflow(a, &overflow_a);
                    long long y = PyLong_AsLongLongAndOverflow(b, &overflow_b);
                    if (overflow_a == 0 && overflow_b == 0)
                    {
                        return x == y;  // (-1 is a value here: AndOverflow sets no error for an exact int)
                    }
                }
                else if (depth < 2 && PyTuple_CheckExact(a) && PyTuple_CheckExact(b))
                {
                    Py_ssize_t size = PyTuple_GET_SIZE(a);
                    if (size != PyTuple_GET_SIZE(b))
                    {
                        return false;
                    }
                    for (Py_ssize_t i = 0; i < size; ++i)
                    {
                        if (!same_launch_key(PyTuple_GET_ITEM(a, i), PyTuple_GET_ITEM(b, i), depth + 1))
                        {
                            return false;
                        }
                    }
                    return true;
                }
                int same = PyObject_RichCompareBool(a, b, Py_EQ);
                if (same < 0)
                {
                    PyErr_Clear();  // an uncomparable key: the full path reports it
                }
                return same == 1;
            }
        };

        struct py_module
        {
            std::shared_ptr<cuda_module> module;
            py::dict kernels;
        };

        // None as no value, anything else cast to T (as py::cast does).
        template <class T>
        std::optional<T> optional_of(py::handle value)
        {
            return value.is_none() ? std::nullopt : std::optional<T>(value.cast<T>());
        }

        py::list parameters(const kernel_signature& signature)
        {
            py::list result;
            for (const auto& parameter : signature.parameters)
            {
                py::dict entry;
                entry["name"] = parameter.name;
                entry["type"] = parameter.type;
                entry["pointer"] = parameter.is_pointer;
                entry["const"] = parameter.is_const;
                entry["dtype"] = dtype_of_parameter(parameter);
                entry["size"] = parameter.size;
                entry["default"] = parameter.default_value.empty() ? py::object(py::none())
                                                                   : py::object(py::str(parameter.default_value));
                // Why the reader will not pass this parameter (its type depends on an #if it could not
                // decide, or the compiled code disagrees with its layout); None when it will.
                entry["refusal"] = parameter.refusal.empty() ? py::object(py::none())
                                                             : py::object(py::str(parameter.refusal));
                // "texture" or "surface" for a texture or surface object's handle (dtype uint64); None otherwise.
                entry["object"] = parameter.handle_object.empty() ? py::object(py::none())
                                                                  : py::object(py::str(parameter.handle_object));
                result.append(entry);
            }
            return result;
        }

        py::object launcher_for(py_kernel& self, py::object key)
        {
            if (PyObject* launcher = self.cached(key.ptr()))
            {
                return py::reinterpret_borrow<py::object>(launcher);
            }
            launch_dims dims;
            py::object stream_object;
            parse_launch_key(self.kernel->module()->session(), key, dims, stream_object);
            py::object launcher = make_launcher(self.kernel, dims, std::move(stream_object), self.fast);
            self.remember(key, launcher);
            return launcher;
        }

        py::object forall(py_kernel& self, long long n, long long block)
        {
            long long grid = launch_configuration::forall_grid(n, block);
            return launcher_for(self, py::make_tuple(grid, block));
        }

        py::object wrap_kernel(const std::shared_ptr<cuda_module>& module, const kernel_signature& signature)
        {
            py_kernel kernel;
            kernel.kernel = std::make_shared<cuda_kernel>(module, signature);
            return py::cast(std::move(kernel));
        }
    }

    namespace
    {
        binaryfunc g_generic_subscript = nullptr;

        // kernel[grid, block] for a configuration found in the kernel's cache: compare the key with the cached
        // ones and return that Launcher, without pybind11's dispatch (a third of the launch's cost otherwise).
        // Anything else goes to the pybind11-bound __getitem__ (parsing, errors, caching).
        [[gnu::noinline]] PyObject* searched_subscript(PyObject* self, PyObject* key)
        {
            if (PyObject* launcher = unchecked_instance<py_kernel>(self).cached(key))
            {
                Py_INCREF(launcher);
                return launcher;
            }
            return g_generic_subscript(self, key);
        }

        // The loop's case, the same objects as the last hit, in a function of its own: no frame to set up
        // for the search.
        PyObject* cached_subscript(PyObject* self, PyObject* key)
        {
            if (PyObject* launcher = unchecked_instance<py_kernel>(self).last_hit(key))
            {
                Py_INCREF(launcher);
                return launcher;
            }
            return searched_subscript(self, key);
        }
    }

    py::object wrap_module(const std::shared_ptr<cuda_module>& module)
    {
        py_module wrapped;
        wrapped.module = module;
        for (const auto& signature : module->signatures())
        {
            wrapped.kernels[py::str(signature.name)] = wrap_kernel(module, signature);
        }
        return py::cast(std::move(wrapped));
    }

    namespace
    {
        // ResourceUsage and Occupancy: what kernel.resources and kernel.occupancy() return.
        void register_resource_types(py::module_& m)
        {
            py::class_<resource_usage>(m, "ResourceUsage", "A kernel's resources, from ptxas' report or the driver.")
                .def_readonly("registers", &resource_usage::registers, "Registers per thread.")
                .def_readonly("spill_stores", &resource_usage::spill_stores, "Bytes of register spill stores (ptxas).")
                .def_readonly("spill_loads", &resource_usage::spill_loads, "Bytes of register spill loads (ptxas).")
                .def_readonly("local_bytes", &resource_usage::stack_frame,
                              "Local memory per thread: ptxas' stack frame, or the driver's local size.")
                .def_readonly("static_shared", &resource_usage::static_shared, "Bytes of static shared memory per block.")
                .def_readonly("constant", &resource_usage::constant, "Bytes of user __constant__ memory.")
                .def_readonly("barriers", &resource_usage::barriers, "Named barriers used (ptxas).")
                .def_readonly("max_threads_per_block", &resource_usage::max_threads_per_block,
                              "Largest block the kernel can launch with (driver; 0 from ptxas).")
                .def_readonly("source", &resource_usage::source, "'ptxas' or 'driver'.")
                .def_readonly("arch", &resource_usage::arch, "The target the figures are for.")
                .def("__repr__", &module_report::resource_text);

            py::class_<occupancy_report>(m, "Occupancy", "Occupancy of a kernel at one block size, from the driver.")
                .def_readonly("block", &occupancy_report::block)
                .def_readonly("shared_mem", &occupancy_report::dynamic_shared)
                .def_readonly("active_blocks_per_sm", &occupancy_report::active_blocks_per_sm)
                .def_readonly("active_warps_per_sm", &occupancy_report::active_warps_per_sm)
                .def_readonly("max_warps_per_sm", &occupancy_report::max_warps_per_sm)
                .def_property_readonly("occupancy", [](const occupancy_report& o) { return o.occupancy; },
                                       "Active warps / the SM's maximum, 0..1.")
                .def_readonly("limiter", &occupancy_report::limiter, "The resource that limits blocks per SM.")
                .def_readonly("suggested_block", &occupancy_report::suggested_block,
                              "The block size with the highest occupancy (cuOccupancyMaxPotentialBlockSize).")
                .def_readonly("suggested_min_grid", &occupancy_report::suggested_min_grid,
                              "Blocks that fill the device at the suggested block size.")
                .def("__repr__", &module_report::occupancy_text);
        }

        // How a Kernel launches: kernel[grid, block], forall, launch, time, profile, sanitize.
        void add_launches(py::class_<py_kernel>& kernel_class)
        {
            kernel_class
                .def("__getitem__",
                     [](py_kernel& self, py::object key) { return launcher_for(self, std::move(key)); },
                     py::arg("config"), "kernel[grid, block(, stream(, shared_mem))] -> Launcher")
                .def("forall",
                     [](py_kernel& self, long long n, long long block) { return forall(self, n, block); },
                     py::arg("n"), py::arg("block") = 256,
                     R"(A Launcher with enough blocks of `block` threads to cover n elements (grid = ceil(n / block)).)")
                .def("launch",
                     [](py_kernel& self, py::object grid, py::object block, py::args args, py::object stream,
                        unsigned shared_mem) {
                         py::object launcher = launcher_for(self, py::make_tuple(grid, block, stream, shared_mem));
                         return launcher(*args);
                     },
                     py::arg("grid"), py::arg("block"), py::kw_only(), py::arg("stream") = py::none(),
                     py::arg("shared_mem") = 0, "Launch: same as kernel[grid, block, stream, shared_mem](*args).")
                .def("time",
                     [](py_kernel& self, py::object grid, py::object block, py::args args, py::object stream,
                        unsigned shared_mem, int repeat, int warmup, py::object nbytes) {
                         launch_dims dims;
                         py::object stream_object;
                         parse_launch_key(self.kernel->module()->session(), py::make_tuple(grid, block, stream, shared_mem), dims,
                                          stream_object);
                         return time_launch(*self.kernel, dims, stream_object, args, repeat, warmup, nbytes);
                     },
                     py::arg("grid"), py::arg("block"), py::kw_only(), py::arg("stream") = py::none(),
                     py::arg("shared_mem") = 0, py::arg("repeat") = 100, py::arg("warmup") = 5,
                     py::arg("nbytes") = py::none(),
                     R"(Time launches with CUDA events.

    Parameters
    ----------
    grid, block : int or tuple
        Launch configuration.
    *args
        The kernel's arguments (numpy arrays are copied once, outside the timed region).
    repeat, warmup : int
        Timed launches, and untimed launches before them.
    nbytes : int, optional
        Bytes the kernel moves, for the bandwidth figure; default: the bytes of the array arguments.

    Returns
    -------
    KernelTiming
        median_ms, min_ms, max_ms, samples_ms and bandwidth_gbs.)")
                .def("profile",
                     [](const py_kernel& self, py::object grid, py::object block, py::args args, py::kwargs keywords) {
                         launch_dims dims;
                         py::object stream_object = py::none();
                         py::dict options = pop_launch_keywords(self.kernel->module()->session(), keywords, dims, stream_object, grid, block);
                         return profile_launch(self.kernel, dims, stream_object, args, profile_options_from(options));
                     },
                     py::arg("grid"), py::arg("block"),
                     R"(Profile one launch with Nsight Compute, in a child process (see %cuda_profile).

    kernel.profile(grid, block, *args, stream=None, shared_mem=0, full=False, source=True, keep=False)
    is kernel[grid, block, stream, shared_mem].profile(*args, ...). Returns an xcuda.LaunchProfile.)")
                .def("sanitize",
                     [](const py_kernel& self, py::object grid, py::object block, py::args args, py::kwargs keywords) {
                         launch_dims dims;
                         py::object stream_object = py::none();
                         py::dict rest = pop_launch_keywords(self.kernel->module()->session(), keywords, dims, stream_object, grid, block);
                         sanitize_options o = sanitize_options_from(rest, "stream, shared_mem, tool and keep");
                         return sanitize_launch(self.kernel, dims, stream_object, args, o.tool, o.keep);
                     },
                     py::arg("grid"), py::arg("block"),
                     R"(Check one launch with compute-sanitizer, in a child process (see %cuda_sanitize).

    kernel.sanitize(grid, block, *args, stream=None, shared_mem=0, tool="memcheck", keep=False); tool is
    memcheck, racecheck, initcheck or synccheck. Returns an xcuda.SanitizerReport.)")
                .def_property_readonly("_fast_launch_types", [](const py_kernel& self) { return self.fast->size(); },
                                       "How many argument type signatures the launch fast path knows (for tests).")
                .def("__call__",
                     [](py_kernel& self, py::args, py::kwargs) {
                         throw py::type_error(module_report::needs_configuration(*self.kernel));
                     });
        }

        // What a Kernel is: its names, signature, parameters, module, views, variants and resources.
        void add_descriptions(py::class_<py_kernel>& kernel_class, notebook_session& notebook)
        {
            kernel_class
                .def_property_readonly("name", [](const py_kernel& k) { return k.kernel->signature().name; },
                                       "The kernel's C++ name.")
                .def_property_readonly("qualified_name",
                                       [](const py_kernel& k) { return k.kernel->signature().qualified_name; },
                                       "The name with its namespaces.")
                .def_property_readonly("file", [](const py_kernel& k) { return k.kernel->signature().file; },
                                       "Where the kernel is defined: \"\" for the cell itself, else the header cell (or "
                                       "-I header) the cell includes it from.")
                .def_property_readonly("symbol", [](const py_kernel& k) { return k.kernel->symbol(); },
                                       "The symbol in the binary (the mangled name unless extern \"C\").")
                .def_property_readonly("signature", [](const py_kernel& k) { return k.kernel->signature().to_string(); },
                                       "The C++ signature as parsed.")
                .def_property_readonly("parameters", [](const py_kernel& k) { return parameters(k.kernel->signature()); },
                                       "A list of dicts: name, type, pointer, const, dtype (of the value, or of the pointee for a pointer; a "
                                       "structured dtype for a struct or CUDA vector type), size (bytes passed), default (the "
                                       "default argument as written, or None), object ('texture' or 'surface' for a texture or surface "
                                       "object's 64-bit handle, else None).")
                .def_property_readonly("is_template", [](const py_kernel& k) { return k.kernel->signature().is_template(); },
                                       "Whether the kernel is a template (needs instantiation to launch).")
                .def_property_readonly("module", [](const py_kernel& k) { return wrap_module(k.kernel->module()); },
                                       "The Module the kernel belongs to.")
                .def_property_readonly("ptx", [](const py_kernel& k) { return kernel_ptx(*k.kernel); },
                                       "The kernel's own PTX (.entry), as an xcuda.PTX (a str shown highlighted).")
                .def_property_readonly("sass", [](const py_kernel& k) { return kernel_sass(*k.kernel); },
                                       "The kernel's SASS for the module's sm_XX (or sm_NN for compute_NN), as an "
                                       "xcuda.SASS; needs nvdisasm or cuobjdump from the toolkit.")
                .def("lines",
                     [](const py_kernel& k, bool sass, py::object profile) {
                         if (profile.is_none())
                         {
                             return kernel_lines(*k.kernel, sass);
                         }
                         if (!py::isinstance<profile_result>(profile))
                         {
                             module_report::not_a_profile(type_name(profile));
                         }
                         const profile_result& measured = profile.cast<const profile_result&>();
                         module_report::check_profile_of(*k.kernel, measured.kernel);
                         return kernel_lines(*k.kernel, sass, measured.profile.line_notes());
                     },
                     py::arg("sass") = false, py::arg("profile") = py::none(),
                     R"(The cell's source side by side with the kernel's PTX (or SASS), each source line and its
    instructions in the same colour; hover or click a line to highlight both sides, hover an opcode to
    read what it does. As text: the instructions grouped under their source line. Compiled with line
    information for sm_XX. With profile (an xcuda.LaunchProfile), each source line also shows its share
    of the launch's stall samples and instructions.)")
                .def("variant",
                     [&notebook](const py_kernel& k, py::object arch, py::object fast_math, py::object std,
                        std::vector<std::string> defines, std::vector<std::string> options) {
                         const cuda_module& module = *k.kernel->module();
                         compile_options o = kernel_variant::options(module, optional_of<std::string>(arch),
                                                                     optional_of<bool>(fast_math),
                                                                     optional_of<std::string>(std), defines, options);
                         py::object variant = compile_module(notebook, module.source(), kernel_variant::name(module), o, &module.headers());
                         py::dict kernels = variant.attr("kernels");
                         return py::object(kernels[py::str(k.kernel->signature().name)]);
                     },
                     py::kw_only(), py::arg("arch") = py::none(), py::arg("fast_math") = py::none(),
                     py::arg("std") = py::none(), py::arg("defines") = std::vector<std::string>{},
                     py::arg("options") = std::vector<std::string>{},
                     R"(The same kernel compiled with changed options (for xcuda.compare): arch, fast_math, std,
    extra defines and raw NVRTC options. The names in the namespace are not touched.)")
                .def_property_readonly("registers", [](const py_kernel& k) { return k.kernel->registers(); },
                                       "Registers per thread (loads the module; needs a GPU).")
                .def_property_readonly("resources", [](const py_kernel& k) { return k.kernel->resources(); },
                                       "ResourceUsage: from the driver with a GPU, else from ptxas' report (no GPU needed).")
                .def_property_readonly("ptxas_resources", [](const py_kernel& k) { return k.kernel->ptxas_resources(); },
                                       "ResourceUsage from ptxas' report, compiling for sm_XX if needed.");
        }

        // A Kernel's occupancy, function attributes and cooperative launch limits, and its repr.
        void add_attributes(py::class_<py_kernel>& kernel_class)
        {
            kernel_class
                .def("occupancy",
                     [](const py_kernel& k, int block, int shared_mem) { return k.kernel->occupancy(block, shared_mem); },
                     py::arg("block"), py::arg("shared_mem") = 0,
                     R"(Occupancy at a block size through the driver's occupancy API (needs a GPU).

    Returns
    -------
    Occupancy
        active blocks and warps per SM, occupancy (0..1), the limiting resource, a suggested block size.)")
                .def_property_readonly("max_threads_per_block",
                                       [](const py_kernel& k) { return k.kernel->max_threads_per_block(); },
                                       "Largest block this kernel can launch with on the current GPU.")
                .def("set_attribute",
                     [](const py_kernel& k, const std::string& name, int value) { k.kernel->set_attribute(name, value); },
                     py::arg("name"), py::arg("value"),
                     R"(cudaFuncSetAttribute: set a function attribute by name, on every device the kernel runs on.

    name is one of max_dynamic_shared_size_bytes, preferred_shared_memory_carveout (percent, -1 for
    none), required_cluster_width/height/depth, non_portable_cluster_size_allowed,
    cluster_scheduling_policy_preference; the driver's CU_FUNC_ATTRIBUTE_... and the runtime's
    cudaFuncAttribute... spellings (MaxDynamicSharedMemorySize, PreferredSharedMemoryCarveout) work
    too. An unknown or read-only name is refused, listing the known ones. A launch asking for more than
    48 KiB of dynamic shared memory raises max_dynamic_shared_size_bytes by itself.)")
                .def("get_attribute",
                     [](const py_kernel& k, const std::string& name) { return k.kernel->get_attribute(name); },
                     py::arg("name"),
                     "cuFuncGetAttribute by name (the names of set_attribute, and the read-only num_regs, "
                     "shared_size_bytes, local_size_bytes, const_size_bytes, max_threads_per_block, ptx_version, "
                     "binary_version, ...), on the current device.")
                .def_property_readonly("attributes_set",
                                       [](const py_kernel& k) {
                                           py::dict result;
                                           for (const auto& [name, value] : k.kernel->attributes_set())
                                           {
                                               result[py::str(name)] = value;
                                           }
                                           return result;
                                       },
                                       "The attributes set_attribute was given: name -> value.")
                .def_property(
                    "cooperative",
                    [](const py_kernel& k) { return k.kernel->cooperative(); },
                    [](const py_kernel& k, py::object value) {
                        k.kernel->set_cooperative(value.is_none() ? -1 : value.cast<bool>() ? 1 : 0);
                    },
                    R"(Whether launches go through cuLaunchCooperativeKernel (cudaLaunchCooperativeKernel).

    Automatic: True when the kernel's PTX reads the grid workspace of a cooperative launch, which
    cooperative_groups::this_grid().sync() compiles to (uses_grid_sync). Set True or False to force
    it, None to go back to automatic. A cooperative grid larger than can be resident at once is
    refused naming the maximum (max_cooperative_blocks).)")
                .def_property_readonly("uses_grid_sync", [](const py_kernel& k) { return k.kernel->uses_grid_sync(); },
                                       "Whether the kernel's PTX syncs the whole grid (cooperative_groups grid sync).")
                .def("max_cooperative_blocks",
                     [](const py_kernel& k, py::object block, unsigned shared_mem) {
                         launch_dims dims;
                         py::object stream_object;
                         parse_launch_key(k.kernel->module()->session(), py::make_tuple(1, block), dims, stream_object);
                         return k.kernel->max_cooperative_blocks(dims.block[0] * dims.block[1] * dims.block[2], shared_mem);
                     },
                     py::arg("block"), py::arg("shared_mem") = 0,
                     "The largest grid (in blocks) of a cooperative launch at this block size: "
                     "cuOccupancyMaxActiveBlocksPerMultiprocessor x the SM count (needs a GPU).")
                .def("__repr__", [](const py_kernel& k) { return module_report::kernel_text(*k.kernel); });
        }

        // Launch attributes (runtime/launch/launch_attributes): cluster=, priority=, programmatic= on top of
        // grid, block, stream and shared_mem; the checks are the core's, at launch.
        void parse_attributes(launch_dims& dims, py::object cluster, py::object priority, bool programmatic)
        {
            if (!cluster.is_none())
            {
                dims.cluster = parse_dims(cluster, "cluster");
            }
            if (!priority.is_none())
            {
                if (!PyLong_Check(priority.ptr()) && !PyIndex_Check(priority.ptr()))
                {
                    throw py::type_error("priority must be an int, not " + type_name(priority));
                }
                dims.priority = priority.cast<int>();
                dims.has_priority = true;
            }
            dims.programmatic = programmatic;
        }

        void add_launch_attributes(py::class_<py_kernel>& kernel_class)
        {
            kernel_class
                .def("configure",
                     [](py_kernel& self, py::object grid, py::object block, py::object stream, py::object shared_mem,
                        py::object cluster, py::object priority, bool programmatic) {
                         launch_dims dims;
                         py::object stream_object;
                         parse_launch_key(self.kernel->module()->session(), py::make_tuple(grid, block, stream, shared_mem),
                                          dims, stream_object);
                         parse_attributes(dims, std::move(cluster), std::move(priority), programmatic);
                         return make_launcher(self.kernel, dims, std::move(stream_object), self.fast);
                     },
                     py::arg("grid"), py::arg("block"), py::kw_only(), py::arg("stream") = py::none(),
                     py::arg("shared_mem") = 0, py::arg("cluster") = py::none(), py::arg("priority") = py::none(),
                     py::arg("programmatic") = false,
                     R"(A Launcher with launch attributes, made with cuLaunchKernelEx.

    kernel.configure(grid, block, cluster=(2, 1, 1))(*args) launches thread-block clusters of that shape
    (compute capability 9.0+; the grid a multiple of the cluster on every axis; a kernel compiled with
    __cluster_dims__ has its own, and a different cluster= is refused). priority= sets the launch's
    priority, programmatic=True allows programmatic dependent launch. stream and shared_mem are those of
    kernel[grid, block, stream, shared_mem]. Captured into a `with xcuda.graph()` block with its
    attributes.)")
                .def("max_active_clusters",
                     [](py_kernel& self, py::object cluster, py::object block, py::object shared_mem) {
                         launch_dims dims;
                         py::object stream_object;
                         parse_launch_key(self.kernel->module()->session(), py::make_tuple(1, block, py::none(), shared_mem),
                                          dims, stream_object);
                         parse_attributes(dims, cluster, py::none(), false);
                         return self.kernel->max_active_clusters(dims);
                     },
                     py::arg("cluster") = py::none(), py::arg("block") = 128, py::arg("shared_mem") = 0,
                     "cuOccupancyMaxActiveClusters: how many clusters of this shape (None: the kernel's "
                     "__cluster_dims__) with this block and dynamic shared memory can be resident at once on the "
                     "current GPU.");
        }

        // Module: a compiled cell's kernels, variables, PTX and binary.
        void register_modules(py::module_& m)
        {
            py::class_<py_module>(m, "Module", R"(A compiled cell: its kernels, PTX and binary.

    Kernels are reachable as module.name and module['name'].)")
                .def("__getitem__",
                     [](const py_module& self, const std::string& name) -> py::object {
                         if (!self.kernels.contains(name))
                         {
                             throw py::key_error(module_report::missing_kernel(*self.module, name));
                         }
                         return self.kernels[py::str(name)];
                     })
                .def("__getattr__",
                     [](const py_module& self, const std::string& name) -> py::object {
                         if (!self.kernels.contains(name))
                         {
                             throw py::attribute_error(module_report::missing_attribute(*self.module, name));
                         }
                         return self.kernels[py::str(name)];
                     })
                .def("__contains__", [](const py_module& self, const std::string& name) { return self.kernels.contains(name); })
                .def("__iter__", [](const py_module& self) { return py::iter(self.kernels); })
                .def("__len__", [](const py_module& self) { return py::len(self.kernels); })
                .def("__dir__",
                     [](py::object self) {
                         py::list names = py::module_::import("builtins").attr("object").attr("__dir__")(self);
                         for (auto key : self.cast<const py_module&>().kernels)
                         {
                             names.append(key.first);
                         }
                         return names;
                     })
                .def_property_readonly("kernels", [](const py_module& self) { return py::dict(self.kernels); },
                                       "Name -> Kernel.")
                .def("get_global",
                     [](const py_module& self, const std::string& name) { return wrap_module_variable(self.module, name); },
                     py::arg("name"),
                     R"(The __constant__/__device__/__managed__ variable `name` of the cell, as an xcuda.ModuleVariable
    (PyCUDA's and CuPy's get_global): get() and set(value) read and write it, typed by its declaration.)")
                .def_property_readonly("_global_values",
                                       [](const py_module& self) {
                                           py::dict values;
                                           for (const auto& [symbol, bytes] : self.module->global_values())
                                           {
                                               values[py::str(symbol)] = py::bytes(bytes);
                                           }
                                           return values;
                                       },
                                       "What the host wrote into the module's variables (symbol -> bytes), for %cuda_recover.")
                .def("_remember_global_values",
                     [](const py_module& self, const std::map<std::string, std::string>& values) {
                         self.module->remember_global_values(values);
                     },
                     py::arg("values"), "Take values of _global_values back (written at the module's next load).")
                .def_property_readonly("globals", [](const py_module& self) { return module_globals(self.module); },
                                       "The cell's module variables by attribute: module.globals.c_Kernel (an "
                                       "xcuda.ModuleVariable); module.globals.c_Kernel = array writes it.")
                .def_property_readonly("name", [](const py_module& self) { return self.module->name(); })
                .def_property_readonly("ptx", [](const py_module& self) { return ptx_text(self.module->compiled().ptx); },
                                       "The module's PTX, as an xcuda.PTX (a str shown highlighted).")
                .def_property_readonly("sass", [](const py_module& self) { return module_sass_text(*self.module); },
                                       "The module's SASS (needs nvdisasm or cuobjdump), as an xcuda.SASS.")
                .def_property_readonly("ptx_by_line",
                                       [](const py_module& self) {
                                           return ptx_text(kernel_views::module_ptx_by_line(*self.module));
                                       },
                                       "The module's PTX with line information, each run of instructions under a "
                                       "comment naming its source line as the editor numbers it (what %%cuda --ptx "
                                       "shows), as an xcuda.PTX.")
                .def("_place",
                     [](const py_module& self, const std::string& file, int line) {
                         cell_lines::place p = self.module->lines().locate(file, line);
                         return py::make_tuple(p.own, p.label, p.line);
                     },
                     py::arg("file"), py::arg("line"),
                     "A line of the module's line information (.loc file and line) as the editor shows it: (whether "
                     "it is the cell's own, the cell's label, the editor's line).")
                .def_property_readonly("_lines_above", [](const py_module& self) { return self.module->lines().lines_above(); },
                                       "Lines above the source in its cell's editor (the %%cuda line: 1).")
                .def_property_readonly("cubin",
                                       [](const py_module& self) -> py::object {
                                           const std::string& cubin = self.module->compiled().cubin;
                                           return cubin.empty() ? py::object(py::none()) : py::object(py::bytes(cubin));
                                       },
                                       "The CUBIN (bytes) for sm_XX targets, or None for compute_XX.")
                .def_property_readonly("arch", [](const py_module& self) { return self.module->compiled().arch; })
                .def_property_readonly("options", [](const py_module& self) { return self.module->compiled().options; },
                                       "The NVRTC options used.")
                .def_property_readonly("log", [](const py_module& self) { return self.module->compiled().log; },
                                       "NVRTC's log (warnings), possibly empty.")
                .def_property_readonly("source", [](const py_module& self) { return self.module->source(); })
                .def_property_readonly("_recipe",
                                       [](const py_module& self) {
                                           const compile_options& o = self.module->options();
                                           return py::dict(py::arg("source") = self.module->source(),
                                                           py::arg("name") = self.module->name(), py::arg("arch") = o.arch,
                                                           py::arg("std") = o.std, py::arg("defines") = o.defines,
                                                           py::arg("include_dirs") = o.include_dirs,
                                                           py::arg("lineinfo") = o.lineinfo,
                                                           py::arg("fast_math") = o.fast_math,
                                                           py::arg("options") = o.extra,
                                                           py::arg("instantiate") = o.name_expressions,
                                                           py::arg("headers") = self.module->headers());
                                       },
                                       "The xcuda.compile keywords that rebuild this module (used by %cuda_recover).")
                .def_property_readonly("compile_ms", [](const py_module& self) { return self.module->compiled().milliseconds; },
                                       "NVRTC time of the compile that made the binary, in milliseconds.")
                .def_property_readonly("resources",
                                       [](const py_module& self) {
                                           py::dict result;
                                           for (auto& [name, usage] : module_report::ptxas_resources(*self.module))
                                           {
                                               result[py::str(name)] = usage;
                                           }
                                           return result;
                                       },
                                       "Kernel name -> ResourceUsage from this compile's ptxas report (sm_XX targets only).")
                .def_property_readonly("stale", [](const py_module& self) { return self.module->stale(); },
                                       "True when a header cell it includes changed since it was compiled.")
                .def_property_readonly("headers",
                                       [](const py_module& self) { return self.module->headers(); },
                                       "The header cells it was compiled with: name -> text.")
                .def_property_readonly("origin", [](const py_module& self) { return self.module->origin(); },
                                       "Where the binary came from: 'nvrtc' (compiled), 'memory' or 'disk' (the compile caches).")
                .def_property_readonly("loaded", [](const py_module& self) { return self.module->loaded(); },
                                       "Whether the module is loaded on the GPU now.")
                .def_property_readonly("load_ms",
                                       [](const py_module& self) -> py::object {
                                           double ms = self.module->load_ms();
                                           return ms < 0 ? py::object(py::none()) : py::object(py::float_(ms));
                                       },
                                       "Milliseconds the driver took to load it (its last load), or None before one.")
                .def("__repr__", [](const py_module& self) { return module_report::module_text(*self.module); });
        }
    }

    void register_kernels(py::module_& m, notebook_session& notebook)
    {
        register_resource_types(m);
        py::class_<py_kernel> kernel_class(m, "Kernel", R"(A __global__ function compiled by %%cuda or xcuda.compile.

Launch with kernel[grid, block](*args) or kernel[grid, block, stream, shared_mem](*args); grid
and block are ints or tuples of up to 3 ints. Arguments are converted through the C++ signature:
numbers to the declared scalar type (range-checked), pointers from xcuda.DeviceArray, any object
with __cuda_array_interface__, or numpy arrays (copied to the device for the launch, and back
after it for non-const pointers).)");
        add_launches(kernel_class);
        add_descriptions(kernel_class, notebook);
        add_attributes(kernel_class);
        add_launch_attributes(kernel_class);

        auto* kernel_type = reinterpret_cast<PyTypeObject*>(kernel_class.ptr());
        g_generic_subscript = kernel_type->tp_as_mapping->mp_subscript;
        kernel_type->tp_as_mapping->mp_subscript = cached_subscript;
        PyType_Modified(kernel_type);

        register_modules(m);

        m.def("compare",
              [](const py_kernel& left, const py_kernel& right, bool sass) {
                  return compare_kernels(*left.kernel, *right.kernel, sass);
              },
              py::arg("left"), py::arg("right"), py::arg("sass") = false,
              R"(Two kernels' PTX (or SASS) side by side, differences marked: for example
xcuda.compare(saxpy, saxpy.variant(fast_math=True)) or saxpy.variant(arch="sm_90").)");
        m.def("grid_for",
              [](long long n, long long block) { return launch_configuration::grid_for(n, block); },
              py::arg("n"), py::arg("block") = 256, "The number of blocks of `block` threads that cover n elements.");
    }
}
