#include "device_buffer.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "cuda_driver.hpp"
#include "errors.hpp"
#include "host_staging.hpp"
#include "pinned_memory.hpp"

namespace xcuda
{
    std::shared_ptr<device_buffer> device_buffer::allocate(device_session& session, std::size_t nbytes)
    {
        return std::shared_ptr<device_buffer>(new device_buffer(session, nbytes));
    }

    device_buffer::device_buffer(device_session& session, std::size_t nbytes)
        : m_session(session)
        , m_size(nbytes)
    {
        session.make_current();
        m_device = session.device_ordinal();
        m_generation = session.generation();
        if (nbytes != 0)
        {
            const cuda_driver& driver = cuda_driver::get();
            CUresult result = driver.cuMemAlloc(&m_pointer, nbytes);
            if (result == CUDA_ERROR_OUT_OF_MEMORY && session.release_kept_memory(m_device) > 0)
            {
                result = driver.cuMemAlloc(&m_pointer, nbytes);  // kept temporaries freed: once more
            }
            if (result == CUDA_ERROR_OUT_OF_MEMORY)
            {
                // The simulator says why its device has the size it has (host memory); read before another call.
                std::string why = driver.simulated() ? cuda_error_description(result) : std::string();
                std::size_t free_bytes = 0;
                std::size_t total_bytes = 0;
                driver.cuMemGetInfo(&free_bytes, &total_bytes);
                throw out_of_memory_error("cuMemAlloc", result, nbytes, free_bytes, total_bytes, why);
            }
            check(result, "cuMemAlloc");
        }
        session.resources().add(this);
    }

    device_buffer::device_buffer(std::shared_ptr<device_buffer> parent, std::size_t offset, std::size_t nbytes)
        : m_session(parent->m_session)
        , m_size(nbytes)
        , m_device(parent->m_device)
        , m_generation(parent->m_generation)
        , m_label(parent->m_label)
        , m_parent(std::move(parent))
        , m_offset(offset)
    {
    }

    std::shared_ptr<device_buffer> device_buffer::view_of(std::shared_ptr<device_buffer> parent, std::size_t offset,
                                                          std::size_t nbytes)
    {
        if (!parent || offset > parent->size() || nbytes > parent->size() - offset)
        {
            throw usage_error("a view of " + std::to_string(nbytes) + " bytes from byte " + std::to_string(offset) +
                              " does not fit in a buffer of " + std::to_string(parent ? parent->size() : 0) + " bytes");
        }
        // A view of a view looks into the allocation itself.
        if (parent->m_parent)
        {
            offset += parent->m_offset;
            parent = parent->m_parent;
        }
        return std::shared_ptr<device_buffer>(new device_buffer(std::move(parent), offset, nbytes));
    }

    device_buffer::~device_buffer()
    {
        if (m_parent)
        {
            return;  // the parent's memory, freed by the parent
        }
        m_session.resources().remove(this);
        // cuMemFree needs the owning context current; an error here cannot be reported from a
        // destructor, and the memory goes with the context anyway.
        if (m_valid && m_pointer && m_session.make_current_if_alive(m_device, m_generation))
        {
            cuda_driver::get().cuMemFree(m_pointer);
        }
    }

    std::atomic<std::uint64_t> device_buffer::s_releases{0};

    void device_buffer::release() noexcept
    {
        if (m_valid && m_pointer)
        {
            cuda_driver::get().cuMemFree(m_pointer);
        }
        m_valid = false;
        m_pointer = 0;
        s_releases.fetch_add(1, std::memory_order_release);
    }

    void device_buffer::abandon() noexcept
    {
        m_valid = false;
        m_pointer = 0;
        s_releases.fetch_add(1, std::memory_order_release);
    }

    CUdeviceptr device_buffer::checked_pointer() const
    {
        if (m_parent)
        {
            return m_parent->pointer() + m_offset;
        }
        if (!m_valid || !m_session.alive(m_device, m_generation))
        {
            const std::string& lost = m_session.lost_reason();
            std::string name = "device buffer" + (m_label.empty() ? std::string() : " '" + m_label + "'") + " of " +
                               std::to_string(m_size) + " bytes on device " + std::to_string(m_device);
            if (!lost.empty())
            {
                throw session_lost_error(name + " was lost: " + lost);
            }
            throw session_closed_error(name + " is gone: the CUDA session that held it was closed; create it again "
                                     "(for example with xcuda.to_device)");
        }
        return m_pointer;
    }

