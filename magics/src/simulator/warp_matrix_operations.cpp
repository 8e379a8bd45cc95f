// warp_interpreter's matrix operations (issue 46): wmma.load/store/mma, mma.sync and ldmatrix. Each is an
// operation of the whole warp: the 32 lanes' registers together hold the matrices (fragments), gathered into
// whole matrices here, multiplied, and scattered back.
//
// Where each element lives: for mma.sync and ldmatrix, where the PTX ISA's "Matrix Fragments" sections put it
// (groupID = lane >> 2, threadID_in_group = lane % 4); for wmma, whose layout the ISA leaves unspecified, the
// simulator's own (lane l holds elements l * u .. l * u + u - 1 of the matrix in row-major order, u = the
// matrix's elements / 32, repeated when the fragment has more registers than that, as f16's A and B do).
// Products are exact in double; each element of D is the sum of its K products and C in double, rounded once to
// D's type (docs/simulator.md says how that differs from a tensor core's).

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "warp_interpreter.hpp"
#include "warp_values.hpp"

namespace xcuda::sim
{
    namespace
    {
        unsigned bits_of(char t) { return t == 'h' || t == 'b' ? 16 : t == 's' || t == 'u' ? 8 : 32; }

        double half_value(std::uint32_t h)
        {
            int exponent = (h >> 10) & 0x1f;
            double mantissa = h & 0x3ff;
            double v = exponent == 0 ? std::ldexp(mantissa, -24)
                       : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                        : std::ldexp(mantissa + 1024, exponent - 25);
            return (h & 0x8000) ? -v : v;
        }

        // The nearest f16 to a double (ties to even, one rounding), infinity past the largest.
        std::uint32_t half_bits(double value)
        {
            std::uint32_t sign = std::signbit(value) ? 0x8000 : 0;
            double a = std::fabs(value);
            if (std::isnan(a))
            {
                return sign | 0x7e00;
            }
            if (a < std::ldexp(1.0, -14))  // subnormal: a multiple of 2^-24 (1024 of them is the smallest normal)
            {
                return sign | static_cast<std::uint32_t>(std::nearbyint(std::ldexp(a, 24)));
            }
            int e;
            std::frexp(a, &e);  // a = f 2^e, f in [0.5, 1): its exponent is e - 1
            double q = std::nearbyint(std::ldexp(a, 11 - e));  // 11 significant bits
            if (q == 2048)
            {
                q = 1024;
                ++e;
            }
            int exponent = e - 1 + 15;
            return exponent >= 31 ? sign | 0x7c00 : sign | static_cast<std::uint32_t>(exponent) << 10 | static_cast<std::uint32_t>(q - 1024);
        }

        double element_value(char t, std::uint32_t b)
        {
            switch (t)
            {
            case 'h': return half_value(b);
            case 'b': return static_cast<double>(as<float>(b << 16));
            case 't': return static_cast<double>(as<float>(b & ~0x1fffu));  // tf32: the low 13 mantissa bits do not count
            case 'f': return static_cast<double>(as<float>(b));
            case 's': return static_cast<std::int8_t>(b);
            case 'u': return static_cast<std::uint8_t>(b);
            default: return static_cast<std::int32_t>(b);
            }
        }

        std::uint32_t element_bits(char t, double v, bool satfinite)
        {
            switch (t)
            {
            case 'h': return half_bits(v);
            case 'f': return static_cast<std::uint32_t>(bits(static_cast<float>(v)));
            default:
                if (satfinite)
                {
                    v = std::fmin(std::fmax(v, -2147483648.0), 2147483647.0);
                }
                return static_cast<std::uint32_t>(static_cast<std::int64_t>(v));  // exact: |v| < 2^53, wraps at 32 bits
            }
        }

        // The (row, col) of element i of lane l of mma.sync's matrix `which` ('a', 'b', 'c'), by the ISA's tables.
        void mma_position(const matrix_shape& s, char which, unsigned l, unsigned i, unsigned& row, unsigned& col)
        {
            const unsigned g = l >> 2, t = l % 4;
            const char type = which == 'a' ? s.a : s.b;
            if (which == 'c')
            {
                row = g + 8 * (i >> 1);
                col = t * 2 + (i & 1);
            }
            else if (type == 's' || type == 'u')  // m16n8k32
            {
                row = which == 'a' ? g + 8 * ((i >> 2) & 1) : t * 4 + (i & 3) + 16 * (i >> 2);
                col = which == 'a' ? t * 4 + (i & 3) + 16 * (i >> 3) : g;
            }
            else if (type == 't')  // m16n8k8
            {
                row = which == 'a' ? g + 8 * (i & 1) : t + 4 * i;
                col = which == 'a' ? t + 4 * (i >> 1) : g;
            }
            else  // f16, bf16: m16n8k16 (k 16) or m16n8k8
            {
                row = which == 'a' ? g + 8 * ((i >> 1) & 1) : t * 2 + (i & 1) + 8 * (i >> 1);
                col = which == 'a' ? t * 2 + (i & 1) + 8 * (i >> 2) : g;
            }
        }
    }

