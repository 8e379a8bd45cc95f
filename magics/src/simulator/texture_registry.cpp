#include "texture_registry.hpp"

namespace xcuda::sim
{
    unsigned texel_format_bytes(texel_format format)
    {
        switch (format)
        {
        case texel_format::u8:
        case texel_format::s8: return 1;
        case texel_format::u16:
        case texel_format::s16:
        case texel_format::f16: return 2;
        default: return 4;
        }
    }

    bool texel_format_is_integer(texel_format format)
    {
        return format != texel_format::f16 && format != texel_format::f32;
    }

    bool texel_format_is_signed(texel_format format)
    {
        return format == texel_format::s8 || format == texel_format::s16 || format == texel_format::s32;
    }

    sim_array* texture_registry::add_array(std::unique_ptr<sim_array> array)
    {
        std::lock_guard<std::mutex> held(m_mutex);
        sim_array* raw = array.get();
        m_arrays[raw] = std::shared_ptr<sim_array>(std::move(array));
        return raw;
    }

    std::shared_ptr<sim_array> texture_registry::array(const void* handle) const
    {
        std::lock_guard<std::mutex> held(m_mutex);
        auto found = m_arrays.find(handle);
        return found == m_arrays.end() ? nullptr : found->second;
    }

    bool texture_registry::remove_array(const void* handle)
    {
        std::lock_guard<std::mutex> held(m_mutex);
        return m_arrays.erase(handle) != 0;
    }

    std::uint64_t texture_registry::add_view(texture_view view)
    {
        std::lock_guard<std::mutex> held(m_mutex);
        std::uint64_t handle = m_next++;
        m_views[handle] = std::move(view);
        return handle;
    }

    bool texture_registry::view(std::uint64_t handle, texture_view& out) const
    {
        std::lock_guard<std::mutex> held(m_mutex);
        auto found = m_views.find(handle);
        if (found == m_views.end())
        {
            return false;
        }
        out = found->second;
        return true;
    }

    bool texture_registry::remove_view(std::uint64_t handle)
    {
        std::lock_guard<std::mutex> held(m_mutex);
        return m_views.erase(handle) != 0;
    }

    std::size_t texture_registry::arrays() const
    {
        std::lock_guard<std::mutex> held(m_mutex);
        return m_arrays.size();
    }

    std::size_t texture_registry::views() const
    {
        std::lock_guard<std::mutex> held(m_mutex);
        return m_views.size();
    }
}
