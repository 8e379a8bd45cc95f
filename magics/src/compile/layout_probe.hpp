#pragma once
// The compiler's word on the struct layouts the signature reader worked out (issue 25, items 4 and 5).
//
// The reader computes each struct's size, alignment and field offsets from the source by the ABI rules;
// where it is wrong (a type it misread, a pragma or attribute it does not know), a launch would pass
// bytes in the wrong places. So for every kernel parameter that is a struct by value or a pointer to
// one, and for every by-value parameter the reader could not size (a class template instance such as
// Matrix<float>), the cell is compiled with a probe appended: per parameter, an extern "C" __device__
// array holding sizeof, alignof and the offset of every field the reader placed (nested fields too),
// the type named through the kernel's own declaration (decltype(kernel)), so namespaces, aliases and
// template instances need no spelling. NVRTC evaluates it at compile time (__INTADDR__ makes the
// offsets constants) and writes the values as the array's initializer in the PTX, read back here
// without a GPU. A mismatch refuses the parameter (kernel_parameter::refusal) naming the type and both
// numbers; a size the reader lacked is taken from the compiler.
//
// No parameter needing it, no probe: cells without structs compile as before. A plain value: built per
// compile, on the caller's thread.

#include <cstddef>
#include <string>
#include <vector>

#include "kernel_signature.hpp"

namespace xcuda
{
    class layout_probe
    {
    public:
        explicit layout_probe(const std::vector<kernel_signature>& signatures);

        bool empty() const noexcept { return m_entries.empty(); }
        // The text to append to the cell (starting on a line of its own).
        const std::string& source() const noexcept { return m_source; }
        // Compares the values in `ptx` with what the reader computed, refusing the parameters where they
        // differ and sizing those the reader could not. Returns how many parameters it found in the PTX.
        std::size_t apply(const std::string& ptx, std::vector<kernel_signature>& signatures) const;

        // The probe's values in PTX text: `.global .align 8 .b8 name[24] = {32, 0, ...};` (bytes,
        // little-endian, trailing zeros left out) or `.u64 name[3] = {...}`; empty if absent.
        static std::vector<unsigned long long> read_array(const std::string& ptx, const std::string& name);

    private:
        struct entry
        {
            std::size_t kernel = 0;
            std::size_t parameter = 0;
            std::string type;                  // as the parameter spells it, for messages
            std::vector<std::string> labels;   // "sizeof", "alignof", "offsetof(x)", "offsetof(in.b)"
            std::vector<std::size_t> expected; // the reader's values; empty: size only (unknown to it)
        };

        std::vector<entry> m_entries;
        std::string m_source;
    };
}
