#pragma once
// How copies between pageable host memory (numpy arrays) and the device are made: one settings
// object per session, read from the environment at start and changed by xcuda.transfer_options().
//
// Why several ways: the driver copies pageable memory through its own small staging area at a fraction
// of the bus speed. Two remedies, each measured side by side by tests/bench/bench_transfers.py:
//
//   staged       copy through xcuda's page-locked buffers with several host threads, the DMA of one
//                buffer overlapping the filling of the next (runtime/host_staging);
//   registered   page-lock the array's own memory in place (cuMemHostRegister) and let the DMA read
//                or write it directly, keeping the registration for the next copy of the same memory
//                (runtime/host_registration_cache): the bus speed from the second copy on;
//   per_copy     the same registration, undone after each copy (no cache);
//   automatic    staged the first time a given array is seen, registered from its second copy on
//                (an array used once never pays for a registration; one reused does not pay twice);
//   driver       the driver's own pageable copy, for comparison.
//
// Environment: XCUDA_PAGEABLE (auto, registered, per-copy, staged, driver; XCUDA_STAGING=0 means
// driver, as before), XCUDA_STAGING_THREADS, XCUDA_STAGING_CHUNK_MB, XCUDA_STAGING_BUFFERS,
// XCUDA_REGISTER_LIMIT_MB (bytes the cache may keep registered), XCUDA_TEMPORARY_CACHE_MB (device
// bytes of launch temporaries kept for the next launch; 0 keeps none), and two settings of the staging's
// handling of memory never touched (runtime/host_pages), for measuring them side by side:
// XCUDA_STAGING_UNTOUCHED (1: pieces of a copy in that lie in pages never touched are set to zero on
// the device without being read; 0: read like any memory) and XCUDA_STAGING_PREPARE (pages: a launch's
// copy-back destinations never written are faulted in by page_preparer's threads while the copies in
// and the kernel run; huge: the same with transparent huge pages allowed on them first; off: the copy
// back takes the faults), and XCUDA_STAGING_SCAN (1: a copy-back destination with data in its pages that
// the launch copies in too is read for zero pieces on those threads ahead of its copy in; 0: its copy in
// reads it) and XCUDA_STAGING_SCAN_WAIT (0: a copy in that comes before that scan is done takes the pieces
// found so far and reads the rest itself; 1: it waits for the whole scan), and XCUDA_STAGING_STREAM (1: the
// staging's host copies write with non-temporal stores, copy_pool::stores::streaming; in: only the copies into
// the staging buffers, on the way to the device; 0: memcpy). A malformed value keeps the default
// and is remembered in `problem`: the first pageable copy raises it (usage_error), not the import.
//
// A plain value: copied into each transfer, no thread safety of its own.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace xcuda
{
    struct transfer_settings
    {
        enum class pageable_mode
        {
            automatic,
            registered,
            per_copy,
            staged,
            driver
        };

        pageable_mode pageable = pageable_mode::automatic;
        // Host threads filling and emptying the staging buffers (the caller's thread counts as one);
        // 0 chooses min(12, three quarters of the machine's cores): the page_preparer's cores / 4 beside them.
        // On the lent H200's 16 cores 12 threads against the former 8 (half the cores), alternating processes
        // (tests/bench/staging_ab.py, 2026-12-04): the call with new numpy arrays 0.89x in two runs, the same
        // arrays staged 0.94-0.96x, a copy from a new array 0.81-0.86x; one copy of the same array 1.02-1.10x.
        std::size_t staging_threads = 0;
        // How long (us) the copy threads watch for the next staged copy before sleeping (runtime/copy_pool).
        std::size_t staging_spin_us = 200;
        std::size_t chunk_bytes = 8u << 20;  // one staging buffer
        std::size_t chunk_count = 4;         // staging buffers in flight
        // Copies below this go straight to the driver: its own staging is as fast for them.
        std::size_t threshold = 4u << 20;
        // Registrations the cache may keep, in bytes and in arrays; beyond, the least recently used go.
        std::size_t registration_limit = std::size_t(4) << 30;
        std::size_t registration_entries = 64;
        // Device bytes of finished launches' numpy-argument buffers kept for the next launch
        // (runtime/temporary_cache); 0 keeps none.
        std::size_t temporary_cache_limit = std::size_t(1) << 30;
        // Memory never touched (see above).
        enum class prepare_mode
        {
            off,
            pages,
            huge
        };
        bool skip_untouched = true;
        bool scan_ahead = true;
        bool scan_wait = false;
        // Non-temporal stores (copy_pool::stores::streaming) into the staging buffers (to the device) and
        // into the copy-back destinations (to the host).
        bool stream_to_device = false;
        bool stream_to_host = false;
        prepare_mode prepare = prepare_mode::pages;
        // What was wrong with the environment's values ("" when nothing was).
        std::string problem;

        // The defaults with the environment's values applied; never throws (see `problem`).
        static transfer_settings from_environment();
        // "auto", "registered", "per-copy", "staged", "driver".
        static const char* mode_name(pageable_mode mode) noexcept;
        // The mode of a name above; throws usage_error naming the choices otherwise.
        static pageable_mode parse_mode(const std::string& name);
        // "off", "pages", "huge".
        static const char* prepare_name(prepare_mode mode) noexcept;
        // The staging threads to run: staging_threads, or the default for `cores`.
        std::size_t threads_for(unsigned cores) const noexcept;
        // How long the copy threads watch for the next staged copy: staging_spin_us, at most 1 s.
        std::chrono::microseconds staging_spin() const noexcept;

        // What xcuda.transfer_options(...) was given: a value left out leaves its setting as it is.
        struct changes
        {
            std::optional<std::string> pageable;
            std::optional<long long> staging_threads;
            std::optional<long long> staging_chunk_mb;
            std::optional<long long> staging_buffers;
            std::optional<long long> registration_limit_mb;
            std::optional<long long> registration_entries;
            std::optional<long long> temporary_cache_mb;
        };
        // These settings with `c` applied, and a malformed environment's problem cleared (the values
        // given replace it). Raises argument_value_error naming a count below 1 (a negative
        // temporary_cache_mb), parse_mode's usage_error for an unknown way.
        transfer_settings with(const changes& c) const;
    };
}
