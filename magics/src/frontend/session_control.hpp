#pragma once
// What xcuda's session functions do beyond one core call: NVRTC told where the driver's version comes
// from (the compile layer does not know the driver), the compile worker found beside the module, the
// switch to the PTX simulator, the end-of-cell question whether device printf output is waiting, and
// the checks of a device-to-device copy. Stateless; called on the thread that holds the session (the
// GIL in the module).

#include <cstddef>
#include <string>

namespace xcuda
{
    class compiler;
    class cuda_session;

    class session_control
    {
    public:
        // NVRTC is chosen for the driver (12.x drivers load NVRTC 12's output only) at its first use;
        // this gives nvrtc_library the driver's version (0 without a driver). Nothing is loaded here.
        static void connect_driver_version();
        // xcuda-compile beside the library or program holding this code (the Python module), when it is
        // there and executable: the compiler then uses it instead of a fork per compile. Returns its path.
        static std::string use_worker_beside_this_library(compiler& compiler);
        // The worker's path beside `file` ("" when none is executable there).
        static std::string worker_beside(const std::string& file);

        // xcuda.use_simulator(): the session's later kernels run on the simulator. Does nothing when
        // already there; throws usage_error once a CUDA context holds the session's objects, and
        // cuda_unavailable_error when the simulator cannot load. Returns the line that confirms it.
        static std::string use_simulator(cuda_session& session);
        // xcuda.use_gpu(): back from the simulator to the NVIDIA driver. Does nothing when already on it;
        // throws usage_error once the simulator holds the session's objects (a context), and
        // cuda_unavailable_error when there is no driver or no device (the session stays where it was).
        // Returns the line that confirms it.
        static std::string use_gpu(cuda_session& session);

        // End of a cell: whether launches not yet waited for may still print (a module that calls printf
        // is loaded), so that waiting now shows their output in the cell that launched them.
        static bool output_waiting(const cuda_session& session);

        // xcuda.copy(dst, src): equal byte sizes; throws argument_value_error saying both.
        static void check_copy_sizes(std::size_t destination_bytes, std::size_t source_bytes);
    };
}
