#pragma once
// One launch written down so that another process can make it again: the bundle that xcuda-replay
// reads, and that %cuda_profile and %cuda_sanitize run under ncu and compute-sanitizer.
//
// Why a replay in a child process: a profiler replays a kernel many times and a sanitizer
// instruments it; either can end in a fault, and since CUDA 12 a fault makes the driver refuse every
// later call of the process (see cuda_session). Run in a child, the launch may fault, hang or be
// killed without the session losing a buffer. The live session is only read: the bytes of the
// buffers the launch's pointers point into.
//
// On disk, a private folder (0700, made by make_folder; the files 0600, written with O_EXCL and
// O_NOFOLLOW, and read back through private_files, which refuses links and files others could have
// written: the CUBIN is loaded and run):
//
//   launch          text, one record per line, fields separated by one space:
//                     xcuda-replay 1
//                     kernel SYMBOL            the symbol in the CUBIN
//                     name NAME...             the kernel's C++ name, for messages (rest of the line)
//                     device ORDINAL
//                     grid X Y Z
//                     block X Y Z
//                     shared BYTES             dynamic shared memory
//                     cluster X Y Z            launch attributes (kernel.configure), each only when the
//                     priority P                launch had it: replayed through cuLaunchKernelEx as the
//                     programmatic 1            session made it
//                     argument INDEX OFFSET SIZE   one per parameter: its bytes in arguments.bin
//                     region INDEX BYTES FILE  device memory to allocate; FILE holds its initial
//                                              bytes, or is '-' for memory left uninitialised
//                     pointer ARGUMENT REGION OFFSET  the argument is rewritten to the region's
//                                              address in the replay plus OFFSET
//                     global INDEX BYTES SYMBOL  a __constant__/__device__ variable of the module: FILE
//                                              global-INDEX.bin holds the bytes it had when the launch
//                                              was made, written into it after the module is loaded
//                     cooperative 1            the launch was cooperative (cuLaunchCooperativeKernel)
//   module.cubin    the CUBIN (compiled for the device, with line information)
//   arguments.bin   the argument values as the launch packed them, one after the other
//   region-N.bin    the initial bytes of region N
//   global-N.bin    the bytes of module variable N
//
// Pointer arguments that point into the same allocation range of the live session (the same array
// passed twice, or two views of one buffer) share one region, so the replay keeps their aliasing.
//
// A value, no state besides its fields; no driver needed to write or read it. capture() reads device
// memory of the live session and needs it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda.h>

#include "launch_plan.hpp"

namespace xcuda
{
    class launch_call;
    class cuda_session;

    struct replay_region
    {
        std::size_t bytes = 0;
        bool initialised = true;  // false: allocated and left as it is (xcuda.Out arrays)
        std::string contents;     // bytes of it when initialised
    };

    struct replay_pointer
    {
        std::size_t argument = 0;
        std::size_t region = 0;
        std::size_t offset = 0;
    };

    // Where one pointer argument points in the live session: what place_pointers groups.
    struct pointer_extent
    {
        std::size_t argument = 0;
        std::uint64_t address = 0;
        std::size_t bytes = 0;
    };

    // A module variable as the launch saw it: its symbol in the binary and its bytes.
    struct replay_global
    {
        std::string symbol;
        std::string contents;
    };

    class replay_bundle
    {
    public:
        std::string symbol;
        std::string kernel_name;
        int device = 0;
        launch_dims dims;
        std::string cubin;
        std::vector<std::string> arguments;  // each parameter's bytes, in order
        std::vector<replay_region> regions;
        std::vector<replay_pointer> pointers;
        std::vector<replay_global> globals;  // the module's variables, so a kernel reading them sees their values
        bool cooperative = false;            // launched with cuLaunchCooperativeKernel (a grid-wide sync)

        // Groups extents into regions: extents whose address ranges overlap share one region, which
        // spans them all. Fills `pointers` and appends to `regions` (sizes set, contents empty), and
        // returns, for each region appended, the live address it starts at.
        std::vector<std::uint64_t> place_pointers(const std::vector<pointer_extent>& extents);

        // Writes the files into folder, which must exist and be private (make_folder). Throws
        // tool_error naming the file and the system's reason (a full disk, for example).
        void write(const std::string& folder) const;
        // Reads a bundle back; throws usage_error saying what is wrong (a folder or file others could
        // have written, a missing file, a malformed record).
        static replay_bundle read(const std::string& folder);

        // A new private folder (0700) for a bundle under $XCUDA_REPLAY_DIR, else $TMPDIR, else /tmp.
        static std::string make_folder();
        // The bundle of a call converted for a replay (launch_call::record_for_replay): the module's binary
        // with line information for the device's arch (or, without a GPU, its inspection arch, for
        // device 0), the call's argument values, a region per host array with its bytes, the device
        // memory its pointers reach and the module's __constant__/__device__ variables, copied from the
        // device (variables only with a GPU), and whether the launch is cooperative. With a GPU, dims are checked against the
        // device's limits first, so a launch the device refuses fails here, not in the child.
        static replay_bundle from_call(const launch_call& call, bool on_gpu);
        // Removes a bundle folder and what is in it (one level: bundles have no subfolders beyond the
        // tools' own report files). Never throws.
        static void remove_folder(const std::string& folder) noexcept;

        // The bytes at [address, address + bytes) of device memory, after the work queued on stream
        // (waited for interruptibly); the session's current device context is made current.
        static std::string capture(cuda_session& session, std::uint64_t address, std::size_t bytes, CUstream stream);

        // "saxpy[grid=(4096, 1, 1), block=(256, 1, 1)], 3 regions (64.0 MB)": for messages.
        std::string describe() const;
    };
}
