#include "tensor_map_descriptor.hpp"

#include <cstring>

namespace xcuda::sim
{
    namespace
    {
        const std::uint32_t k_magic = 0x414d5458;  // "XTMA"

        template <typename T>
        void put(std::uint8_t* bytes, unsigned at, T value)
        {
            std::memcpy(bytes + at, &value, sizeof value);
        }

        template <typename T>
        T get(const std::uint8_t* bytes, unsigned at)
        {
            T value;
            std::memcpy(&value, bytes + at, sizeof value);
            return value;
        }

        std::string n(std::uint64_t v) { return std::to_string(v); }
    }

    unsigned tensor_map_descriptor::element_bytes(unsigned data_type)
    {
        static const unsigned bytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
        return data_type < sizeof bytes / sizeof bytes[0] ? bytes[data_type] : 0;
    }

    bool tensor_map_descriptor::floating(unsigned data_type) { return data_type >= 6 && data_type <= 12; }

    std::string tensor_map_descriptor::check() const
    {
        const unsigned size = element_bytes(data_type);
        if (!size)
        {
            return "data type " + n(data_type) + " is not one the simulator knows (UINT8 .. TFLOAT32_FTZ)";
        }
        if (rank < (im2col || interleave ? 3u : 1u) || rank > 5)
        {
            return "a rank of " + n(rank) + " (1 to 5; 3 to 5 for im2col or interleave)";
        }
        if (interleave > 2 || swizzle > 3 || l2_promotion > 3 || oob_fill > 1)
        {
            return "an interleave, swizzle, L2 promotion or OOB fill the simulator does not know";
        }
        const unsigned align = interleave == 2 ? 32 : 16;
        if (address % align)
        {
            return "the global address is not " + n(align) + "-byte aligned";
        }
        for (unsigned i = 0; i < rank; ++i)
        {
            if (dims[i] == 0 || dims[i] > (1ull << 32))
            {
                return "globalDim[" + n(i) + "] = " + n(dims[i]) + " (1 to 2^32)";
            }
            if (i > 0 && (strides[i] % align || strides[i] >= (1ull << 40)))
            {
                return "globalStrides[" + n(i - 1) + "] = " + n(strides[i]) + " (a multiple of " + n(align) + " below 2^40)";
            }
            if (!im2col && (box[i] == 0 || box[i] > 256))
            {
                return "boxDim[" + n(i) + "] = " + n(box[i]) + " (1 to 256)";
            }
            if (element_strides[i] == 0 || element_strides[i] > 8)
            {
                return "elementStrides[" + n(i) + "] = " + n(element_strides[i]) + " (1 to 8)";
            }
        }
        const std::uint64_t inner = (im2col ? channels : box[0]) * std::uint64_t{size};
        if (im2col)
        {
            const std::int32_t limit = rank == 3 ? 32768 : rank == 4 ? 128 : 16;
            for (unsigned k = 0; k + 2 < rank; ++k)
            {
                if (lower[k] < -limit || lower[k] >= limit || upper[k] < -limit || upper[k] >= limit)
                {
                    return "an im2col corner outside -" + n(limit) + " .. " + n(limit - 1);
                }
                if (static_cast<std::int64_t>(dims[k + 1]) - 1 + upper[k] < lower[k])
                {
                    return "an empty im2col bounding box";
                }
            }
            if (channels == 0 || channels > 256 || pixels == 0 || pixels > 1024)
            {
                return "channelsPerPixel 1 to 256 and pixelsPerColumn 1 to 1024";
            }
        }
        if (interleave == 0 && inner % 16)
        {
            return "the box's inner dimension is " + n(inner) + " bytes (a multiple of 16 without interleave)";
        }
        if (interleave == 0 && swizzle && inner > (16u << swizzle))
        {
            return "the box's inner dimension is " + n(inner) + " bytes, wider than the swizzle's " + n(16u << swizzle);
        }
        if (interleave == 2 && swizzle != 1)
        {
            return "interleave 32B needs swizzle 32B";
        }
        if (oob_fill && !floating(data_type))
        {
            return "the NaN OOB fill is for float types";
        }
        return "";
    }

    void tensor_map_descriptor::write(std::uint8_t* bytes) const
    {
        std::memset(bytes, 0, 128);
        put(bytes, 0, k_magic);
        const std::uint8_t flags[] = {data_type, rank, interleave, swizzle, l2_promotion, oob_fill, im2col};
        std::memcpy(bytes + 4, flags, sizeof flags);
        put(bytes, 12, static_cast<std::uint16_t>(channels));
        put(bytes, 14, static_cast<std::uint16_t>(pixels));
        put(bytes, 16, address);
        for (unsigned i = 0; i < 5; ++i)
        {
            put(bytes, 24 + 4 * i, static_cast<std::uint32_t>(dims[i] ? dims[i] - 1 : 0));
            if (i > 0)
            {
                put(bytes, 48 + 8 * (i - 1), strides[i]);
            }
            put(bytes, 80 + 2 * i, static_cast<std::uint16_t>(box[i]));
            bytes[90 + i] = static_cast<std::uint8_t>(element_strides[i]);
        }
        for (unsigned k = 0; k < 3; ++k)
        {
            put(bytes, 96 + 2 * k, static_cast<std::int16_t>(lower[k]));
            put(bytes, 102 + 2 * k, static_cast<std::int16_t>(upper[k]));
        }
    }

    bool tensor_map_descriptor::read(const std::uint8_t* bytes, tensor_map_descriptor& d)
    {
        if (get<std::uint32_t>(bytes, 0) != k_magic)
        {
            return false;
        }
        d.data_type = bytes[4];
        d.rank = bytes[5];
        d.interleave = bytes[6];
        d.swizzle = bytes[7];
        d.l2_promotion = bytes[8];
        d.oob_fill = bytes[9];
        d.im2col = bytes[10] != 0;
        d.channels = get<std::uint16_t>(bytes, 12);
        d.pixels = get<std::uint16_t>(bytes, 14);
        d.address = get<std::uint64_t>(bytes, 16);
        for (unsigned i = 0; i < 5; ++i)
        {
            d.dims[i] = i < d.rank ? std::uint64_t{get<std::uint32_t>(bytes, 24 + 4 * i)} + 1 : 1;
            d.strides[i] = i == 0 ? element_bytes(d.data_type) : get<std::uint64_t>(bytes, 48 + 8 * (i - 1));
            d.box[i] = get<std::uint16_t>(bytes, 80 + 2 * i);
            d.element_strides[i] = bytes[90 + i];
        }
        for (unsigned k = 0; k < 3; ++k)
        {
            d.lower[k] = get<std::int16_t>(bytes, 96 + 2 * k);
            d.upper[k] = get<std::int16_t>(bytes, 102 + 2 * k);
        }
        return d.rank >= 1 && d.rank <= 5 && element_bytes(d.data_type) != 0;
    }
}
