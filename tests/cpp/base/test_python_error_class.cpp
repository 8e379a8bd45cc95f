// base/python_error_class: which Python exception each core error becomes, and the table of the xcuda
// exception classes the binding makes.

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "errors.hpp"
#include "python_error_class.hpp"

namespace
{
    using xcuda::python_error_class;

    std::string python_class_of_error(const xcuda::error& e) { return python_error_class::class_of(e); }

    TEST(python_error_class, the_most_derived_error_class_decides)
    {
        xcuda::kernel_fault fault("cuCtxSynchronize", 700, "CUDA_ERROR_ILLEGAL_ADDRESS", "illegal address", {"k"}, 0, {}, 1);
        EXPECT_EQ(python_class_of_error(fault), "KernelFault");
        EXPECT_EQ(python_class_of_error(xcuda::out_of_memory_error("cuMemAlloc", 2, 10, 5, 20)), "OutOfMemoryError");
        EXPECT_EQ(python_class_of_error(xcuda::cuda_error("cuInit", 1, "CUDA_ERROR_INVALID_VALUE", "bad")), "CudaError");
        EXPECT_EQ(python_class_of_error(xcuda::device_mismatch_error("on device 1")), "DeviceMismatchError");
        EXPECT_EQ(python_class_of_error(xcuda::argument_value_error("out of range")), "ValueError");
    }

    TEST(python_error_class, argument_and_usage_errors_become_the_builtins_python_users_expect)
    {
        EXPECT_EQ(python_class_of_error(xcuda::argument_type_error("a float")), "TypeError");
        EXPECT_EQ(python_class_of_error(xcuda::usage_error("no such option")), "ValueError");
        EXPECT_EQ(python_class_of_error(xcuda::index_error("out of bounds")), "IndexError");
        EXPECT_EQ(python_class_of_error(xcuda::export_error("not contiguous")), "BufferError");
        EXPECT_EQ(python_class_of_error(xcuda::host_out_of_memory_error("pinned")), "MemoryError");
        EXPECT_EQ(python_class_of_error(xcuda::interrupted_error("waiting")), "KeyboardInterrupt");
        EXPECT_EQ(python_class_of_error(xcuda::error("new class")), "RuntimeError");
    }

    TEST(python_error_class, every_class_named_is_defined_or_a_builtin_and_comes_after_its_base)
    {
        std::set<std::string> known = {"RuntimeError", "ValueError", "TypeError", "IndexError",
                                       "BufferError", "MemoryError", "KeyboardInterrupt"};
        for (const python_error_class::entry& e : python_error_class::defined())
        {
            EXPECT_TRUE(known.count(e.base)) << e.name << " before its base " << e.base;
            EXPECT_FALSE(std::string(e.doc).empty()) << e.name;
            known.insert(e.name);
        }
        EXPECT_TRUE(known.count(python_class_of_error(xcuda::graph_capture_error("sync"))));
        EXPECT_TRUE(known.count(python_class_of_error(xcuda::session_closed_error("closed"))));
        EXPECT_TRUE(known.count(python_class_of_error(xcuda::tool_error("nvdisasm failed"))));
        EXPECT_TRUE(known.count(python_class_of_error(xcuda::program_error("exit 1", 1))));
        EXPECT_EQ(known.size(), 7 + python_error_class::defined().size());
    }

    TEST(python_error_class, the_roots_of_families_carry_the_short_traceback)
    {
        std::set<std::string> roots;
        for (const python_error_class::entry& e : python_error_class::defined())
        {
            if (python_error_class::is_root(e))
                roots.insert(e.name);
        }
        EXPECT_EQ(roots, (std::set<std::string>{"CudaError", "CompileError", "SignatureError", "ToolNotFoundError",
                                                "DeviceMismatchError", "ToolError", "NVRTCError", "SessionClosedError",
                                                "GraphCaptureError", "ProgramError"}));
    }
}
