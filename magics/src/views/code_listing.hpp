#pragma once
// A PTX or SASS listing read line by line, each line tagged with what it is, the function it belongs
// to and the line of the %%cuda cell it came from.
//
// The course shows what each CUDA C++ line becomes; the compilers say so only through line-info
// directives (PTX `.loc`, nvdisasm `//## File ..., line N` comments), which sit between the
// instructions and apply to everything after them. This class turns that running state into a field
// of every line so that views can group, colour and diff without knowing either syntax.
//
// Parsing is pure C++ over text (no CUDA), never throws on malformed input (unknown lines become
// comments, unreadable line numbers become 0) and keeps no state between calls; a code_listing is
// an immutable value, safe to share between threads.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace xcuda
{
    struct code_line
    {
        enum kind_t
        {
            instruction,  // something the GPU executes: PTX statement, SASS instruction
            label,        // "$L__BB0_2:", ".L_x_1:"
            directive,    // ".reg", ".loc", ".param", "{", "}", SASS ".section", ".byte" data
            comment,      // "//" lines, and text neither parser recognises
            blank,
            header        // the line that opens a function: ".visible .entry saxpy(", "Function : saxpy"
        };

        std::string text;         // the line as written, without its line break (see from_ptx for
                                  // multi-line PTX statements and from_sass for cuobjdump encodings)
        kind_t kind = comment;
        int source_line = 0;      // 1-based line of the cell; 0: none known (only set on instructions)
        std::string function;     // the .entry/.func (PTX) or kernel section (SASS); "" outside any
    };

    class code_listing
    {
    public:
        enum class dialect
        {
            ptx,
            sass
        };

        code_listing() = default;
        code_listing(dialect language, std::vector<code_line> lines);

        // NVRTC PTX. Each instruction takes the line of the last `.loc` whose file is the cell:
        // a `.file` whose name is source_file or ends in "/" + source_file (NVRTC 13 writes the
        // absolute path "<cwd>/cell", and writes the `.file` table after the code, so it is read
        // first). A `.loc` in another file (a header) maps to 0, or to the cell line of its
        // `inlined_at` when that names the cell. A statement split over several lines (NVRTC's
        // `call.uni (retval0),\n_Z6thricef,\n(\nparam0\n);`) becomes one instruction line whose text
        // is the pieces joined by single spaces, so that counts and diffs see one call.
        static code_listing from_ptx(const std::string& ptx, const std::string& source_file = "cell");

        // nvdisasm output (`nvdisasm -c -g` or `-c --print-line-info`; without -c the data sections
        // come too, as directives outside any function) or `cuobjdump -sass` (no line info: all 0).
        // The function of a line is the kernel whose `.text.NAME` section (or `Function : NAME`
        // block) holds it: subroutines the kernel calls (`$use$_Z6thricef:`) are labels inside it,
        // because that code is the kernel's own copy. cuobjdump's `/* 0x... */` encoding words are
        // dropped: they say nothing about the source and would double every instruction.
        static code_listing from_sass(const std::string& nvdisasm_output,
                                      const std::string& source_file = "cell");

        dialect language() const { return language_; }
        const std::vector<code_line>& lines() const { return lines_; }
        std::size_t size() const { return lines_.size(); }
        bool empty() const { return lines_.empty(); }
        const code_line& operator[](std::size_t i) const { return lines_[i]; }
        std::vector<code_line>::const_iterator begin() const { return lines_.begin(); }
        std::vector<code_line>::const_iterator end() const { return lines_.end(); }

        std::size_t instruction_count() const;


        // Function names in order of first appearance, each once.
        std::vector<std::string> functions() const;

        // The lines of one function, same dialect; empty when there is no such function.
        code_listing only(const std::string& function) const;

        // Source line -> indices (into lines()) of the instructions it owns, in listing order.
        // Instructions with no source line are under key 0.
        std::map<int, std::vector<std::size_t>> by_source_line() const;

    private:
        dialect language_ = dialect::ptx;
        std::vector<code_line> lines_;
    };
}
