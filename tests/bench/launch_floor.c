/* The floor of a Python launch call, for tests/bench/launch_floor.py (a benchmark helper, not part of xcuda).

   A CPython extension whose launcher objects take any arguments, read none of them and call cuLaunchKernel
   with arguments packed beforehand: what one launch from a Python loop costs when the binding does nothing.
   Its `loop(count)` launches the same kernel `count` times from C, the C++ driver-API loop inside the same
   process. `subscript(launcher)` gives an object whose `[anything]` is the launcher: the floor of
   `kernel[grid, block](...)`'s subscript (tests/bench/launch_instructions.py loops over it as it loops over
   xcuda's). libcuda is opened at import (dlopen, as xcuda does; XCUDA_LIBCUDA names another, as for xcuda), so
   the extension builds without a driver.

   Build: cc -O2 -shared -fPIC -I<Python's include> -I<CUDA>/include launch_floor.c -o _launch_floor<suffix> -ldl */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

typedef CUresult (*ctx_get_current_fn)(CUcontext*);
typedef CUresult (*module_load_data_fn)(CUmodule*, const void*);
typedef CUresult (*module_get_function_fn)(CUfunction*, CUmodule, const char*);
typedef CUresult (*launch_kernel_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                     CUstream, void**, void**);
typedef CUresult (*get_error_string_fn)(CUresult, const char**);

static ctx_get_current_fn ctx_get_current;
static module_load_data_fn module_load_data;
static module_get_function_fn module_get_function;
static launch_kernel_fn launch_kernel;
static get_error_string_fn get_error_string;

enum
{
    MAX_LAUNCHERS = 8,
    MAX_PARAMETERS = 64,
    MAX_PARAMETER_BYTES = 64
};

/* One kernel with its arguments packed: a launcher's self is the index of its slot. */
typedef struct
{
    CUfunction function;
    unsigned grid;
    unsigned block;
    void* pointers[MAX_PARAMETERS];
    unsigned char storage[MAX_PARAMETERS][MAX_PARAMETER_BYTES] __attribute__((aligned(16)));
} launcher;

static launcher launchers[MAX_LAUNCHERS];
static int launcher_count;

static PyObject* driver_error(CUresult result, const char* call)
{
    const char* text = NULL;
    if (get_error_string == NULL || get_error_string(result, &text) != CUDA_SUCCESS || text == NULL)
    {
        text = "unknown error";
    }
    PyErr_Format(PyExc_RuntimeError, "%s failed: %s (CUresult %d)", call, text, (int)result);
    return NULL;
}

static launcher* launcher_of(PyObject* self)
{
    long index = PyLong_AsLong(self);
    if (index < 0 || index >= launcher_count)
    {
        if (!PyErr_Occurred())
        {
            PyErr_SetString(PyExc_ValueError, "no such launcher");
        }
        return NULL;
    }
    return &launchers[index];
}

/* launcher(*anything): one cuLaunchKernel with the packed arguments, on the legacy default stream. */
static PyObject* launch(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    (void)args;
    (void)nargs;
    launcher* l = &launchers[PyLong_AsLong(self)];
    CUresult result = launch_kernel(l->function, l->grid, 1, 1, l->block, 1, 1, 0, NULL, l->pointers, NULL);
    if (result != CUDA_SUCCESS)
    {
        return driver_error(result, "cuLaunchKernel");
    }
    Py_RETURN_NONE;
}

static PyMethodDef launch_def = {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL,
                                 "Launch the kernel with the packed arguments; the call's arguments are not read."};

/* loop(launcher, count): count launches from C, the GIL released. */
static PyObject* loop(PyObject* module, PyObject* args)
{
    (void)module;
    PyObject* which = NULL;
    long count = 0;
    if (!PyArg_ParseTuple(args, "Ol", &which, &count))
    {
        return NULL;
    }
    if (count < 0 || count > 100000000L)
    {
        PyErr_SetString(PyExc_ValueError, "count must be between 0 and 100,000,000");
        return NULL;
    }
    /* Only a launcher of this module: checked before its self is read (any other object's layout differs). */
    if (!PyCFunction_Check(which) || PyCFunction_GET_FUNCTION(which) != (PyCFunction)(void (*)(void))launch)
    {
        PyErr_SetString(PyExc_TypeError, "loop takes a launcher made by make_launcher");
        return NULL;
    }
    launcher* l = launcher_of(PyCFunction_GET_SELF(which));
    if (l == NULL)
    {
        return NULL;
    }
    CUresult result = CUDA_SUCCESS;
    Py_BEGIN_ALLOW_THREADS
    for (long i = 0; i < count && result == CUDA_SUCCESS; ++i)
    {
        result = launch_kernel(l->function, l->grid, 1, 1, l->block, 1, 1, 0, NULL, l->pointers, NULL);
    }
    Py_END_ALLOW_THREADS
    if (result != CUDA_SUCCESS)
    {
        return driver_error(result, "cuLaunchKernel");
    }
    Py_RETURN_NONE;
}

/* subscript(launcher): an object whose [key] returns the launcher, reading nothing of the key. */
typedef struct
{
    PyObject_HEAD
    PyObject* launcher;
} subscript_object;

static PyObject* subscript_item(PyObject* self, PyObject* key)
{
    (void)key;
    PyObject* launcher = ((subscript_object*)self)->launcher;
    Py_INCREF(launcher);
    return launcher;
}

static void subscript_dealloc(PyObject* self)
{
    Py_XDECREF(((subscript_object*)self)->launcher);
    Py_TYPE(self)->tp_free(self);
}

static PyMappingMethods subscript_mapping = {NULL, subscript_item, NULL};

