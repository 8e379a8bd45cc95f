#pragma once
// What the two shared-memory race checks share (race_check: threads of different warps, between barriers;
// warp_race_check: lanes of one warp, between __syncwarp()s): a shadow record per byte of the block's shared
// memory of its last write and of up to two reads by different threads, and the walk over an access's bytes that
// compares it with them, an earlier write for any access and the earlier reads for a store. What makes an earlier
// access a race (the interval it was in, whose it was) and which reads a byte keeps stay with each check: they
// come in as `races` and `keep`. One per plugin instance, so only ever used from its executor's thread.

#include <cstdint>
#include <vector>

#include "check_plugin.hpp"

namespace xcuda::sim
{
    template <class Record>
    struct shared_byte_shadow
    {
        Record write, read, other_read;  // other_read: a reader other than read's (another warp's, another lane)
    };

    template <class Record>
    class shared_shadow
    {
    public:
        using byte = shared_byte_shadow<Record>;

        // A block starts: one empty record per shared byte where the size changed (a check's own interval
        // counter, which it advances here, tells the last block's records from this one's).
        void resize(std::size_t bytes)
        {
            if (m_bytes.size() != bytes)
            {
                m_bytes.assign(bytes, byte{});
            }
        }

        // For each byte of `access`: `report(offset, earlier, earlier_wrote)` (which throws) for an earlier write
        // that `races(record)` with it, and for a store for an earlier read that does; then `keep(byte, write)`
        // records the access in the byte's shadow.
        template <class Races, class Report, class Keep>
        void compare(const memory_access& access, Races races, Report report, Keep keep)
        {
            const bool write = access.kind == access_kind::store;
            for (unsigned i = 0; i < access.bytes; ++i)
            {
                byte& s = m_bytes[access.address + i];
                if (races(s.write))
                {
                    report(access.address + i, s.write, true);
                }
                if (write)
                {
                    if (races(s.read))
                    {
                        report(access.address + i, s.read, false);
                    }
                    if (races(s.other_read))
                    {
                        report(access.address + i, s.other_read, false);
                    }
                }
                keep(s, write);
            }
        }

    private:
        std::vector<byte> m_bytes;  // one per shared byte
    };
}
