#include "session_control.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include "compiler.hpp"
#include "cuda_driver.hpp"
#include "cuda_session.hpp"
#include "errors.hpp"
#include "nvrtc_library.hpp"

namespace xcuda
{
    void session_control::connect_driver_version()
    {
        nvrtc_library::set_driver_version_source([]() -> int {
            try
            {
                int version = 0;
                if (cuda_driver::available() && cuda_driver::get().cuDriverGetVersion(&version) == CUDA_SUCCESS)
                {
                    return version;
                }
            }
            catch (...)
            {
            }
            return 0;
        });
    }

    std::string session_control::worker_beside(const std::string& file)
    {
        std::string worker = file.substr(0, file.rfind('/') + 1) + "xcuda-compile";
        return ::access(worker.c_str(), X_OK) == 0 ? worker : std::string();
    }

    std::string session_control::use_worker_beside_this_library(compiler& compiler)
    {
        Dl_info file;
        if (!dladdr(reinterpret_cast<void*>(&session_control::connect_driver_version), &file) || !file.dli_fname)
        {
            return "";
        }
        std::string worker = worker_beside(file.dli_fname);
        if (!worker.empty())
        {
            compiler.set_worker_program(worker);
        }
        return worker;
    }

    std::string session_control::use_simulator(cuda_session& session)
    {
        if (cuda_driver::available() && cuda_driver::get().simulated())
        {
            return "xcuda.use_simulator(): already on the PTX simulator (chosen by " + cuda_driver::get().chosen_by() +
                   ")";
        }
        if (!session.forget_devices_if_unused())
        {
            throw usage_error(
                "xcuda.use_simulator(): this session already runs on the GPU (a CUDA context holds its device arrays, "
                "modules and streams), which cannot move to the simulator; call it before the first launch or "
                "allocation, or restart the kernel with XCUDA_DEVICE=simulator");
        }
        std::string why = cuda_driver::use_simulator();
        if (!why.empty())
        {
            throw cuda_unavailable_error("xcuda.use_simulator(): " + why);
        }
        return "xcuda.use_simulator(): this session's kernels run on the PTX simulator, on the CPU (slowly; its "
               "timings are simulated). xcuda.use_gpu() goes back to a GPU before the first launch.";
    }

    std::string session_control::use_gpu(cuda_session& session)
    {
        if (cuda_driver::available() && !cuda_driver::get().simulated())
        {
            return "xcuda.use_gpu(): already on the NVIDIA driver's GPU";
        }
        if (cuda_driver::available() && !session.forget_devices_if_unused())
        {
            throw usage_error("xcuda.use_gpu(): the PTX simulator already holds this session's device arrays, modules and "
                              "streams (it made its context at the first launch or allocation), which cannot move to a "
                              "GPU; restart the kernel with XCUDA_DEVICE=gpu (and call xcuda.use_gpu() before the first "
                              "launch from then on)");
        }
        std::string why = cuda_driver::use_gpu();
        if (!why.empty())
        {
            throw cuda_unavailable_error("xcuda.use_gpu() refused: " + why + "; this session stays " +
                                         (cuda_driver::available() ? "on the PTX simulator" : "without a device"));
        }
        return "xcuda.use_gpu(): this session's kernels run on the GPU (the NVIDIA driver, no simulator fallback).";
    }

    bool session_control::output_waiting(const cuda_session& session)
    {
        return session.waits().capturing_printf() && session.unsynchronized_launches() && session.lost_reason().empty() &&
               session.active();
    }

    void session_control::check_copy_sizes(std::size_t destination_bytes, std::size_t source_bytes)
    {
        if (destination_bytes != source_bytes)
        {
            throw argument_value_error("xcuda.copy needs equal sizes: the destination has " +
                                       std::to_string(destination_bytes) + " bytes, the source " +
                                       std::to_string(source_bytes));
        }
    }
}
