#pragma once
// Which Python exception class each core error becomes, and the exception classes the `xcuda` module
// defines (their names, bases and docstrings), as one table. The binding (magics/python/py_errors.cpp)
// makes the classes from the table and raises the class that class_of() names; the attributes an
// exception carries (call, code, log...) are still set there, since they are Python objects.
//
// Pure C++: names are strings ("KernelFault", "TypeError"); nothing here knows Python. Threading: the
// table is constant; every function may be called from any thread.

#include <string>
#include <vector>

#include "errors.hpp"

namespace xcuda
{
    class python_error_class
    {
    public:
        // One exception class of the xcuda module, e.g. {"KernelFault", "CudaError", "A kernel faulted..."}.
        // base is either a builtin ("RuntimeError", "ValueError") or an earlier entry of the table.
        struct entry
        {
            const char* name;
            const char* base;
            const char* doc;
        };

        // The xcuda exception classes, each after its base.
        static const std::vector<entry>& defined();

        // Whether `name` is the root of an xcuda family (its base is a builtin): the class that carries
        // the short traceback, which its subclasses inherit.
        static bool is_root(const entry& e);

        // The Python class `e` becomes: an entry's name, or a builtin ("KeyboardInterrupt", "IndexError",
        // "BufferError", "TypeError", "ValueError", "MemoryError"; "RuntimeError" for a class of the
        // hierarchy without a Python exception of its own). The most derived class decides.
        static std::string class_of(const error& e);
    };
}
