#pragma once
// A texture object (cuTexObjectCreate) over one CUDA array, with its sampling settings (texture_settings):
// what a kernel's cudaTextureObject_t parameter is given (docs/textures.md). The settings are checked against
// the array (texture_settings::check) before the driver is asked.
//
// Ownership and threading: array_view's (holds its array; destroyed in the destructor or when the session
// closes first, before the array).

#include <cstdint>
#include <memory>
#include <string>

#include "array_view.hpp"
#include "texture_settings.hpp"

namespace xcuda
{
    class texture_object final : public array_view
    {
    public:
        // Raises usage_error for settings the array cannot take, cuda_unavailable_error when the driver has no
        // texture objects, cuda_error for the driver's refusals.
        static std::shared_ptr<texture_object> make(std::shared_ptr<cuda_array> array, const texture_settings& settings);
        // A texture over a new CUDA array of `d`, filled from host memory (`host`) or device memory (`device`,
        // when host is null) of exactly d.nbytes(): xcuda.texture(numpy_or_device_array, ...) in one call. The
        // settings and the array are checked before anything is made. No Python state: callers release the GIL.
        static std::shared_ptr<texture_object> filled(device_session& session, const cuda_array::description& d,
                                                      const void* host, CUdeviceptr device, std::size_t bytes,
                                                      const texture_settings& settings);

        const texture_settings& settings() const noexcept { return m_settings; }
        // "xcuda.Texture((64, 64) float32, filter='linear', ...)"
        std::string repr() const;

        std::string describe() const override;
        const char* kind() const noexcept override { return "texture"; }

    private:
        texture_object(std::shared_ptr<cuda_array> array, const texture_settings& settings);

        texture_settings m_settings;
    };
}
