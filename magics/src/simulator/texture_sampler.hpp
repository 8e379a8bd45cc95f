#pragma once
// What a texture fetch returns, as the CUDA Programming Guide's "Texture Fetching" appendix defines it:
// the texel (point filtering) or the weighted texels around the coordinate (linear filtering), after the
// address mode of each dimension, with normalised coordinates scaled by the extent, and 8- and 16-bit
// integers promoted to [0, 1] ([-1, 1] signed) unless the texture reads them as integers.
//
// Linear filtering, as the appendix writes it for two dimensions:
//     tex(x, y) = (1-a)(1-b) T[i, j] + a(1-b) T[i+1, j] + (1-a)b T[i, j+1] + ab T[i+1, j+1]
// with xB = x - 0.5, i = floor(xB), a = frac(xB) (and y, j, b alike), where a and b are held "in 9-bit
// fixed point format with 8 bits of fractional value": here A = the fraction times 256 rounded to nearest,
// ties up (weight_units()). The Guide leaves the products open; an H100 (2026-12-07, 16,384 fetches of
// tests/gpu_host/texture_filter_probe.py, every one equal) rounds each 2D corner's product A*B/256 to a
// whole 1/256 again, ties UP on the diagonal corners (i, j) and (i+1, j+1) and DOWN on the other two, so
// the four weights always sum to exactly 1: corner_weights_2d(). One dimension: weights 256-A and A.
// Three dimensions (not probed): the plain product of the three 9-bit weights.
//
// Stateless; any thread.

#include <cstdint>

#include "texture_registry.hpp"

namespace xcuda::sim
{
    class texture_sampler
    {
    public:
        // A fetch's four results, 32 bits each: a float's bits, or an integer's (sign-extended when signed).
        struct result
        {
            std::uint32_t bits[4] = {0, 0, 0, 0};
        };

        // tex with float coordinates: `dims` of them in coords (x, y, z), `layer` the layer of a layered
        // array (-1: none).
        static result sample(const texture_view& view, unsigned dims, const float coords[3], int layer);
        // tex with integer coordinates: the texel itself at those indices (no filtering, no normalisation),
        // after the address mode.
        static result fetch(const texture_view& view, unsigned dims, const std::int32_t coords[3], int layer);
        // tld4: component `component` (0..3) of the four texels linear filtering would weigh, in the PTX ISA's
        // order: (i, j+1), (i+1, j+1), (i+1, j), (i, j).
        static result gather(const texture_view& view, unsigned component, const float coords[2], int layer);

        // A linear-filtering weight in 1/256 units: the fraction (0 <= f < 1) in 9-bit fixed point, 8 bits
        // after the point, rounded to nearest with ties up (0..256).
        static int weight_units(double fraction);
        // The four corner weights of 2D linear filtering in 1/256 units, in the order (i, j), (i+1, j),
        // (i, j+1), (i+1, j+1), from the 9-bit weights a and b (0..256), as the GPU rounds them (above).
        static void corner_weights_2d(int a, int b, int out[4]);
        // The index `i` of an extent `n` after the address mode; -1 for a border texel.
        static long long address(long long i, long long n, address_mode mode, bool normalized);
    };
}
