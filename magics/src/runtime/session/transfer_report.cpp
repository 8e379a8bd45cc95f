#include "transfer_report.hpp"

#include "cuda_session.hpp"
#include "host_staging.hpp"
#include "temporary_cache.hpp"

namespace xcuda
{
    transfer_report::counters transfer_report::copies_of(std::size_t staged, std::size_t registered,
                                                         std::size_t page_locked, std::size_t driver)
    {
        return {{"staged", staged}, {"registered", registered}, {"page_locked", page_locked}, {"driver", driver}};
    }

    transfer_report transfer_report::of(cuda_session& session)
    {
        host_staging::route_counts routes;
        host_registration_cache::statistics cache;
        if (session.active())
        {
            host_staging& staging = session.transfers().staging(session.device_ordinal());
            routes = staging.routes();
            cache = staging.registrations().stats();
        }
        transfer_report report;
        report.device = session.device_ordinal();
        report.copies = copies_of(routes.staged, routes.registered, routes.page_locked, routes.driver);
        report.copies.emplace_back("zero_chunks", routes.zero_chunks);  // staged chunks set on the device
        report.copies.emplace_back("known_zero_pieces", routes.known_zero_pieces);  // zero without a read
        report.copies.emplace_back("prepared", routes.prepared);  // copy-back destinations faulted in ahead
        report.copies.emplace_back("scanned", routes.scanned);    // copy-back destinations read ahead for zeros
        report.copies.emplace_back("scan_unread_pieces", routes.scan_unread_pieces);  // left to the copy in
        report.registrations = {{"entries", cache.entries},
                                {"bytes", cache.bytes},
                                {"hits", cache.hits},
                                {"registrations", cache.registrations},
                                {"unregistrations", cache.unregistrations},
                                {"failures", cache.failures},
                                {"staged_first_use", cache.staged_first_use},
                                {"staged_same_use", cache.staged_same_use},
                                {"evictions", cache.evictions},
                                {"abandoned", cache.abandoned}};
        temporary_cache::statistics kept = session.transfers().temporaries().stats();
        report.temporaries = {{"entries", kept.entries},
                              {"bytes", kept.bytes},
                              {"hits", kept.hits},
                              {"misses", kept.misses},
                              {"evictions", kept.evictions}};
        return report;
    }
}
