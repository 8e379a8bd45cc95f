#pragma once
// The xcuda engines of one host and user, seen through files in one folder (default
// /tmp/xcuda-<uid>/engines, or $XCUDA_HOST_REGISTRY): the slot each engine holds (its order on the
// host, which chooses its device when no launcher gives a local rank, see device_choice) and the
// GPUs each uses, so that two engines on one GPU are told.
//
// Why files and locks: the engines of a host are separate processes that may start at the same
// moment and may die without cleaning up. An flock(2) lock is taken atomically (two engines never
// get one slot) and the kernel drops it when its process ends, however it ends, so a file whose lock
// can be taken belongs to nobody: no pids to check, no stale entries that block a slot.
//
// Files in the folder:
//   slot-<i>               exclusively locked by the engine holding slot i; contains its label.
//                          Never removed: a free slot is an unlocked file.
//   gpu-<id>.<pid>.<n>     exclusively locked by a process using the GPU <id> (its UUID); contains
//                          its label. Made under a temporary name, locked, then renamed, so nobody
//                          sees it unlocked; found unlocked, it is stale and removed.
// Locks belong to open file descriptions: two registries in one process exclude each other too (the
// unit tests rely on this). Descriptors are close-on-exec: a process replaced after a kernel fault
// starts without them and joins again. The folder must be on a local file system (flock over NFS
// is not reliable across hosts; each host has its own /tmp anyway).
//
// Threading: one caller at a time (the GIL). Only engines make one (the Python layer, when
// `%load_ext xcuda` runs in an ipyparallel engine); a plain notebook never writes here.

#include <string>
#include <utility>
#include <vector>

namespace xcuda
{
    class host_registry
    {
    public:
        // Creates the folder (mode 0700) when missing. Throws usage_error when it cannot, or when it
        // is not a folder of this user's (another user's /tmp/xcuda-<uid> must not be trusted).
        explicit host_registry(std::string directory);
        ~host_registry();

        // $XCUDA_HOST_REGISTRY when set, else /tmp/xcuda-<uid>/engines.
        static std::string default_directory();
        const std::string& directory() const noexcept { return m_directory; }

        // Leases the lowest slot no live process holds and writes `label` into it; later calls return
        // the same slot. The slot is held until release() or the end of the process.
        int lease_slot(const std::string& label);
        int slot() const noexcept { return m_slot; }

        // Records that this process uses GPU `gpu` (an id that is the same in every process: its
        // UUID) until release(), and returns the labels of the other live processes recorded on it.
        std::vector<std::string> use_gpu(const std::string& gpu, const std::string& label);
        // The labels of the other live processes recorded on `gpu`; removes stale records.
        std::vector<std::string> others_on(const std::string& gpu) const;

        // Drops the slot and the GPU records (closes their files: the locks go). Never throws.
        void release() noexcept;

        host_registry(const host_registry&) = delete;
        host_registry& operator=(const host_registry&) = delete;

    private:
        struct held_file
        {
            std::string gpu;
            std::string path;
            int fd = -1;
        };

        std::string gpu_prefix(const std::string& gpu) const;

        std::string m_directory;
        int m_slot = -1;
        int m_slot_fd = -1;
        std::vector<held_file> m_gpus;
    };
}
