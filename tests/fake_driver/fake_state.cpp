// The state the fake driver's files share (fake_state.hpp): the one lock every entry point takes, the
// counters xcuda_fake_counter reads, the ranges of memory the driver knows (device allocations, page-locked
// and registered host memory) with the check that device memory is used inside an allocation, the
// streams with their capture state, and what the waits answer (xcuda_fake_set_busy, xcuda_fake_print_at_sync).

#include "fake_state.hpp"

#pragma GCC visibility push(hidden)  // the fake's own symbols stay inside it
namespace xcuda_fake
{
    std::recursive_mutex g_mutex;
    counters g_count;

    std::map<std::uintptr_t, range> g_ranges;  // by start

    const range* find_range(const void* pointer, std::uintptr_t* start)
    {
        auto address = reinterpret_cast<std::uintptr_t>(pointer);
        auto it = g_ranges.upper_bound(address);
        if (it == g_ranges.begin())
        {
            return nullptr;
        }
        --it;
        if (address < it->first + it->second.bytes)
        {
            if (start)
            {
                *start = it->first;
            }
            return &it->second;
        }
        return nullptr;
    }

    // Device memory touched by a copy, memset or known kernel must lie inside one cuMemAlloc'd range, as a
    // GPU requires (a copy past an allocation is CUDA_ERROR_INVALID_VALUE there). Here device memory is
    // host memory, so an overrun would corrupt the heap and abort far from its cause: it is refused
    // instead, counted as a violation and named on stderr.
    bool device_span_ok(const void* pointer, std::size_t bytes, const char* what)
    {
        std::uintptr_t start = 0;
        const range* r = find_range(pointer, &start);
        auto begin = reinterpret_cast<std::uintptr_t>(pointer);
        if (r && r->what == kind::device && begin + bytes <= start + r->bytes)
        {
            return true;
        }
        ++g_count.violations;
        if (r && r->what == kind::device)
        {
            std::fprintf(stderr, "xcuda fake driver: %s: %zu bytes at offset %zu of a %zu-byte allocation run past its end\n",
                         what, bytes, static_cast<std::size_t>(begin - start), r->bytes);
        }
        else
        {
            std::fprintf(stderr, "xcuda fake driver: %s: %zu bytes at %p, which is not device memory\n", what, bytes,
                         pointer);
        }
        return false;
    }

    std::vector<stream*> g_streams;

    stream* as_stream(CUstream handle)
    {
        // The legacy and per-thread default streams (0, 1, 2) never capture here.
        auto value = reinterpret_cast<std::uintptr_t>(handle);
        return value <= 2 ? nullptr : reinterpret_cast<stream*>(handle);
    }

    bool capturing(CUstream handle)
    {
        stream* s = as_stream(handle);
        return s && s->capturing;
    }

    void record(CUstream handle, node* n)
    {
        stream* s = as_stream(handle);
        s->captured->nodes.push_back(n);
    }

    bool g_busy = false;       // (g_mutex)
    std::string g_sync_print;  // (g_mutex)

    void print_at_sync()
    {
        if (!g_sync_print.empty())
        {
            std::fputs(g_sync_print.c_str(), stdout);
            std::fflush(stdout);
            g_sync_print.clear();
        }
    }
}
#pragma GCC visibility pop
