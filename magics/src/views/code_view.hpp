#pragma once
// Views of PTX and SASS for the notebook: highlighted listings, the cell's source side by side with
// what each of its lines became, the same as plain text, and a diff of two listings.
//
// Pure functions: text in, text out, no state, safe from any thread. HTML output is one element
// (a <div>) that is also well-formed XML: every tag closed, attributes quoted, text escaped, no named
// entities beyond XML's five, script bodies in CDATA; invalid UTF-8 and control characters in the
// input become U+FFFD, because Jupyter's JSON messages cannot carry them. Plain-text output gets
// the same UTF-8 repair.

#include <map>
#include <string>
#include <utility>

#include "cell_lines.hpp"
#include "code_listing.hpp"

namespace xcuda
{
    class code_view
    {
    public:
        // <div class="xcuda-code"><style>..</style><pre class="xcuda-ptx">..</pre></div>, with spans
        // of class "dir" (directives: .reg .param .entry .loc, also type operands like .f32),
        // "op" (opcode with its suffixes: ld.global.f32, @%p1 bra -> "bra"), "reg" (%r1 %rd2 %f3
        // %p1 %tid.x %ctaid.x and guards @%p1), "num", "lbl" ($L__BB0_2), "cmt", "str".
        static std::string highlight_ptx_html(const std::string& ptx);

        // Same for SASS (class "xcuda-sass"): "addr" (/*0040*/), "op" (IMAD.WIDE.U32), "reg" (R0 RZ
        // UR4 P0 PT B0 SR_TID.X and guards @!P0), "cb" (constant bank c[0x0][0x160]), "num", "lbl"
        // (`(.L_x_1), .L_x_1:), "dir" (.section .type), "cmt".
        static std::string highlight_sass_html(const std::string& sass);

        // Two columns in <div class="xcuda-sbs" id="xcuda-sbs-...">: the numbered lines of the cell
        // and the listing's non-blank lines (highlighted in the listing's dialect). Every line is a
        // <div class="xl ..." data-line="N"> (N = 0: no source line). A source line that owns
        // instructions, and those instructions, share the class "xc-K" (K = 0..11, one of twelve
        // light colours, cycling in order of source line) so the pairing shows without script; an
        // inline script (event delegation on the container) outlines a line and its instructions on
        // hover and pins them on click, and a CSS :has() rule does the hover where scripts do not run.
        // notes (a profile's per-line figures: source line -> (text, share 0..1)) are shown at the end of
        // their source lines, with a bar under the line number as long as the share.
        // lines: where the source sits in the editor; the numbers shown are the editor's (notes and
        // data-line stay keyed by the source's own lines, as the listing's line information counts them).
        static std::string side_by_side_html(const std::string& source, const code_listing& listing,
                                             const std::string& title,
                                             const std::map<int, std::pair<std::string, double>>& notes = {},
                                             const cell_lines& lines = cell_lines());

        // For each source line that owns instructions, in source order:
        //    "   3 | out[i] = a * x[i] + y[i];" then its instructions, trimmed, indented by 8 spaces;
        // then "(no source line)" with the rest. A listing of several functions gets one such block per
        // function under "== NAME ==" (template instantiations share source lines).
        // With notes, a source line's note follows it in brackets: "  11 | out[i] = ...;  [86% of ...]".
        static std::string grouped_text(const std::string& source, const code_listing& listing,
                                        const std::map<int, std::pair<std::string, double>>& notes = {},
                                        const cell_lines& lines = cell_lines());

        // The PTX with the source line each run of instructions comes from written above it as a comment
        // ("//    5 | out[i] = a * x[i];", the editor's number): what %%cuda --ptx shows. PTX without .loc
        // (no line information) comes back as it is.
        static std::string annotated_ptx(const std::string& ptx, const std::string& source,
                                         const cell_lines& lines = cell_lines());

        // Diff of two listings' instructions: the longest common subsequence of normalised texts.
        // Normalisation: SASS addresses dropped, whitespace collapsed, register numbers replaced
        // (%f12 -> %f#, %rd3 -> %rd#, R12 -> R#, UR4 -> UR#, P0 -> P#; RZ, PT, %tid.x kept), label
        // numbers replaced ($L__BB0_2 -> $L__BB#, .L_x_3 -> .L_x_#) and "<kernel>_param_N" ->
        // "param_N", so register allocation and kernel names do not count as changes. Between two
        // matches, removed and added instructions are paired row by row as "changed"; the rest are
        // "removed" (only left) or "added" (only right). Past 4M LCS cells (after trimming the common
        // head and tail) the middle is shown as all changed instead of aligned.
        // Summary line: "12 instructions left, 9 right; 5 only left, 2 only right" (counts of
        // instructions not matched on each side, changed ones included).
        static std::string compare_html(const std::string& left_title, const code_listing& left,
                                        const std::string& right_title, const code_listing& right);

        // The same diff as text: the titles, the summary, then one row per aligned pair:
        // "  left | right" (same), "- left |" (removed), "+      | right" (added),
        // "~ left | right" (changed).
        static std::string compare_text(const std::string& left_title, const code_listing& left,
                                        const std::string& right_title, const code_listing& right);
    };
}
