#include "cuda_array.hpp"

#include <cstring>

#include "cuda_driver.hpp"
#include "errors.hpp"

namespace xcuda
{
    namespace
    {
        // The driver's format of a kind; false for a kind no CUDA array holds.
        bool format_of(scalar_kind kind, CUarray_format& format)
        {
            switch (kind)
            {
            case scalar_kind::f32: format = CU_AD_FORMAT_FLOAT; return true;
            case scalar_kind::f16: format = CU_AD_FORMAT_HALF; return true;
            case scalar_kind::i8: format = CU_AD_FORMAT_SIGNED_INT8; return true;
            case scalar_kind::u8: format = CU_AD_FORMAT_UNSIGNED_INT8; return true;
            case scalar_kind::i16: format = CU_AD_FORMAT_SIGNED_INT16; return true;
            case scalar_kind::u16: format = CU_AD_FORMAT_UNSIGNED_INT16; return true;
            case scalar_kind::i32: format = CU_AD_FORMAT_SIGNED_INT32; return true;
            case scalar_kind::u32: format = CU_AD_FORMAT_UNSIGNED_INT32; return true;
            default: return false;
            }
        }

        // The descriptor's width, height and depth: numpy's extents from the last (height 0 for one
        // dimension, depth 0 for two; a layered array's layer count is its depth).
        CUDA_ARRAY3D_DESCRIPTOR descriptor_of(const cuda_array::description& d)
        {
            CUDA_ARRAY3D_DESCRIPTOR a;
            std::memset(&a, 0, sizeof a);
            std::size_t n = d.shape.size();
            std::size_t sampled = d.layered ? n - 1 : n;
            a.Width = d.shape[n - 1];
            a.Height = sampled >= 2 ? d.shape[n - 2] : 0;
            a.Depth = d.layered ? d.shape[0] : sampled == 3 ? d.shape[0] : 0;
            format_of(d.kind, a.Format);
            a.NumChannels = d.channels;
            a.Flags = (d.surface ? CUDA_ARRAY3D_SURFACE_LDST : 0u) | (d.layered ? CUDA_ARRAY3D_LAYERED : 0u);
            return a;
        }

        const cuda_driver& array_driver()
        {
            const cuda_driver& driver = cuda_driver::get();
            if (!driver.cuArray3DCreate || !driver.cuArrayDestroy || !driver.cuMemcpy3D)
            {
                throw cuda_unavailable_error("this NVIDIA driver has no cuArray3DCreate, cuArrayDestroy or cuMemcpy3D, "
                                             "which CUDA arrays (textures and surfaces) need");
            }
            return driver;
        }
    }

    unsigned cuda_array::description::dimensions() const
    {
        return static_cast<unsigned>(shape.size()) - (layered ? 1u : 0u);
    }

    std::size_t cuda_array::description::element_bytes() const
    {
        return scalar_kind_size(kind) * channels;
    }

    std::size_t cuda_array::description::nbytes() const
    {
        std::size_t n = element_bytes();
        for (std::size_t extent : shape)
        {
            n *= extent;
        }
        return n;
    }

    std::string cuda_array::description::text() const
    {
        std::string extents = "(";
        for (std::size_t i = 0; i < shape.size(); ++i)
        {
            extents += (i ? ", " : "") + std::to_string(shape[i]);
        }
        extents += shape.size() == 1 ? ",)" : ")";
        return extents + " " + scalar_kind_name(kind) + (channels > 1 ? ", " + std::to_string(channels) + " channels" : "") +
               (surface ? ", surface" : "") + (layered ? ", layered" : "");
    }

    void cuda_array::check(const description& d)
    {
        CUarray_format format;
        if (!format_of(d.kind, format))
        {
            throw usage_error(std::string("a CUDA array holds float32, float16 or 8-, 16- or 32-bit integers, not ") +
                              (d.dtype.empty() ? std::string(scalar_kind_name(d.kind)) : d.dtype) +
                              ": convert the array first (for example .astype(numpy.float32))");
        }
        if (d.channels != 1 && d.channels != 2 && d.channels != 4)
        {
            throw usage_error("a CUDA array has 1, 2 or 4 channels, not " + std::to_string(d.channels) +
                              (d.channels == 3 ? ": pad the last axis to 4 (numpy.pad(a, [(0, 0)] * (a.ndim - 1) + "
                                                 "[(0, 1)])) and read .x, .y, .z of a float4"
                                               : ""));
        }
        std::size_t n = d.shape.size();
        if (d.layered ? (n != 2 && n != 3) : (n < 1 || n > 3))
        {
            throw usage_error("a CUDA array has 1, 2 or 3 dimensions (a layered one: its layers, then 1 or 2), not the shape " +
                              d.text() + (d.channels > 1 ? "; the channels are the last axis of the numpy array, not of "
                                                           "the shape given here"
                                                         : ""));
        }
        std::size_t bytes = d.element_bytes();
        for (std::size_t extent : d.shape)
        {
            if (extent == 0)
            {
                throw usage_error("a CUDA array of shape " + d.text() + " has an extent 0: every extent is at least 1");
            }
            if (extent > (std::size_t(1) << 31) || bytes > (std::size_t(1) << 48) / extent)
            {
                throw usage_error("a CUDA array of shape " + d.text() + " is larger than any device holds (extents up to "
                                  "2^31, 2^48 bytes in all; the device's own texture limits are smaller)");
            }
            bytes *= extent;
        }
    }