    void device_buffer::copy_from_host(const void* source, std::size_t nbytes, std::size_t offset,
                                       std::shared_ptr<host_memory_owner> owner)
    {
        if (nbytes + offset > m_size)
        {
            throw usage_error("copy of " + std::to_string(nbytes) + " bytes does not fit in a buffer of " +
                                        std::to_string(m_size) + " bytes");
        }
        if (nbytes == 0)
        {
            return;
        }
        CUdeviceptr destination = pointer() + offset;
        device_session& session = m_session;
        session.waits().wait_idle(m_device);  // the copy below then never blocks on a running kernel
        host_staging& staging = session.copies().staging(m_device);
        if (staging.handles(nbytes))
        {
            staging.to_device(destination, source, nbytes, session.stream(), std::move(owner));
            return;
        }
        check(cuda_driver::get().cuMemcpyHtoD(destination, source, nbytes), "cuMemcpyHtoD");
    }

    void device_buffer::copy_to_host(void* destination, std::size_t nbytes, std::size_t offset,
                                     std::shared_ptr<host_memory_owner> owner) const
    {
        if (nbytes + offset > m_size)
        {
            throw usage_error("copy of " + std::to_string(nbytes) + " bytes is larger than the buffer's " +
                                        std::to_string(m_size) + " bytes");
        }
        if (nbytes == 0)
        {
            return;
        }
        CUdeviceptr source = pointer() + offset;
        device_session& session = m_session;
        session.waits().wait_idle(m_device);
        host_staging& staging = session.copies().staging(m_device);
        if (staging.handles(nbytes))
        {
            staging.to_host(destination, source, nbytes, session.stream(), std::move(owner));
            return;
        }
        check(cuda_driver::get().cuMemcpyDtoH(destination, source, nbytes), "cuMemcpyDtoH");
    }

    void device_buffer::copy_from_host_on(CUstream stream, const void* source, std::size_t nbytes,
                                          std::shared_ptr<host_memory_owner> owner, pending_copies* pending)
    {
        if (nbytes > m_size)
        {
            throw usage_error("copy of " + std::to_string(nbytes) + " bytes does not fit in a buffer of " +
                              std::to_string(m_size) + " bytes");
        }
        if (nbytes == 0)
        {
            return;
        }
        CUdeviceptr destination = pointer();
        host_staging& staging = m_session.copies().staging(m_device);
        if (staging.handles(nbytes))
        {
            staging.to_device(destination, source, nbytes, stream, std::move(owner), pending);
            return;
        }
        check(cuda_driver::get().cuMemcpyHtoDAsync(destination, source, nbytes, stream), "cuMemcpyHtoDAsync");
    }

    void device_buffer::copy_to_host_on(CUstream stream, void* destination, std::size_t nbytes,
                                        std::shared_ptr<host_memory_owner> owner, pending_copies* pending)
    {
        if (nbytes > m_size)
        {
            throw usage_error("copy of " + std::to_string(nbytes) + " bytes is larger than the buffer's " +
                              std::to_string(m_size) + " bytes");
        }
        if (nbytes == 0)
        {
            return;
        }
        CUdeviceptr source = pointer();
        host_staging& staging = m_session.copies().staging(m_device);
        if (staging.handles(nbytes))
        {
            staging.to_host(destination, source, nbytes, stream, std::move(owner), pending);  // after earlier work on stream
            return;
        }
        check(cuda_driver::get().cuMemcpyDtoHAsync(destination, source, nbytes, stream), "cuMemcpyDtoHAsync");
    }

    void device_buffer::prepare_copy_to_host(void* destination, std::size_t nbytes, bool copied_in,
                                             pending_copies& pending)
    {
        if (nbytes == 0 || nbytes > m_size)
        {
            return;  // the copy itself says what is wrong
        }
        host_staging& staging = m_session.copies().staging(m_device);
        if (staging.handles(nbytes))
        {
            staging.prepare_destination(destination, nbytes, copied_in, pending);
        }
    }

    void device_buffer::fill_zero(CUstream stream)
    {
        if (m_size == 0)
        {
            return;
        }
        CUdeviceptr destination = pointer();
        m_session.make_current(m_device);
        check(cuda_driver::get().cuMemsetD8Async(destination, 0, m_size, stream), "cuMemsetD8Async");
    }