    void warp_interpreter::matrix_operation(const instruction& in, std::uint32_t active)
    {
        if (in.var == variant::tf32_convert)
        {
            // cvt.rna.tf32.f32: to 10 mantissa bits, ties away from zero (half an ulp of tf32 added to the
            // magnitude, then the 13 low bits dropped; the largest floats round to infinity); NaN stays NaN.
            source a = fetch(in.operands[1], 0);
            std::uint64_t* d = destination(in.operands[0]);
            XCUDA_SIM_LANES(active)
            {
                std::uint32_t x = static_cast<std::uint32_t>(a.p[a.stride * l]);
                bool nan = (x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu);
                d[l] = nan ? 0x7fffffffu : ((x & 0x7f800000u) == 0x7f800000u ? x : (x + 0x1000u) & 0xffffe000u);
            }
            return;
        }
        if (active != 0xffffffffu)
        {
            throw sim_error(sim_error::kind::illegal_instruction,
                            "kernel '" + m_launch.kernel + "', warp " + std::to_string(m_warp) + ": '" + in.text +
                                "' reached by lanes " + hex(active) + " only; a matrix operation (.sync.aligned) needs "
                                "all 32 lanes of the warp at the same instruction, at " + where(in));
        }
        switch (in.var)
        {
        case variant::ldmatrix: load_matrices(in); return;
        case variant::wmma_load:
        case variant::wmma_store: move_fragment(in); return;
        default: multiply_fragments(in); return;
        }
    }

    // The registers of a fragment operand: a vector, or one register.
    static unsigned fragment_registers(const operand& o, const std::int32_t*& regs)
    {
        regs = o.what == operand::kind::vector ? o.regs : &o.reg;
        return o.what == operand::kind::vector ? o.count : 1;
    }

    // wmma.load / wmma.store: each lane's elements from or to memory at [p + (row * stride + col) * size]
    // (col-major: col * stride + row), in the simulator's wmma layout.
    void warp_interpreter::move_fragment(const instruction& in)
    {
        const matrix_shape& s = in.shape;
        const bool load = in.var == variant::wmma_load;
        const operand& fragment = in.operands[load ? 0 : 1];
        const operand& at = in.operands[load ? 1 : 0];
        const char role = s.role;
        const unsigned rows = role == 'b' ? s.k : s.m, cols = role == 'a' ? s.k : s.n;
        const unsigned width = bits_of(s.a), per_register = 32 / width, unique = rows * cols / 32;
        const std::int32_t* regs;
        const unsigned count = fragment_registers(fragment, regs) * per_register;
        source stride = in.operand_count == 3 ? fetch(in.operands[2], 0) : source{nullptr, 0};
        for (unsigned l = 0; l < 32; ++l)
        {
            std::uint64_t ld = stride.p ? stride.p[stride.stride * l] & 0xffffffffu : (s.column ? rows : cols);
            // The programming guide's rules for load_matrix_sync/store_matrix_sync: a 256-bit aligned pointer, a
            // stride of a multiple of 16 bytes.
            std::uint64_t base = at.value + (at.reg >= 0 ? m_registers[static_cast<std::size_t>(at.reg) * 32 + l] : 0);
            if (base % 32 != 0 || ld * (width / 8) % 16 != 0)
            {
                fault(in, l, "the matrix at " + hex(base) + " with a stride of " + std::to_string(ld) + " elements: " +
                                 (base % 32 != 0 ? "the pointer is not 256-bit (32-byte) aligned" : "the stride is not a multiple of 16 bytes") +
                                 " (wmma::load_matrix_sync / store_matrix_sync need both)");
            }
            for (unsigned i = 0; i < count; ++i)
            {
                unsigned e = l * unique + i % unique, row = e / cols, col = e % cols;
                std::uint64_t offset = (s.column ? col * ld + row : row * ld + col) * (width / 8);
                std::uint64_t& r = m_registers[static_cast<std::size_t>(regs[i / per_register]) * 32 + l];
                const unsigned shift = (i % per_register) * width;
                const std::uint64_t mask = ((std::uint64_t{1} << width) - 1) << shift;
                operand element = at;
                element.value += offset;
                std::uint8_t* p = address(in, element, l, width / 8, !load);
                std::uint64_t v = 0;
                if (load)
                {
                    std::memcpy(&v, p, width / 8);
                    r = (i % per_register == 0 ? 0 : r & ~mask) | (v << shift);
                }
                else
                {
                    v = (r & mask) >> shift;
                    std::memcpy(p, &v, width / 8);
                }
            }
        }
    }