    std::shared_ptr<cuda_array> cuda_array::make(device_session& session, const description& d)
    {
        check(d);
        return std::shared_ptr<cuda_array>(new cuda_array(session, d));
    }

    cuda_array::cuda_array(device_session& session, const description& d)
        : m_session(session)
        , m_description(d)
    {
        const cuda_driver& driver = array_driver();
        session.make_current();
        m_device = session.device_ordinal();
        m_generation = session.generation();
        CUDA_ARRAY3D_DESCRIPTOR descriptor = descriptor_of(d);
        CUresult result = driver.cuArray3DCreate(&m_array, &descriptor);
        if (result == CUDA_ERROR_OUT_OF_MEMORY && session.release_kept_memory(m_device) > 0)
        {
            result = driver.cuArray3DCreate(&m_array, &descriptor);
        }
        if (result == CUDA_ERROR_OUT_OF_MEMORY)
        {
            std::size_t free_bytes = 0, total_bytes = 0;
            driver.cuMemGetInfo(&free_bytes, &total_bytes);
            throw out_of_memory_error("cuArray3DCreate", result, d.nbytes(), free_bytes, total_bytes);
        }
        xcuda::check(result, "cuArray3DCreate");
        session.resources().add(this);
    }

    cuda_array::~cuda_array()
    {
        m_session.resources().remove(this);
        if (m_array && m_session.make_current_if_alive(m_device, m_generation))
        {
            cuda_driver::get().cuArrayDestroy(m_array);
        }
    }

    CUarray cuda_array::handle() const
    {
        if (!m_array)
        {
            m_session.check_alive(m_device, m_generation, "CUDA array");
            throw session_closed_error("CUDA array " + m_description.text() + " is gone: the CUDA session that held it "
                                       "was closed; make it again");
        }
        m_session.check_alive(m_device, m_generation, "CUDA array");
        return m_array;
    }

    void cuda_array::copy(bool to_array, CUmemorytype other, const void* host, CUdeviceptr device, std::size_t bytes) const
    {
        if (bytes != m_description.nbytes())
        {
            throw usage_error("a copy of " + std::to_string(bytes) + " bytes " + (to_array ? "into" : "out of") +
                              " a CUDA array " + m_description.text() + " of " + std::to_string(m_description.nbytes()) +
                              " bytes: the array is copied whole, from or to memory of its own shape and dtype");
        }
        CUarray array = handle();
        const cuda_driver& driver = array_driver();
        m_session.make_current(m_device);
        m_session.waits().wait_idle(m_device);
        CUDA_ARRAY3D_DESCRIPTOR d = descriptor_of(m_description);
        CUDA_MEMCPY3D c;
        std::memset(&c, 0, sizeof c);
        std::size_t row = m_description.element_bytes() * d.Width;
        c.WidthInBytes = row;
        c.Height = d.Height ? d.Height : 1;
        c.Depth = d.Depth ? d.Depth : 1;
        (to_array ? c.dstMemoryType : c.srcMemoryType) = CU_MEMORYTYPE_ARRAY;
        (to_array ? c.dstArray : c.srcArray) = array;
        CUmemorytype& type = to_array ? c.srcMemoryType : c.dstMemoryType;
        type = other;
        if (to_array)
        {
            c.srcHost = host;
            c.srcDevice = device;
            c.srcPitch = row;
            c.srcHeight = c.Height;
        }
        else
        {
            c.dstHost = const_cast<void*>(host);
            c.dstDevice = device;
            c.dstPitch = row;
            c.dstHeight = c.Height;
        }
        xcuda::check(driver.cuMemcpy3D(&c), "cuMemcpy3D");
    }

    void cuda_array::copy_from_host(const void* source, std::size_t bytes)
    {
        copy(true, CU_MEMORYTYPE_HOST, source, 0, bytes);
    }

    void cuda_array::copy_from_device(CUdeviceptr source, std::size_t bytes)
    {
        copy(true, CU_MEMORYTYPE_DEVICE, nullptr, source, bytes);
    }

    void cuda_array::copy_to_host(void* destination, std::size_t bytes) const
    {
        copy(false, CU_MEMORYTYPE_HOST, destination, 0, bytes);
    }

    void cuda_array::release() noexcept
    {
        if (m_array)
        {
            cuda_driver::get().cuArrayDestroy(m_array);
        }
        m_array = nullptr;
    }

    void cuda_array::abandon() noexcept
    {
        m_array = nullptr;
    }

    std::string cuda_array::describe() const
    {
        return "CUDA array " + m_description.text() + " on device " + std::to_string(m_device);
    }
}