    std::string device_buffer::copy(device_buffer& destination, const device_buffer& source, std::size_t bytes,
                                    const std::string& method, bool wait)
    {
        if (bytes > destination.size() || bytes > source.size())
        {
            throw usage_error("a copy of " + std::to_string(bytes) + " bytes needs both buffers that large; "
                                        "the destination has " + std::to_string(destination.size()) +
                                        " bytes and the source " + std::to_string(source.size()));
        }
        int to = destination.device();
        int from = source.device();
        device_session& session = destination.m_session;
        const cuda_driver& driver = cuda_driver::get();
        std::string chosen = method;
        if (chosen.empty())
        {
            chosen = to == from ? "device" : (session.can_access_peer(to, from) ? "peer" : "staged");
        }
        if (chosen == "device" && to != from)
        {
            throw usage_error("method 'device' copies within one device; these buffers live on devices " +
                                        std::to_string(from) + " and " + std::to_string(to));
        }
        if (chosen == "peer" && to != from && !session.can_access_peer(to, from))
        {
            throw usage_error("devices " + std::to_string(from) + " and " + std::to_string(to) +
                                        " have no peer path; use method='staged' (or leave method out)");
        }
        if (chosen != "device" && chosen != "peer" && chosen != "staged")
        {
            throw usage_error("method must be 'device', 'peer' or 'staged', got '" + chosen + "'");
        }
        CUdeviceptr out = destination.pointer();
        CUdeviceptr in = source.pointer();
        if (bytes == 0)
        {
            return chosen;
        }
        if (chosen == "device" || (chosen == "peer" && to == from))
        {
            session.make_current(to);
            check(driver.cuMemcpyDtoDAsync(out, in, bytes, session.stream()), "cuMemcpyDtoDAsync");
            if (wait)
            {
                session.waits().wait_idle(to);
            }
            return "device";
        }
        // Earlier work on the source device first (interruptibly); the copy is queued on the
        // destination's legacy stream, after its earlier work.
        session.waits().wait_idle(from);
        if (chosen == "peer")
        {
            session.open_peer_path(to, from);
            session.make_current(to);
            check(driver.cuMemcpyPeerAsync(out, session.context(to), in, session.context(from), bytes, session.stream()),
                  "cuMemcpyPeerAsync");
            session.waits().wait_idle(to);
            return chosen;
        }
        // Staged: two page-locked halves; the download of one chunk overlaps the upload of the other.
        constexpr std::size_t chunk = 16u << 20;
        host_copies::memory_lease pinned = session.copies().memory(2 * chunk);
        char* halves[2] = {static_cast<char*>(pinned.memory->data()), static_cast<char*>(pinned.memory->data()) + chunk};
        CUevent uploaded[2] = {nullptr, nullptr};
        session.make_current(to);
        check(driver.cuEventCreate(&uploaded[0], CU_EVENT_DISABLE_TIMING), "cuEventCreate");
        CUresult created = driver.cuEventCreate(&uploaded[1], CU_EVENT_DISABLE_TIMING);
        if (created != CUDA_SUCCESS)
        {
            driver.cuEventDestroy(uploaded[0]);
            check(created, "cuEventCreate");
        }
        try
        {
            for (std::size_t offset = 0, k = 0; offset < bytes; offset += chunk, ++k)
            {
                std::size_t b = k % 2;
                std::size_t length = std::min(chunk, bytes - offset);
                if (k >= 2)
                {
                    session.make_current(to);
                    session.waits().wait_event(uploaded[b]);  // this half's previous upload is done
                }
                session.make_current(from);
                check(driver.cuMemcpyDtoH(halves[b], in + offset, length), "cuMemcpyDtoH");
                session.make_current(to);
                check(driver.cuMemcpyHtoDAsync(out + offset, halves[b], length, session.stream()), "cuMemcpyHtoDAsync");
                check(driver.cuEventRecord(uploaded[b], session.stream()), "cuEventRecord");
            }
            session.waits().wait_idle(to);
        }
        catch (...)
        {
            driver.cuEventDestroy(uploaded[0]);
            driver.cuEventDestroy(uploaded[1]);
            throw;
        }
        driver.cuEventDestroy(uploaded[0]);
        driver.cuEventDestroy(uploaded[1]);
        return chosen;
    }

    std::string device_buffer::describe() const
    {
        return (m_label.empty() ? std::string("buffer") : m_label) + " (" + std::to_string(m_size) + " bytes, device " +
               std::to_string(m_device) + ")";
    }
}
