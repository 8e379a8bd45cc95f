#include "launch_call.hpp"

#include "cuda_driver.hpp"
#include "cuda_kernel.hpp"
#include "cuda_session.hpp"
#include "device_buffer.hpp"
#include "event_timer.hpp"
#include "temporary_cache.hpp"

namespace xcuda
{
    launch_call::launch_call(cuda_kernel& kernel, const launch_dims& dims, CUstream stream)
        : m_kernel(kernel)
        , m_dims(dims)
        , m_stream(stream)
        , m_arguments(kernel.plan_for_launch())
    {
    }

    launch_call::~launch_call()
    {
        settle();
    }

    void launch_call::record_extent(std::size_t index, std::uint64_t address, std::size_t bytes)
    {
        m_extents.push_back({index, address, bytes, nullptr, true});
    }

    void launch_call::pass_host_array(std::size_t index, void* data, std::size_t bytes, bool copy_in, bool copy_out,
                                      std::shared_ptr<host_memory_owner> owner, std::string label)
    {
        m_arguments.store_pointer(index, 0);
        m_array_bytes += bytes;
        if (m_for_replay)
        {
            m_extents.push_back({index, 0, bytes, data, copy_in});
            return;
        }
        host_array array;
        array.index = index;
        array.data = data;
        array.bytes = bytes;
        array.copy_in = copy_in;
        array.copy_out = copy_out;
        array.owner = std::move(owner);
        array.label = std::move(label);
        m_host.push_back(std::move(array));
    }

    void launch_call::wait_for(CUstream producer)
    {
        m_producers.push_back(producer);
    }

    void launch_call::keep_until_complete(std::shared_ptr<void> object)
    {
        m_kept.push_back(std::move(object));
    }

    void launch_call::begin()
    {
        cuda_session& session = m_kernel.module()->session();
        for (CUstream producer : m_producers)
        {
            session.waits().wait(producer);
        }
        if (m_host.empty())
        {
            return;
        }
        session.make_current();
        m_pending.use = 0;  // this call is a new use of its arrays (their copy in and back count as one)
        temporary_cache& kept = session.transfers().temporaries();
        for (host_array& array : m_host)
        {
            array.device = kept.take(array.bytes);
            array.device->set_label(std::move(array.label));
            if (array.copy_out && array.bytes > 0)
            {
                // Made ready while the copies in below and the kernel run: a new destination's pages faulted
                // in, a written one copied in too read for its zero pieces (host_staging::prepare_destination).
                array.device->prepare_copy_to_host(array.data, array.bytes, array.copy_in, m_pending);
            }
        }
        for (host_array& array : m_host)
        {
            if (array.copy_in && array.bytes > 0)
            {
                array.device->copy_from_host_on(m_stream, array.data, array.bytes, array.owner, &m_pending);
            }
            m_arguments.store_pointer(array.index, array.bytes ? array.device->pointer() : 0);
        }
    }

    void launch_call::complete()
    {
        if (m_host.empty() && m_kept.empty())
        {
            return;
        }
        cuda_session& session = m_kernel.module()->session();
        // The launch first, interruptibly: the copies below then never block on a running kernel.
        session.waits().wait(m_stream);
        for (host_array& array : m_host)
        {
            if (array.copy_out && array.bytes > 0)
            {
                array.device->copy_to_host_on(m_stream, array.data, array.bytes, array.owner, &m_pending);
            }
        }
        if (!m_host.empty())
        {
            session.waits().wait(m_stream);
        }
        m_pending.clear();  // every copy has completed: the registrations may go
        temporary_cache& kept = session.transfers().temporaries();
        for (host_array& array : m_host)
        {
            kept.give_back(std::move(array.device));  // every use has completed: the next launch may have it
        }
        m_kept.clear();
    }

    void launch_call::show_device_output()
    {
        cuda_session& session = m_kernel.module()->session();
        // A wait inside a graph capture would end it: the output then comes at the replay's wait. On the
        // simulator the launch has run; its printf output and its warnings (which name lines by the PTX's
        // .file) come out here in the cell's own lines, as its faults do (cell_lines::located_report).
        if (!cuda_driver::get().simulated() || !session.waits().has_output_sink() || session.captures().of_this_thread() ||
            session.captures().on_stream(m_stream))
        {
            return;
        }
        cell_lines lines = m_kernel.module()->lines();
        session.waits().wait_relocated(m_stream, [&lines](const std::string& text) { return lines.located_report(text); });
    }

    void launch_call::settle() noexcept
    {
        if (m_pending.empty())
        {
            return;
        }
        // An error came between the copies and their wait: the copies may still read or write
        // registered memory, so they must be done before the registrations can go.
        if (m_kernel.module()->session().waits().settle_stream(m_stream))
        {
            m_pending.clear();
        }
    }

    void launch_call::run()
    {
        try
        {
            begin();
            m_kernel.launch(m_dims, m_stream, m_arguments);
            show_device_output();
            complete();
        }
        catch (...)
        {
            settle();
            throw;
        }
    }

    std::vector<double> launch_call::time(int repeat, int warmup)
    {
        try
        {
            m_kernel.function();  // the first launch's lookups stay out of the warm-up and the samples
            begin();
            event_timer timer(m_kernel.module()->session());
            std::vector<double> samples = timer.time(
                m_stream, [&] { m_kernel.launch(m_dims, m_stream, m_arguments); }, repeat, warmup);
            complete();
            return samples;
        }
        catch (...)
        {
            settle();
            throw;
        }
    }

    CUDA_KERNEL_NODE_PARAMS launch_call::node_params()
    {
        return m_kernel.node_params(m_dims, m_arguments.pointers());
    }
}
