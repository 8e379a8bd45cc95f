#pragma once
// What lives in a device context and must be freed before the context goes (session_resource), and the
// session's registry of them (session_resources): device buffers, loaded modules, graphs, page-locked
// memory register themselves when made and leave when freed; the session's close() frees what is left,
// device by device, and a kernel fault names what was lost.
//
// Threading: add, remove, totals and take_all lock the registry's own mutex; they may be called from any
// thread (several threads make and free buffers at once). The registry holds raw pointers and owns
// nothing: each resource removes itself in its destructor, or is taken by take_all() first.

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace xcuda
{
    // Something that lives in one device's context and must be freed before that context goes.
    class session_resource
    {
    public:
        virtual ~session_resource() = default;
        // Frees the driver object now; later use raises. Called by the session's close(); must not throw.
        virtual void release() noexcept = 0;
        // Forgets the driver object without any driver call: after a kernel fault the driver refuses
        // every call, and the process' GPU memory goes when the process does.
        virtual void abandon() noexcept { release(); }
        // One line for %cuda_status and for the list of losses after a fault.
        virtual std::string describe() const = 0;
        // "module", "buffer" or "staging", and the device bytes held (for session statistics).
        virtual const char* kind() const noexcept = 0;
        virtual std::size_t bytes() const noexcept { return 0; }
        // The ordinal of the device whose context holds it.
        virtual int device() const noexcept = 0;
        // Resources of a lower rank are released first when the session closes: what views another resource
        // (a texture or surface over a CUDA array: 0) goes before what it views (1, the default).
        virtual int release_rank() const noexcept { return 1; }
    };

    class session_resources
    {
    public:
        void add(session_resource* resource);
        void remove(session_resource* resource) noexcept;
        // Count and device bytes of the live resources of one kind ("module", "buffer").
        std::pair<std::size_t, std::size_t> totals(const std::string& kind) const;
        // describe() of each live resource of one kind ("cuda array", "texture", "surface"), sorted: what
        // %cuda_status lists of objects the namespace need not name.
        std::vector<std::string> descriptions(const std::string& kind) const;
        // Every live resource, lowest release_rank() first, the registry left empty: the caller releases or
        // abandons them in that order.
        std::vector<session_resource*> take_all();

    private:
        mutable std::mutex m_mutex;
        std::unordered_set<session_resource*> m_resources;
    };
}
