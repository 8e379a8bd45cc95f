#pragma once
// What xcuda.transfer_stats() reports of how host memory traveled on the current device: the copies
// each route made (host_staging), the registration cache's counts and the temporary cache's, each as
// named counters in the order the report lists them.
//
// Why here: the binding only turns the groups into dicts; which counters exist and what they are called
// is the core's, beside the counters themselves.
//
// Ownership: a value, read at one moment. Threading: takes no lock of its own; each cache's counts are
// read as that cache gives them, so a copy in flight on another thread may or may not be counted.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xcuda
{
    class cuda_session;

    class transfer_report
    {
    public:
        using counters = std::vector<std::pair<const char*, std::uint64_t>>;

        // The counts of the session's current device (zeros before the session is active).
        static transfer_report of(cuda_session& session);
        // The per-route copies, from the counts of host_staging, host_registration_cache and temporary_cache.
        static counters copies_of(std::size_t staged, std::size_t registered, std::size_t page_locked, std::size_t driver);

        int device = 0;
        counters copies;         // staged, registered, page_locked, driver, zero_chunks, known_zero_pieces, prepared, scanned,
                                 // scan_unread_pieces
        counters registrations;  // entries, bytes, hits, registrations, unregistrations, failures, ...
        counters temporaries;    // entries, bytes, hits, misses, evictions
    };
}
