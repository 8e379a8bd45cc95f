// Loading modules on a GPU: the fallbacks of cuda_module::load. Needs a GPU; each test skips, saying
// why, without one.

#include <memory>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "compiler.hpp"
#include "cuda_driver.hpp"
#include "cuda_module.hpp"
#include "cuda_session.hpp"
#include "kernel_signature.hpp"
#include "nvrtc_compiler.hpp"

namespace xcuda
{
    namespace
    {
        const char* saxpy =
            "extern \"C\" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)\n"
            "{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }\n";

        // One session for the test program, as the Python module has one for its process.
        cuda_session& session()
        {
            static cuda_session* made = new cuda_session();
            return *made;
        }

        std::string gpu_missing()
        {
            if (session().try_ensure())
            {
                return "";
            }
            std::string reason = cuda_driver::unavailable_reason();
            return "needs a GPU: " + (reason.empty() ? std::string("no usable CUDA device") : reason);
        }
    }

    TEST(cuda_module, ptx_newer_than_the_driver_is_loaded_as_a_cubin_nvrtc_compiles_for_the_device)
    {
        std::string missing = gpu_missing();
        if (!missing.empty())
        {
            GTEST_SKIP() << missing;
        }
        std::string device_arch = session().properties().arch();  // sm_90
        compile_options options;
        options.arch = "compute_" + device_arch.substr(3);
        compile_result compiled = nvrtc_compiler::compile(saxpy, options);
        ASSERT_TRUE(compiled.cubin.empty());
        // What a driver older than NVRTC sees: a PTX ISA version it does not know.
        std::size_t at = compiled.ptx.find(".version ");
        ASSERT_NE(at, std::string::npos);
        compiled.ptx.replace(at, compiled.ptx.find('\n', at) - at, ".version 99.9");
        compiler no_disk_cache(disk_cache("", 0, false));
        auto module = std::make_shared<cuda_module>(session(), no_disk_cache, "future_ptx", compile_recipe{saxpy, options, {}},
                                                    std::make_shared<const compile_result>(compiled),
                                                    parse_kernel_signatures(saxpy), "future_ptx_key");
        EXPECT_NE(module->function("saxpy"), nullptr);
        EXPECT_TRUE(module->loaded());
        EXPECT_NE(module->fallback_note().find("loaded as a CUBIN compiled by NVRTC for " + device_arch),
                  std::string::npos)
            << module->fallback_note();
        EXPECT_NE(module->fallback_note().find("pass --arch=" + device_arch), std::string::npos);
    }

    TEST(GridSyncEntries, OnePassNamesExactlyTheEntriesThatReadTheGridWorkspace)
    {
        // Three entries; the second reads %envreg2 (this_grid().sync()), the third's name is a prefix of
        // the second's, and a %envreg1 after the last entry's closing brace belongs to no entry.
        const std::string ptx =
            ".visible .entry plain(\n.param .u64 p\n)\n{\n\tld.param.u64 %rd1, [p];\n\tret;\n}\n"
            ".visible .entry grid_sum(\n.param .u64 p\n)\n{\n\t{\n\tmov.u32 %r1, %envreg2;\n\t}\n\tret;\n}\n"
            ".visible .entry grid(\n.param .u64 p\n)\n{\n\tret;\n}\n"
            "// %envreg1 outside every body\n";
        std::set<std::string> entries = cuda_module::grid_sync_entries(ptx);
        EXPECT_EQ(entries, (std::set<std::string>{"grid_sum"}));
        EXPECT_TRUE(cuda_module::grid_sync_entries("").empty());
        EXPECT_TRUE(cuda_module::grid_sync_entries(".entry unterminated(").empty());
    }
}
