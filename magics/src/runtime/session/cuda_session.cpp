#include "cuda_session.hpp"

#include <string>
#include <vector>

#include "cuda_driver.hpp"
#include "errors.hpp"
#include "temporary_cache.hpp"

namespace xcuda
{
    cuda_session::cuda_session()
    {
        // A sticky kernel fault reported by any driver call comes here: fault() records what was lost
        // and throws kernel_fault instead of the driver's plain error.
        cuda_driver::set_fault_hook([this](CUresult result, const char* call) { fault(result, call); });
    }

    cuda_session::~cuda_session()
    {
        close();
        cuda_driver::set_fault_hook(nullptr);
    }

    void cuda_session::close() noexcept
    {
        forget_live();
        bool lost = !lost_reason().empty();
        m_transfers.close(lost);
        std::vector<session_resource*> resources = this->resources().take_all();
        if (lost)
        {
            for (session_resource* resource : resources)
            {
                resource->abandon();
            }
            m_transfers.temporaries().clear();  // abandoned above: forgetting them makes no driver call
            return;  // the driver refuses every call now; the process' exit frees the GPU
        }
        release_contexts([&](int ordinal) {
            for (session_resource* resource : resources)
            {
                if (resource->device() == ordinal)
                {
                    resource->release();
                }
            }
            waits().release(ordinal);
        });
    }
}

// Faults.
namespace xcuda
{
    void cuda_session::fault(CUresult result, const char* call)
    {
        std::vector<launch_record> launches = history().unfinished_launches();
        std::vector<std::string> kernels;
        for (const launch_record& r : launches)
        {
            kernels.push_back(r.describe());
        }
        int device = launches.empty() ? device_ordinal() : launches.back().device;

        std::vector<session_resource*> resources = this->resources().take_all();
        std::vector<kernel_fault::lost_buffer> lost;
        std::size_t modules = 0;
        for (session_resource* resource : resources)
        {
            std::string kind = resource->kind();
            if (kind == "buffer")
            {
                lost.push_back({resource->describe(), resource->bytes(), resource->device(),
                                reinterpret_cast<std::uintptr_t>(resource)});
            }
            else if (kind == "module")
            {
                ++modules;
            }
            resource->abandon();
        }
        std::string culprit = launches.empty() ? std::string("a kernel") : "kernel '" + std::string(launches.back().kernel) + "'";
        // Every context forgotten, never released: the driver refuses; the process' exit frees them.
        abandon_contexts(culprit + " faulted on device " + std::to_string(device) + " (" + cuda_error_name(result) +
                         "): CUDA refuses every further GPU call in this kernel process. Run %cuda_recover to "
                         "replace the process (your variables are carried over), or restart the kernel.");
        waits().abandon();

        std::string error = cuda_error_name(result) + ": " + cuda_error_description(result);
        std::string message = culprit + " faulted on device " + std::to_string(device) + ": " + error +
                              " (reported by " + call + ")";
        if (kernels.empty())
        {
            message += "\nNo xcuda launch was waiting; the fault came from work queued by another library.";
        }
        else
        {
            message += "\nlaunched as " + kernels.back();
            if (kernels.size() > 1)
            {
                message += "\nThe fault may also come from an earlier launch not yet waited for:";
                for (std::size_t i = kernels.size() - 1; i-- > 0;)
                {
                    message += "\n  " + kernels[i];
                }
                message += "\n(xcuda.synchronize() after each launch tells them apart)";
            }
        }
        message += "\nCUDA now refuses every GPU call in this process, on every device (a kernel fault is "
                   "sticky for the whole process since CUDA 12), so the GPU state is gone: ";
        message += std::to_string(lost.size()) + " device buffer" + (lost.size() == 1 ? "" : "s") + " and " +
                   std::to_string(modules) + " loaded module" + (modules == 1 ? "" : "s") + ".";
        throw kernel_fault(call, static_cast<int>(result), cuda_error_name(result), message, std::move(kernels), device, std::move(lost),
                           modules);
    }
}
