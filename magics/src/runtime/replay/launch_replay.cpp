#include "launch_replay.hpp"

#include <cerrno>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "byte_io.hpp"
#include "cuda_driver.hpp"
#include "errors.hpp"
#include "launch_attributes.hpp"

namespace xcuda
{
    namespace
    {
        // Everything the launch made, freed in reverse order even when a call failed on the way (a
        // kernel fault makes the frees fail too; they are then skipped: the process is about to end).
        struct replay_state
        {
            const cuda_driver& driver;
            CUdevice device = 0;
            bool retained = false;
            CUmodule module = nullptr;
            std::vector<CUdeviceptr> allocations;

            explicit replay_state(const cuda_driver& d) : driver(d) {}
            ~replay_state()
            {
                for (auto it = allocations.rbegin(); it != allocations.rend(); ++it)
                {
                    if (*it)
                    {
                        driver.cuMemFree(*it);
                    }
                }
                if (module)
                {
                    driver.cuModuleUnload(module);
                }
                if (retained)
                {
                    driver.cuCtxSetCurrent(nullptr);
                    driver.cuDevicePrimaryCtxRelease(device);
                }
            }
        };

        void write_output(const std::string& path, const std::string& bytes)
        {
            int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
            if (fd < 0)
            {
                throw tool_error("could not write " + path + ": " + std::strerror(errno));
            }
            int why = 0;
            if (!byte_io::write_all(fd, bytes.data(), bytes.size(), &why))
            {
                ::close(fd);
                throw tool_error("could not write " + path + ": " + std::strerror(why));
            }
            ::close(fd);
        }
    }

    void launch_replay::run(const replay_bundle& bundle, const std::string& output_folder)
    {
        const cuda_driver& driver = cuda_driver::get();
        replay_state state(driver);
        int count = 0;
        check(driver.cuDeviceGetCount(&count), "cuDeviceGetCount");
        if (bundle.device < 0 || bundle.device >= count)
        {
            throw cuda_unavailable_error("the bundle's device " + std::to_string(bundle.device) +
                                         " does not exist here (the driver sees " + std::to_string(count) +
                                         " device(s)); run the replay with the session's CUDA_VISIBLE_DEVICES");
        }
        check(driver.cuDeviceGet(&state.device, bundle.device), "cuDeviceGet");
        CUcontext context = nullptr;
        check(driver.cuDevicePrimaryCtxRetain(&context, state.device), "cuDevicePrimaryCtxRetain");
        state.retained = true;
        check(driver.cuCtxSetCurrent(context), "cuCtxSetCurrent");
        check(driver.cuModuleLoadDataEx(&state.module, bundle.cubin.data(), 0, nullptr, nullptr), "cuModuleLoadData");
        CUfunction function = nullptr;
        check(driver.cuModuleGetFunction(&function, state.module, bundle.symbol.c_str()), "cuModuleGetFunction");

        for (const replay_global& global : bundle.globals)
        {
            // The module's variables as the session's launch saw them.
            if (!driver.cuModuleGetGlobal)
            {
                throw cuda_unavailable_error("this NVIDIA driver has no cuModuleGetGlobal, which the bundle's module variables need");
            }
            CUdeviceptr address = 0;
            std::size_t bytes = 0;
            check(driver.cuModuleGetGlobal(&address, &bytes, state.module, global.symbol.c_str()), "cuModuleGetGlobal");
            if (bytes != global.contents.size())
            {
                throw usage_error("the bundle's variable " + global.symbol + " has " + std::to_string(global.contents.size()) +
                                  " bytes and the module's " + std::to_string(bytes));
            }
            check(driver.cuMemcpyHtoD(address, global.contents.data(), bytes), "cuMemcpyHtoD");
        }
        state.allocations.assign(bundle.regions.size(), 0);
        for (std::size_t r = 0; r < bundle.regions.size(); ++r)
        {
            const replay_region& region = bundle.regions[r];
            if (region.bytes == 0)
            {
                continue;  // a pointer to it stays 0, as an empty array's does in the session
            }
            check(driver.cuMemAlloc(&state.allocations[r], region.bytes), "cuMemAlloc");
            if (region.initialised)
            {
                check(driver.cuMemcpyHtoD(state.allocations[r], region.contents.data(), region.bytes), "cuMemcpyHtoD");
            }
        }
        std::vector<std::string> arguments = bundle.arguments;
        for (const replay_pointer& p : bundle.pointers)
        {
            std::uint64_t address = state.allocations[p.region] + p.offset;
            std::memcpy(arguments[p.argument].data(), &address, sizeof address);
        }
        std::vector<void*> pointers;
        for (std::string& argument : arguments)
        {
            pointers.push_back(argument.data());
        }
        const launch_dims& d = bundle.dims;
        if (d.shared_mem > 49152 && driver.cuFuncSetAttribute)
        {
            // As the session did for this launch: more than 48 KiB of dynamic shared memory is opted in to.
            check(driver.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            static_cast<int>(d.shared_mem)),
                  "cuFuncSetAttribute");
        }
        void** parameters = pointers.empty() ? nullptr : pointers.data();
        if (d.has_attributes())
        {
            // As the session launched it: cuLaunchKernelEx with its cluster, priority, programmatic launch (and
            // the cooperative attribute for a grid-synchronising kernel).
            launch_attributes::launch(function, d, nullptr, bundle.cooperative, parameters,
                                      bundle.kernel_name.empty() ? bundle.symbol : bundle.kernel_name);
        }
        else if (bundle.cooperative)
        {
            if (!driver.cuLaunchCooperativeKernel)
            {
                throw cuda_unavailable_error("the bundle's launch is cooperative, and this NVIDIA driver has no cuLaunchCooperativeKernel");
            }
            check(driver.cuLaunchCooperativeKernel(function, d.grid[0], d.grid[1], d.grid[2], d.block[0], d.block[1],
                                                   d.block[2], d.shared_mem, nullptr, parameters),
                  "cuLaunchCooperativeKernel");
        }
        else
        {
            check(driver.cuLaunchKernel(function, d.grid[0], d.grid[1], d.grid[2], d.block[0], d.block[1], d.block[2],
                                        d.shared_mem, nullptr, parameters, nullptr),
                  "cuLaunchKernel");
        }
        CUresult result = driver.cuCtxSynchronize();
        if (result != CUDA_SUCCESS)
        {
            // The context is unusable after a fault: forget the handles rather than free them.
            state.allocations.clear();
            state.module = nullptr;
            state.retained = false;
            check(result, "cuCtxSynchronize");
        }
        if (!output_folder.empty())
        {
            for (std::size_t r = 0; r < bundle.regions.size(); ++r)
            {
                std::string bytes(bundle.regions[r].bytes, '\0');
                if (!bytes.empty())
                {
                    check(driver.cuMemcpyDtoH(bytes.data(), state.allocations[r], bytes.size()), "cuMemcpyDtoH");
                }
                write_output(output_folder + "/region-" + std::to_string(r) + ".out", bytes);
            }
        }
    }
}