static PyTypeObject subscript_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_launch_floor.Subscript",
    .tp_basicsize = sizeof(subscript_object),
    .tp_dealloc = subscript_dealloc,
    .tp_as_mapping = &subscript_mapping,
    .tp_flags = Py_TPFLAGS_DEFAULT,
};

static PyObject* subscript(PyObject* module, PyObject* launcher)
{
    (void)module;
    subscript_object* made = PyObject_New(subscript_object, &subscript_type);
    if (made == NULL)
    {
        return NULL;
    }
    Py_INCREF(launcher);
    made->launcher = launcher;
    return (PyObject*)made;
}

/* make_launcher(image: bytes, name: str, grid: int, block: int, parameters: sequence of bytes) -> launcher.
   Loads the image (PTX or cubin) into the calling thread's current context; each parameter's bytes are its
   value as the kernel takes it (struct.pack). */
static PyObject* make_launcher(PyObject* module, PyObject* args)
{
    (void)module;
    Py_buffer image;
    const char* name = NULL;
    unsigned grid = 0;
    unsigned block = 0;
    PyObject* parameters = NULL;
    if (!PyArg_ParseTuple(args, "y*sIIO", &image, &name, &grid, &block, &parameters))
    {
        return NULL;
    }
    PyObject* result = NULL;
    PyObject* sequence = PySequence_Fast(parameters, "parameters must be a sequence of bytes");
    if (sequence == NULL)
    {
        goto done;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence);
    if (launcher_count >= MAX_LAUNCHERS || count > MAX_PARAMETERS || grid == 0 || block == 0)
    {
        PyErr_Format(PyExc_ValueError, "at most %d launchers of at most %d parameters, grid and block above 0",
                     MAX_LAUNCHERS, MAX_PARAMETERS);
        goto done;
    }
    if (image.len == 0)
    {
        PyErr_SetString(PyExc_ValueError, "the image is empty: pass a cubin, or PTX ending with b'\\0'");
        goto done;
    }
    launcher* l = &launchers[launcher_count];
    memset(l, 0, sizeof *l);
    for (Py_ssize_t i = 0; i < count; ++i)
    {
        PyObject* item = PySequence_Fast_GET_ITEM(sequence, i);
        if (!PyBytes_Check(item) || PyBytes_GET_SIZE(item) == 0 || PyBytes_GET_SIZE(item) > MAX_PARAMETER_BYTES)
        {
            PyErr_Format(PyExc_ValueError, "parameter %zd must be bytes of 1 to %d bytes", i, MAX_PARAMETER_BYTES);
            goto done;
        }
        memcpy(l->storage[i], PyBytes_AS_STRING(item), (size_t)PyBytes_GET_SIZE(item));
        l->pointers[i] = l->storage[i];
    }
    CUcontext context = NULL;
    CUresult status = ctx_get_current(&context);
    if (status != CUDA_SUCCESS || context == NULL)
    {
        PyErr_SetString(PyExc_RuntimeError,
                        "no current CUDA context on this thread: launch an xcuda kernel first (its context is made "
                        "current), then make the launcher");
        goto done;
    }
    CUmodule loaded = NULL;
    if ((status = module_load_data(&loaded, image.buf)) != CUDA_SUCCESS)
    {
        driver_error(status, "cuModuleLoadData");
        goto done;
    }
    if ((status = module_get_function(&l->function, loaded, name)) != CUDA_SUCCESS)
    {
        driver_error(status, "cuModuleGetFunction");
        goto done;
    }
    l->grid = grid;
    l->block = block;
    PyObject* index = PyLong_FromLong(launcher_count);
    if (index == NULL)
    {
        goto done;
    }
    result = PyCFunction_New(&launch_def, index);
    Py_DECREF(index);
    if (result != NULL)
    {
        ++launcher_count;
    }
done:
    Py_XDECREF(sequence);
    PyBuffer_Release(&image);
    return result;
}

static PyMethodDef methods[] = {
    {"make_launcher", make_launcher, METH_VARARGS, "make_launcher(image, name, grid, block, parameters) -> launcher"},
    {"loop", loop, METH_VARARGS, "loop(launcher, count): count launches from C"},
    {"subscript", subscript, METH_O, "subscript(launcher): an object whose [key] is the launcher"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef definition = {PyModuleDef_HEAD_INIT, "_launch_floor", NULL, -1, methods};

PyMODINIT_FUNC PyInit__launch_floor(void)
{
    /* The driver xcuda opens: XCUDA_LIBCUDA names another (the tests' fake driver), as it does for xcuda. */
    const char* path = getenv("XCUDA_LIBCUDA");
    if (path == NULL || path[0] == '\0')
    {
        path = "libcuda.so.1";
    }
    void* cuda = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (cuda == NULL)
    {
        PyErr_Format(PyExc_ImportError, "%s could not be opened (%s): an NVIDIA driver is needed", path, dlerror());
        return NULL;
    }
    ctx_get_current = (ctx_get_current_fn)dlsym(cuda, "cuCtxGetCurrent");
    module_load_data = (module_load_data_fn)dlsym(cuda, "cuModuleLoadData");
    module_get_function = (module_get_function_fn)dlsym(cuda, "cuModuleGetFunction");
    launch_kernel = (launch_kernel_fn)dlsym(cuda, "cuLaunchKernel");
    get_error_string = (get_error_string_fn)dlsym(cuda, "cuGetErrorString");
    if (!ctx_get_current || !module_load_data || !module_get_function || !launch_kernel)
    {
        PyErr_SetString(PyExc_ImportError, "the driver lacks cuCtxGetCurrent, cuModuleLoadData, "
                                           "cuModuleGetFunction or cuLaunchKernel");
        return NULL;
    }
    if (PyType_Ready(&subscript_type) < 0)
    {
        return NULL;
    }
    return PyModule_Create(&definition);
}