    // wmma.mma and mma.sync: D = A B + C over the warp's fragments.
    void warp_interpreter::multiply_fragments(const instruction& in)
    {
        const matrix_shape& s = in.shape;
        const bool wmma = in.var == variant::wmma_mma;
        const unsigned m = s.m, n = s.n, k = s.k;
        std::vector<double> a(m * k), b(k * n), c(m * n);
        auto gather = [&](const operand& o, char which, char type, std::vector<double>& matrix, unsigned rows, unsigned cols) {
            const std::int32_t* regs;
            const unsigned width = bits_of(type), per_register = 32 / width, unique = rows * cols / 32;
            const unsigned count = std::min(fragment_registers(o, regs) * per_register, wmma ? unique : 1024u);
            for (unsigned l = 0; l < 32; ++l)
            {
                for (unsigned i = 0; i < count; ++i)
                {
                    unsigned row, col;
                    if (wmma)
                    {
                        row = (l * unique + i) / cols;
                        col = (l * unique + i) % cols;
                    }
                    else
                    {
                        mma_position(s, which, l, i, row, col);
                    }
                    std::uint64_t r = m_registers[static_cast<std::size_t>(regs[i / per_register]) * 32 + l];
                    std::uint32_t element = static_cast<std::uint32_t>((r >> ((i % per_register) * width)) &
                                                                       ((std::uint64_t{1} << width) - 1));
                    matrix[row * cols + col] = element_value(type, element);
                }
            }
        };
        gather(in.operands[1], 'a', s.a, a, m, k);
        gather(in.operands[2], 'b', s.b, b, k, n);
        gather(in.operands[3], 'c', s.c, c, m, n);
        std::vector<std::uint32_t> d(m * n);
        for (unsigned row = 0; row < m; ++row)
        {
            for (unsigned col = 0; col < n; ++col)
            {
                double sum = c[row * n + col];
                for (unsigned j = 0; j < k; ++j)
                {
                    sum += a[row * k + j] * b[j * n + col];
                }
                d[row * n + col] = element_bits(s.d, sum, s.satfinite);
            }
        }
        // Scatter D as C is laid out.
        const std::int32_t* regs;
        const unsigned width = bits_of(s.d), per_register = 32 / width, unique = m * n / 32;
        const unsigned count = fragment_registers(in.operands[0], regs) * per_register;
        for (unsigned l = 0; l < 32; ++l)
        {
            for (unsigned i = 0; i < count; ++i)
            {
                unsigned row, col;
                if (wmma)
                {
                    row = (l * unique + i % unique) / n;
                    col = (l * unique + i % unique) % n;
                }
                else
                {
                    mma_position(s, 'c', l, i, row, col);
                }
                std::uint64_t& r = m_registers[static_cast<std::size_t>(regs[i / per_register]) * 32 + l];
                const unsigned shift = (i % per_register) * width;
                const std::uint64_t mask = ((std::uint64_t{1} << width) - 1) << shift;
                r = (i % per_register == 0 ? 0 : r & ~mask) | (static_cast<std::uint64_t>(d[row * n + col]) << shift);
            }
        }
    }

    // ldmatrix: lane 8 j + r gives the address of row r of matrix j (16 bytes: eight b16 elements); lane l then
    // holds, in register j, elements (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1) of matrix j (.trans: of its
    // transpose), the first in the low half.
    void warp_interpreter::load_matrices(const instruction& in)
    {
        const unsigned matrices = in.shape.m;
        std::uint16_t rows[4][8][8];
        for (unsigned j = 0; j < matrices; ++j)
        {
            for (unsigned r = 0; r < 8; ++r)
            {
                std::memcpy(rows[j][r], address(in, in.operands[1], j * 8 + r, 16, false), 16);
            }
        }
        const std::int32_t* regs;
        fragment_registers(in.operands[0], regs);
        for (unsigned j = 0; j < matrices; ++j)
        {
            for (unsigned l = 0; l < 32; ++l)
            {
                unsigned r = l / 4, c = 2 * (l % 4);
                std::uint32_t lo = in.shape.transposed ? rows[j][c][r] : rows[j][r][c];
                std::uint32_t hi = in.shape.transposed ? rows[j][c + 1][r] : rows[j][r][c + 1];
                m_registers[static_cast<std::size_t>(regs[j]) * 32 + l] = lo | hi << 16;
            }
        }
    }
}
