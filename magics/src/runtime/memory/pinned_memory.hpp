#pragma once
// Page-locked host memory for numpy arrays (xcuda.empty_pinned): transfers from and to it run at
// the bus's full speed with no staging copy.
//
// Ownership: the memory is ordinary aligned host memory that this object owns and registers with
// the driver (cuMemHostRegister). The registration is a session resource: when the session closes
// first (the kernel's shutdown, the interpreter's exit), it is undone while the context still exists,
// so nothing is left registered for compute-sanitizer's leak check to report; the memory stays valid:
// a numpy array viewing it never dangles, it is merely no longer page-locked. The destructor
// unregisters (when still registered) and frees. GIL held for all calls.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "device_contexts.hpp"

namespace xcuda
{
    class pinned_memory : public session_resource
    {
    public:
        // Page-locked in the session's current device context (portable: every context sees it).
        static std::shared_ptr<pinned_memory> allocate(device_contexts& contexts, std::size_t bytes);
        ~pinned_memory();
        pinned_memory(const pinned_memory&) = delete;
        pinned_memory& operator=(const pinned_memory&) = delete;

        void* data() const noexcept { return m_data; }
        std::size_t size() const noexcept { return m_size; }

        // Whether the driver treats [pointer, pointer + 1) as page-locked host memory (ours, or
        // another library's); false for pageable memory and without a session.
        static bool is_page_locked(const device_contexts& contexts, const void* pointer) noexcept;

        // session_resource: release() unregisters (the memory stays); after a fault only forgotten.
        void release() noexcept override;
        void abandon() noexcept override { m_registered = false; }
        std::string describe() const override;
        const char* kind() const noexcept override { return "pinned"; }
        int device() const noexcept override { return m_device; }

    private:
        explicit pinned_memory(device_contexts& contexts) : m_contexts(contexts) {}
        device_contexts& m_contexts;
        void* m_data = nullptr;
        std::size_t m_size = 0;
        std::uint64_t m_generation = 0;
        int m_device = 0;
        bool m_registered = false;
    };
}
