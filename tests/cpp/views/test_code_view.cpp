// Behaviour of code_listing (PTX and SASS text -> lines mapped to the cell's source lines) and of
// code_view (highlighted HTML, side by side, grouped text, diffs).
//
// The PTX samples are real NVRTC 13.0 output (program name "cell", --gpu-architecture=compute_75
// --generate-line-info unless stated). The SASS samples are real nvdisasm 13.0 `-c -g` and
// `cuobjdump -sass` output for an sm_90 cubin built by nvcc -lineinfo from a file named "cell"
// (runs of NOP padding shortened). Those real samples, and the cells they came from, are files under
// fixtures/ read with fixture(); fixtures/README.md says what each one is. Small handwritten samples,
// for the shapes the real ones did not show, stay inline in the tests.
// Every HTML view is checked with a small XML well-formedness checker, since notebooks and the
// course's tests parse it as XML.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "code_listing.hpp"
#include "code_view.hpp"
#include "disassembler.hpp"
#include "fixture.hpp"

using xcuda::code_line;
using xcuda::code_listing;
using xcuda::code_view;
using xcuda_tests::fixture;

namespace
{
    // An opcode's span, with or without its hover note: <span class="op"( title="...")?>OPCODE</span>.
    bool has_op(const std::string& html, const std::string& opcode)
    {
        const std::string end = ">" + opcode + "</span>";
        for (std::size_t at = html.find("<span class=\"op\""); at != std::string::npos;
             at = html.find("<span class=\"op\"", at + 1))
        {
            std::size_t close = html.find('>', at + 17);
            if (close != std::string::npos && html.compare(close, end.size(), end) == 0)
            {
                return true;
            }
        }
        return false;
    }

    // Minimal XML 1.0 well-formedness: one root element, balanced and properly nested tags, quoted
    // attributes, only XML's own entities and numeric references, comments and CDATA sections.
    class xml_checker
    {
    public:
        static bool well_formed(const std::string& s, std::string& why)
        {
            std::vector<std::string> open;
            int roots = 0;
            std::size_t i = 0;
            while (i < s.size())
            {
                char c = s[i];
                if (c == '<')
                {
                    if (s.compare(i, 4, "<!--") == 0)
                    {
                        std::size_t end = s.find("-->", i + 4);
                        if (end == std::string::npos)
                        {
                            return fail(why, "unterminated comment", i);
                        }
                        i = end + 3;
                        continue;
                    }
                    if (s.compare(i, 9, "<![CDATA[") == 0)
                    {
                        if (open.empty())
                        {
                            return fail(why, "CDATA outside the root", i);
                        }
                        std::size_t end = s.find("]]>", i + 9);
                        if (end == std::string::npos)
                        {
                            return fail(why, "unterminated CDATA", i);
                        }
                        i = end + 3;
                        continue;
                    }
                    if (i + 1 < s.size() && s[i + 1] == '/')
                    {
                        std::size_t end = s.find('>', i);
                        if (end == std::string::npos)
                        {
                            return fail(why, "unterminated end tag", i);
                        }
                        std::string name = s.substr(i + 2, end - i - 2);
                        while (!name.empty() && name.back() == ' ')
                        {
                            name.pop_back();
                        }
                        if (open.empty() || open.back() != name)
                        {
                            return fail(why, "mismatched </" + name + ">", i);
                        }
                        open.pop_back();
                        i = end + 1;
                        continue;
                    }
                    std::size_t k = i + 1;
                    std::size_t name_start = k;
                    while (k < s.size() && (std::isalnum(static_cast<unsigned char>(s[k])) || s[k] == '-'
                                            || s[k] == '_' || s[k] == ':'))
                    {
                        ++k;
                    }
                    if (k == name_start)
                    {
                        return fail(why, "bad tag name", i);
                    }
                    std::string name = s.substr(name_start, k - name_start);
                    bool self_closing = false;
                    while (true)
                    {
                        while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k])))
                        {
                            ++k;
                        }
                        if (k >= s.size())
                        {
                            return fail(why, "unterminated tag", i);
                        }
                        if (s[k] == '>')
                        {
                            ++k;
                            break;
                        }
                        if (s.compare(k, 2, "/>") == 0)
                        {
                            k += 2;
                            self_closing = true;
                            break;
                        }
                        std::size_t attr_start = k;
                        while (k < s.size() && (std::isalnum(static_cast<unsigned char>(s[k])) || s[k] == '-'
                                                || s[k] == '_' || s[k] == ':'))
                        {
                            ++k;
                        }
                        if (k == attr_start || k >= s.size() || s[k] != '=')
                        {
                            return fail(why, "attribute without =", k);
                        }
                        ++k;
                        if (k >= s.size() || (s[k] != '"' && s[k] != '\''))
                        {
                            return fail(why, "unquoted attribute", k);
                        }
                        char quote = s[k];
                        std::size_t end = s.find(quote, k + 1);
                        if (end == std::string::npos)
                        {
                            return fail(why, "unterminated attribute", k);
                        }
                        std::string value = s.substr(k + 1, end - k - 1);
                        if (value.find('<') != std::string::npos || !entities_ok(value, why))
                        {
                            return fail(why, "bad attribute value " + value, k);
                        }
                        k = end + 1;
                    }
                    if (open.empty())
                    {
                        ++roots;
                    }
                    if (!self_closing)
                    {
                        open.push_back(name);
                    }
                    i = k;
                    continue;
                }
                std::size_t next = s.find('<', i);
                std::string text = s.substr(i, next == std::string::npos ? std::string::npos : next - i);
                if (open.empty() && text.find_first_not_of(" \t\r\n") != std::string::npos)
                {
                    return fail(why, "text outside the root", i);
                }
                if (!entities_ok(text, why))
                {
                    return fail(why, "bad entity", i);
                }
                i = next == std::string::npos ? s.size() : next;
            }
            if (!open.empty())
            {
                return fail(why, "unclosed <" + open.back() + ">", s.size());
            }
            if (roots != 1)
            {
                return fail(why, std::to_string(roots) + " root elements", 0);
            }
            return true;
        }

    private:
        static bool fail(std::string& why, const std::string& what, std::size_t at)
        {
            why = what + " at " + std::to_string(at);
            return false;
        }

        static bool entities_ok(const std::string& text, std::string& why)
        {
            std::size_t i = 0;
            while ((i = text.find('&', i)) != std::string::npos)
            {
                std::size_t end = text.find(';', i);
                if (end == std::string::npos)
                {
                    why = "bare &";
                    return false;
                }
                std::string name = text.substr(i + 1, end - i - 1);
                bool ok = name == "amp" || name == "lt" || name == "gt" || name == "quot" || name == "apos";
                if (!ok && name.size() > 1 && name[0] == '#')
                {
                    bool hex = name[1] == 'x';
                    std::string digits = name.substr(hex ? 2 : 1);
                    ok = !digits.empty();
                    for (char c : digits)
                    {
                        ok = ok && (hex ? std::isxdigit(static_cast<unsigned char>(c)) : std::isdigit(static_cast<unsigned char>(c)));
                    }
                }
                if (!ok)
                {
                    why = "unknown entity &" + name + ";";
                    return false;
                }
                i = end + 1;
            }
            return true;
        }
    };

    ::testing::AssertionResult is_xml(const std::string& html)
    {
        std::string why;
        if (xml_checker::well_formed(html, why))
        {
            return ::testing::AssertionSuccess();
        }
        return ::testing::AssertionFailure() << "not well-formed XML: " << why;
    }

    bool valid_utf8(const std::string& s)
    {
        std::size_t i = 0;
        while (i < s.size())
        {
            unsigned char c = static_cast<unsigned char>(s[i]);
            std::size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
            if (len == 0 || i + len > s.size())
            {
                return false;
            }
            for (std::size_t k = 1; k < len; ++k)
            {
                if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80)
                {
                    return false;
                }
            }
            i += len;
        }
        return true;
    }

    // The instructions of a listing whose trimmed text starts with `opcode`.
    std::vector<code_line> instructions_starting(const code_listing& listing, const std::string& opcode)
    {
        std::vector<code_line> out;
        for (const code_line& l : listing)
        {
            std::size_t first = l.text.find_first_not_of(" \t");
            if (l.kind == code_line::instruction && first != std::string::npos
                && l.text.compare(first, opcode.size(), opcode) == 0)
            {
                out.push_back(l);
            }
        }
        return out;
    }

    // SASS instructions containing `opcode` as the word after the address (and guard).
    std::vector<code_line> sass_instructions(const code_listing& listing, const std::string& opcode)
    {
        std::vector<code_line> out;
        for (const code_line& l : listing)
        {
            if (l.kind == code_line::instruction && l.text.find(" " + opcode + " ") != std::string::npos)
            {
                out.push_back(l);
            }
        }
        return out;
    }

    std::vector<int> lines_of(const std::vector<code_line>& lines)
    {
        std::vector<int> out;
        for (const code_line& l : lines)
        {
            out.push_back(l.source_line);
        }
        return out;
    }
}

// ----- PTX mapping --------------------------------------------------------------------------------

TEST(code_listing_ptx, one_line_saxpy_body_maps_every_computation_to_line_two)
{
    const code_listing listing = code_listing::from_ptx(fixture("saxpy_one_line.ptx"));
    EXPECT_EQ(listing.functions(), std::vector<std::string>{"saxpy"});
    EXPECT_EQ(lines_of(instructions_starting(listing, "ld.global.f32")), (std::vector<int>{2, 2}));
    EXPECT_EQ(lines_of(instructions_starting(listing, "fma.rn.f32")), (std::vector<int>{2}));
    EXPECT_EQ(lines_of(instructions_starting(listing, "st.global.f32")), (std::vector<int>{2}));
    EXPECT_EQ(lines_of(instructions_starting(listing, "setp.ge.u64")), (std::vector<int>{2}));
}

TEST(code_listing_ptx, loads_fma_and_store_land_on_the_assignment_line)
{
    const code_listing listing = code_listing::from_ptx(fixture("saxpy.ptx"));
    EXPECT_EQ(lines_of(instructions_starting(listing, "ld.global.f32")), (std::vector<int>{5, 5}));
    EXPECT_EQ(lines_of(instructions_starting(listing, "fma.rn.f32")), (std::vector<int>{5}));
    EXPECT_EQ(lines_of(instructions_starting(listing, "st.global.f32")), (std::vector<int>{5}));
    EXPECT_EQ(lines_of(instructions_starting(listing, "setp.ge.u64")), (std::vector<int>{4}));
    EXPECT_EQ(lines_of(instructions_starting(listing, "mul.wide.u32")), (std::vector<int>{3}));
    EXPECT_EQ(lines_of(instructions_starting(listing, "ret")), (std::vector<int>{6}));
    // ld.param comes before any statement: NVRTC puts it on the function's opening line.
    EXPECT_EQ(lines_of(instructions_starting(listing, "ld.param.f32")), (std::vector<int>{1}));
}

TEST(code_listing_ptx, every_line_is_classified_and_keeps_its_text)
{
    const code_listing listing = code_listing::from_ptx(fixture("saxpy.ptx"));
    std::size_t headers = 0;
    std::size_t labels = 0;
    for (const code_line& l : listing)
    {
        headers += l.kind == code_line::header;
        labels += l.kind == code_line::label;
        if (l.kind != code_line::instruction)
        {
            EXPECT_EQ(l.source_line, 0) << l.text;
        }
    }
    EXPECT_EQ(headers, 1u);
    EXPECT_EQ(labels, 1u);
    EXPECT_EQ(listing.instruction_count(), 25u);
    EXPECT_EQ(listing[0].kind, code_line::comment);
    EXPECT_EQ(listing.size(), 70u);  // one code_line per PTX line: nothing here spans lines
}

TEST(code_listing_ptx, cell_file_is_recognised_by_path_suffix_and_other_names_map_nothing)
{
    // NVRTC 13 writes `.file 1 "<cwd>/cell"` after the code.
    const code_listing other = code_listing::from_ptx(fixture("saxpy.ptx"), "kernel.cu");
    for (const code_line& l : other)
    {
        EXPECT_EQ(l.source_line, 0);
    }
    const code_listing cell = code_listing::from_ptx(fixture("saxpy.ptx"), "cell");
    EXPECT_EQ(cell.by_source_line().count(0), 0u);
}

TEST(code_listing_ptx, ptx_without_line_info_maps_everything_to_zero)
{
    const code_listing listing = code_listing::from_ptx(fixture("saxpy_no_line_info.ptx"));
    const auto groups = listing.by_source_line();
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups.begin()->first, 0);
    EXPECT_EQ(groups.begin()->second.size(), listing.instruction_count());
    EXPECT_EQ(listing.functions(), std::vector<std::string>{"saxpy"});
}

TEST(code_listing_ptx, two_kernels_each_get_their_own_function)
{
    const code_listing listing = code_listing::from_ptx(fixture("two_kernels.ptx"));
    EXPECT_EQ(listing.functions(), (std::vector<std::string>{"fill", "square"}));
    const code_listing square = listing.only("square");
    EXPECT_EQ(lines_of(instructions_starting(square, "mul.f32")), (std::vector<int>{12}));
    EXPECT_TRUE(instructions_starting(square, "st.global.f32").size() == 1u);
    const code_listing fill = listing.only("fill");
    EXPECT_EQ(lines_of(instructions_starting(fill, "st.global.f32")), (std::vector<int>{5}));
    EXPECT_TRUE(instructions_starting(fill, "mul.f32").empty());
    EXPECT_EQ(fill.instruction_count() + square.instruction_count(), listing.instruction_count());
    // The .file line after the last body belongs to no function.
    EXPECT_EQ(listing[listing.size() - 1].function, "");
}

TEST(code_listing_ptx, template_instantiations_are_two_functions_on_the_same_source_lines)
{
    const code_listing listing = code_listing::from_ptx(fixture("scale_template.ptx"));
    EXPECT_EQ(listing.functions(), (std::vector<std::string>{"_Z5scaleIfEvPT_S0_i", "_Z5scaleIdEvPT_S0_i"}));
    EXPECT_EQ(lines_of(instructions_starting(listing.only("_Z5scaleIfEvPT_S0_i"), "mul.f32")), (std::vector<int>{6}));
    EXPECT_EQ(lines_of(instructions_starting(listing.only("_Z5scaleIdEvPT_S0_i"), "mul.f64")), (std::vector<int>{6}));
}

TEST(code_listing_ptx, loop_with_shared_memory_maps_loads_and_barriers)
{
    const code_listing listing = code_listing::from_ptx(fixture("block_sum.ptx"));
    EXPECT_EQ(lines_of(instructions_starting(listing, "bar.sync")), (std::vector<int>{7, 11}));
    EXPECT_EQ(lines_of(instructions_starting(listing, "ld.shared.f32")), (std::vector<int>{10, 10, 14}));
    EXPECT_EQ(lines_of(instructions_starting(listing, "st.shared.f32")).front(), 6);
    EXPECT_GE(std::count_if(listing.begin(), listing.end(), [](const code_line& l) { return l.kind == code_line::label; }), 2);
}

TEST(code_listing_ptx, header_code_maps_to_zero_and_cell_code_uses_the_cells_file_number)
{
    // helper.h is .file 1 and the cell .file 2 here: numbering is not fixed.
    const code_listing listing = code_listing::from_ptx(fixture("header_function.ptx"));
    EXPECT_EQ(listing.functions(), (std::vector<std::string>{"_Z4cubef", "k"}));
    for (const code_line& l : listing.only("_Z4cubef"))
    {
        EXPECT_EQ(l.source_line, 0) << l.text;
    }
    EXPECT_EQ(lines_of(instructions_starting(listing.only("k"), "st.global.f32")), (std::vector<int>{6}));
}

TEST(code_listing_ptx, inlined_header_code_maps_to_the_cell_line_that_called_it)
{
    const std::string ptx = ".visible .entry k(\n.param .u64 k_param_0\n)\n{\n"
                            "\t.loc\t2 4 5\n\tmov.u32 \t%r1, %tid.x;\n"
                            "\t.loc\t1 3 12, function_name $L__info_string0, inlined_at 2 6 9\n"
                            "\tmul.f32 \t%f2, %f1, 0f40000000;\n"
                            "\t.loc\t1 7 1, function_name $L__info_string1, inlined_at 1 3 12\n"
                            "\tadd.f32 \t%f3, %f2, %f2;\n"
                            "\tret;\n}\n"
                            "\t.file\t1 \"/usr/include/helper.h\"\n\t.file\t2 \"/tmp/cell\"\n";
    const code_listing listing = code_listing::from_ptx(ptx);
    EXPECT_EQ(lines_of(instructions_starting(listing, "mov.u32")), (std::vector<int>{4}));
    EXPECT_EQ(lines_of(instructions_starting(listing, "mul.f32")), (std::vector<int>{6}));
    // Inlined twice over, both in the header: only the innermost call site is written, so no cell line.
    EXPECT_EQ(lines_of(instructions_starting(listing, "add.f32")), (std::vector<int>{0}));
}

TEST(code_listing_ptx, a_call_split_over_lines_is_one_instruction_and_callee_is_its_own_function)
{
    const code_listing listing = code_listing::from_ptx(fixture("noinline_call.ptx"));
    EXPECT_EQ(listing.functions(), (std::vector<std::string>{"_Z6thricef", "use"}));
    const auto calls = instructions_starting(listing, "call.uni");
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_NE(calls[0].text.find("call.uni (retval0), _Z6thricef, ( param0 );"), std::string::npos) << calls[0].text;
    EXPECT_EQ(calls[0].source_line, 13);
    EXPECT_EQ(calls[0].function, "use");
    EXPECT_EQ(lines_of(instructions_starting(listing.only("_Z6thricef"), "mul.f32")), (std::vector<int>{7}));
}

TEST(code_listing_ptx, by_source_line_indexes_instructions_in_listing_order)
{
    const code_listing listing = code_listing::from_ptx(fixture("saxpy.ptx"));
    const auto groups = listing.by_source_line();
    std::vector<int> keys;
    for (const auto& g : groups)
    {
        keys.push_back(g.first);
        for (std::size_t i = 0; i < g.second.size(); ++i)
        {
            EXPECT_EQ(listing[g.second[i]].kind, code_line::instruction);
            EXPECT_EQ(listing[g.second[i]].source_line, g.first);
            if (i > 0)
            {
                EXPECT_LT(g.second[i - 1], g.second[i]);
            }
        }
    }
    EXPECT_EQ(keys, (std::vector<int>{1, 3, 4, 5, 6}));
    EXPECT_EQ(groups.at(5).size(), 8u);
}

TEST(code_listing_ptx, only_an_unknown_function_is_empty)
{
    const code_listing listing = code_listing::from_ptx(fixture("saxpy.ptx"));
    EXPECT_TRUE(listing.only("no_such_kernel").empty());
    EXPECT_TRUE(listing.only("").empty());
    EXPECT_EQ(listing.only("saxpy").language(), code_listing::dialect::ptx);
}

// ----- SASS mapping -------------------------------------------------------------------------------

TEST(code_listing_sass, nvdisasm_sections_become_functions_with_line_info)
{
    const code_listing listing = code_listing::from_sass(fixture("use_scale_saxpy_nvdisasm.sass"));
    EXPECT_EQ(listing.language(), code_listing::dialect::sass);
    EXPECT_EQ(listing.functions(), (std::vector<std::string>{"use", "_Z5scaleIfEvPT_S0_i", "saxpy"}));
    const code_listing saxpy = listing.only("saxpy");
    EXPECT_EQ(lines_of(sass_instructions(saxpy, "LDG.E")), (std::vector<int>{5, 5}));
    EXPECT_EQ(lines_of(sass_instructions(saxpy, "FFMA")), (std::vector<int>{5}));
    EXPECT_EQ(lines_of(sass_instructions(saxpy, "STG.E")), (std::vector<int>{5}));
    EXPECT_EQ(lines_of(sass_instructions(saxpy, "S2R")), (std::vector<int>{3}));
    EXPECT_EQ(lines_of(sass_instructions(saxpy, "EXIT")), (std::vector<int>{4, 6}));
    EXPECT_EQ(lines_of(sass_instructions(listing.only("_Z5scaleIfEvPT_S0_i"), "FMUL")), (std::vector<int>{13}));
}

TEST(code_listing_sass, a_subroutine_stays_in_its_kernel_and_libdevice_paths_have_no_line)
{
    const code_listing use = code_listing::from_sass(fixture("use_scale_saxpy_nvdisasm.sass")).only("use");
    // $use$_Z6thricef: the __noinline__ callee, defined on line 16.
    EXPECT_EQ(lines_of(sass_instructions(use, "FMUL")), (std::vector<int>{16}));
    // The sqrt slow path follows it without line info of its own.
    for (const code_line& l : sass_instructions(use, "LOP3.LUT"))
    {
        EXPECT_EQ(l.source_line, 0);
    }
    // sqrtf's fast path is the kernel's own line; the guarded copy in the slow path has none.
    EXPECT_EQ(lines_of(sass_instructions(use, "MUFU.RSQ")), (std::vector<int>{17, 0}));
}

TEST(code_listing_sass, handwritten_listing_with_type_label_and_inlined_line_info)
{
    const std::string sass = "        .type           saxpy,@function\n"
                             "saxpy:\n"
                             "\t//## File \"cell\", line 3\n"
                             "        /*0000*/                   S2R R0, SR_TID.X ;\n"
                             "\t//## File \"/usr/local/cuda/include/helper.h\", line 40 inlined at \"/home/u/cell\", line 5\n"
                             "        /*0010*/                   FMUL R2, R0, 2 ;\n"
                             "\t//## File \"/usr/local/cuda/include/helper.h\", line 41\n"
                             "        /*0020*/                   EXIT ;\n";
    const code_listing listing = code_listing::from_sass(sass);
    EXPECT_EQ(listing.functions(), std::vector<std::string>{"saxpy"});
    EXPECT_EQ(listing[1].kind, code_line::header);
    EXPECT_EQ(lines_of(sass_instructions(listing, "S2R")), (std::vector<int>{3}));
    EXPECT_EQ(lines_of(sass_instructions(listing, "FMUL")), (std::vector<int>{5}));
    EXPECT_EQ(lines_of(sass_instructions(listing, "EXIT")), (std::vector<int>{0}));
}

TEST(code_listing_sass, cuobjdump_output_has_functions_no_line_info_and_no_encoding_words)
{
    const code_listing listing = code_listing::from_sass(fixture("saxpy_cuobjdump.sass"));
    EXPECT_EQ(listing.functions(), std::vector<std::string>{"saxpy"});
    EXPECT_EQ(listing.instruction_count(), 21u);
    for (const code_line& l : listing)
    {
        EXPECT_EQ(l.text.find("/* 0x"), std::string::npos) << l.text;
        EXPECT_EQ(l.source_line, 0);
    }
    const auto ffma = sass_instructions(listing, "IMAD.WIDE.U32");
    ASSERT_EQ(ffma.size(), 1u);
    EXPECT_EQ(ffma[0].text, "        /*0050*/                   IMAD.WIDE.U32 R2, R5, UR4, R2 ;");
}

// ----- highlighting -------------------------------------------------------------------------------

TEST(code_view_highlight, ptx_tokens_get_their_classes_and_the_result_is_xml)
{
    const std::string html = code_view::highlight_ptx_html(fixture("saxpy.ptx") + fixture("noinline_call.ptx"));
    EXPECT_TRUE(is_xml(html));
    EXPECT_NE(html.find("<pre class=\"xcuda-ptx\">"), std::string::npos);
    EXPECT_NE(html.find("<style>"), std::string::npos);
    for (const char* opcode : {"ld.global.f32", "fma.rn.f32", "mad.lo.s32", "setp.ge.u64"})
    {
        EXPECT_TRUE(has_op(html, opcode)) << opcode;
    }
    EXPECT_NE(html.find("<span class=\"reg\">@%p1</span> <span class=\"op\" title=\"bra: branch"), std::string::npos);
    for (const char* fragment :
         {"<span class=\"reg\">%rd10</span>",
          "<span class=\"reg\">%tid.x</span>", "<span class=\"reg\">%ctaid.x</span>", "<span class=\"lbl\">$L__BB0_2</span>",
          "<span class=\"dir\">.reg</span>", "<span class=\"dir\">.loc</span>", "<span class=\"dir\">.entry</span>",
          "<span class=\"num\">0f40400000</span>", "<span class=\"cmt\">// .globl\tsaxpy</span>",
          "<span class=\"str\">&quot;/tmp/cv/cell&quot;</span>"})
    {
        EXPECT_NE(html.find(fragment), std::string::npos) << fragment;
    }
}

TEST(code_view_highlight, sass_tokens_get_their_classes_and_the_result_is_xml)
{
    const std::string html =
        code_view::highlight_sass_html(fixture("use_scale_saxpy_nvdisasm.sass") + fixture("saxpy_cuobjdump.sass"));
    EXPECT_TRUE(is_xml(html));
    EXPECT_NE(html.find("<pre class=\"xcuda-sass\">"), std::string::npos);
    for (const char* fragment :
         {"<span class=\"addr\">/*0040*/</span>", "<span class=\"reg\">R2</span>",
          "<span class=\"reg\">UR4</span>", "<span class=\"reg\">SR_TID.X</span>", "<span class=\"reg\">P0</span>",
          "<span class=\"reg\">@P0</span> <span class=\"op\" title=\"EXIT: ends the thread.\">EXIT</span>",
          "<span class=\"reg\">@!P0</span>",
          "<span class=\"cb\">c[0x0][0x210]</span>", "<span class=\"num\">0x4</span>", "<span class=\"lbl\">`(.L_x_1)</span>",
          "<span class=\"cmt\">//## File &quot;/root/out/cell&quot;, line 5</span>",
          "<span class=\"dir\">.section</span>", "<span class=\"reg\">R2.reuse</span>"})
    {
        EXPECT_NE(html.find(fragment), std::string::npos) << fragment;
    }
    EXPECT_TRUE(has_op(html, "IMAD.WIDE.U32"));
}

TEST(code_view_highlight, opcodes_explain_themselves_on_hover)
{
    const std::string ptx = code_view::highlight_ptx_html(fixture("saxpy.ptx") + fixture("noinline_call.ptx"));
    // The base opcode's note, then each modifier's, in the order written.
    EXPECT_NE(ptx.find("<span class=\"op\" title=\"ld: load from memory into a register. .global: global (device) "
                       "memory. .f32: a 32-bit float.\">ld.global.f32</span>"),
              std::string::npos);
    EXPECT_NE(ptx.find("title=\"fma: fused multiply-add: a * b + c with one rounding. .rn: rounds to nearest even. "
                       ".f32: a 32-bit float.\">fma.rn.f32</span>"),
              std::string::npos);
    // .lo means the low half in mad, an unsigned comparison in setp.
    EXPECT_NE(ptx.find(".lo: the low half of the product. .s32: a signed 32-bit integer.\">mad.lo.s32</span>"),
              std::string::npos);
    EXPECT_NE(code_view::highlight_ptx_html("setp.lo.u32 %p1, %r1, %r2;").find(".lo: unsigned lower."),
              std::string::npos);
    const std::string sass = code_view::highlight_sass_html(fixture("use_scale_saxpy_nvdisasm.sass"));
    EXPECT_NE(sass.find("title=\"IMAD: integer multiply-add (also used for moves and shifts: IMAD.MOV, IMAD.SHL). "
                        ".WIDE: a 64-bit result from 32-bit operands. .U32: unsigned 32-bit.\">IMAD.WIDE.U32</span>"),
              std::string::npos);
    // An opcode without a note keeps the plain span.
    EXPECT_NE(code_view::highlight_sass_html("        /*0000*/                   FOOBAR R1, R2 ;").find(
                  "<span class=\"op\">FOOBAR</span>"),
              std::string::npos);
    EXPECT_TRUE(is_xml(ptx) && is_xml(sass));
}

// ----- side by side -------------------------------------------------------------------------------

TEST(code_view_side_by_side, a_source_line_and_its_instructions_share_a_colour_and_data_line)
{
    const code_listing listing = code_listing::from_ptx(fixture("saxpy.ptx"));
    const std::string html = code_view::side_by_side_html(fixture("saxpy.cu"), listing, "saxpy: PTX");
    EXPECT_TRUE(is_xml(html));
    // Lines owning instructions in order: 1, 3, 4, 5, 6 -> colours 0..4.
    EXPECT_NE(html.find("<div class=\"xl xc-3\" data-line=\"5\"><span class=\"xn\">5</span>"), std::string::npos);
    EXPECT_NE(html.find("<div class=\"xl xc-3\" data-line=\"5\">\t<span class=\"op\" title=\"fma: "), std::string::npos);
    EXPECT_NE(html.find("<div class=\"xl\" data-line=\"2\">"), std::string::npos);  // "{" owns nothing
    EXPECT_NE(html.find("<div class=\"xl\" data-line=\"0\">"), std::string::npos);  // directives
    EXPECT_NE(html.find("<script>//<![CDATA["), std::string::npos);
    EXPECT_NE(html.find("//]]></script>"), std::string::npos);
    EXPECT_NE(html.find(":has(.xl[data-line=\"5\"]:hover)"), std::string::npos);
    EXPECT_NE(html.find("saxpy: PTX"), std::string::npos);
}

TEST(code_view_side_by_side, each_render_gets_its_own_container_id)
{
    const code_listing listing = code_listing::from_ptx(fixture("saxpy.ptx"));
    const std::string first = code_view::side_by_side_html(fixture("saxpy.cu"), listing, "t");
    const std::string second = code_view::side_by_side_html(fixture("saxpy.cu"), listing, "t");
    auto id_of = [](const std::string& html)
    {
        std::size_t at = html.find("id=\"") + 4;
        return html.substr(at, html.find('"', at) - at);
    };
    EXPECT_NE(id_of(first), id_of(second));
    EXPECT_NE(first.find("getElementById(\"" + id_of(first) + "\")"), std::string::npos);
}

TEST(code_view_side_by_side, source_and_title_are_escaped)
{
    const std::string source = "#include <cuda_fp16.h>\nint x = a < b && c > d; // \"q\" 'q'\n\n";
    const code_listing listing = code_listing::from_ptx(fixture("saxpy.ptx"));
    const std::string html = code_view::side_by_side_html(source, listing, "<b>&</b>");
    EXPECT_TRUE(is_xml(html));
    EXPECT_NE(html.find("#include &lt;cuda_fp16.h&gt;"), std::string::npos);
    EXPECT_NE(html.find("a &lt; b &amp;&amp; c &gt; d; // &quot;q&quot; &#39;q&#39;"), std::string::npos);
    EXPECT_NE(html.find("&lt;b&gt;&amp;&lt;/b&gt;"), std::string::npos);
    EXPECT_EQ(html.find("&nbsp;"), std::string::npos);
    EXPECT_NE(html.find("&#160;"), std::string::npos);  // the empty third line still takes a row
}

TEST(code_view_side_by_side, sass_listing_renders_as_xml_with_sass_classes)
{
    const code_listing listing = code_listing::from_sass(fixture("use_scale_saxpy_nvdisasm.sass")).only("saxpy");
    const std::string html = code_view::side_by_side_html(fixture("saxpy.cu"), listing, "saxpy: SASS sm_90");
    EXPECT_TRUE(is_xml(html));
    EXPECT_NE(html.find("xc-col xcuda-sass"), std::string::npos);
    EXPECT_NE(html.find("data-line=\"5\">        <span class=\"addr\">"), std::string::npos);
}

// ----- grouped text -------------------------------------------------------------------------------

TEST(code_view_grouped_text, statement_line_is_followed_by_its_instructions)
{
    const std::string text = code_view::grouped_text(fixture("saxpy.cu"), code_listing::from_ptx(fixture("saxpy.ptx")));
    const std::string expected_group = "   5 |         out[i] = a * x[i] + y[i];\n"
                                       "        shl.b64 %rd9, %rd1, 2;\n"
                                       "        add.s64 %rd10, %rd8, %rd9;\n"
                                       "        ld.global.f32 %f2, [%rd10];\n"
                                       "        add.s64 %rd12, %rd11, %rd9;\n"
                                       "        ld.global.f32 %f3, [%rd12];\n"
                                       "        fma.rn.f32 %f4, %f2, %f1, %f3;\n"
                                       "        add.s64 %rd14, %rd13, %rd9;\n"
                                       "        st.global.f32 [%rd14], %f4;\n";
    EXPECT_NE(text.find(expected_group), std::string::npos) << text;
    EXPECT_LT(text.find("   4 |     if (i < n)"), text.find("   5 |"));
    EXPECT_EQ(text.find("(no source line)"), std::string::npos);
    EXPECT_EQ(text.find("   2 |"), std::string::npos);
}

TEST(code_view_grouped_text, one_line_body_owns_all_the_work)
{
    const std::string text =
        code_view::grouped_text(fixture("saxpy_one_line.cu"), code_listing::from_ptx(fixture("saxpy_one_line.ptx")));
    EXPECT_NE(text.find("   2 | { size_t i = blockIdx.x"), std::string::npos);
    EXPECT_GT(text.find("fma.rn.f32"), text.find("   2 |"));
}

TEST(code_view_grouped_text, instructions_without_line_info_are_under_no_source_line)
{
    const std::string text =
        code_view::grouped_text(fixture("saxpy.cu"), code_listing::from_ptx(fixture("saxpy_no_line_info.ptx")));
    EXPECT_EQ(text.rfind("(no source line)\n", 0), 0u) << text;
    EXPECT_NE(text.find("        fma.rn.f32"), std::string::npos);
}

TEST(code_view_grouped_text, several_functions_get_one_block_each)
{
    const std::string text = code_view::grouped_text("", code_listing::from_ptx(fixture("scale_template.ptx")));
    std::size_t f = text.find("== _Z5scaleIfEvPT_S0_i ==");
    std::size_t d = text.find("== _Z5scaleIdEvPT_S0_i ==");
    ASSERT_NE(f, std::string::npos);
    ASSERT_NE(d, std::string::npos);
    EXPECT_LT(f, d);
    EXPECT_NE(text.find("   6 | \n        "), std::string::npos);  // no source given: empty text
}

// ----- compare ------------------------------------------------------------------------------------

TEST(code_view_compare, fast_math_changes_the_division_and_the_add)
{
    const code_listing normal = code_listing::from_ptx(fixture("saxpy_div.ptx"));
    const code_listing fast = code_listing::from_ptx(fixture("saxpy_div_fast_math.ptx"));
    const std::string text = code_view::compare_text("default", normal, "--use_fast_math", fast);
    EXPECT_EQ(text.rfind("24 instructions left, 24 right; 2 only left, 2 only right\n", 0), 0u) << text;
    EXPECT_NE(text.find("~ div.rn.f32 %f3, %f2, %f1"), std::string::npos) << text;
    EXPECT_NE(text.find("| div.approx.ftz.f32 %f3, %f2, %f1"), std::string::npos);
    EXPECT_NE(text.find("~ add.f32 %f5, %f3, %f4"), std::string::npos);
    EXPECT_NE(text.find("  ld.global.f32 %f2, [%rd6]; "), std::string::npos);

    const std::string html = code_view::compare_html("default", normal, "--use_fast_math", fast);
    EXPECT_TRUE(is_xml(html));
    EXPECT_NE(html.find("<tr class=\"changed\"><td class=\"m\">-</td>"), std::string::npos);
    EXPECT_NE(html.find("<td class=\"m\">+</td>"), std::string::npos);
    EXPECT_TRUE(has_op(html, "div.approx.ftz.f32"));
    EXPECT_NE(html.find(".approx: approximate: faster, a few ulp of error. .ftz: flushes denormal values to zero."),
              std::string::npos);
    EXPECT_NE(html.find("2 only left, 2 only right"), std::string::npos);
}

TEST(code_view_compare, register_renumbering_and_kernel_names_are_not_changes)
{
    // fill and square share their index computation; square is saxpy_div-like with other registers.
    const code_listing left = code_listing::from_ptx(fixture("two_kernels.ptx")).only("fill");
    const code_listing right = code_listing::from_ptx(fixture("two_kernels.ptx")).only("square");
    const std::string text = code_view::compare_text("fill", left, "square", right);
    // square adds a load and a multiply, fill's store differs only in its value register.
    EXPECT_NE(text.find("  ld.param.u64 %rd1, [fill_param_0]"), std::string::npos) << text;
    EXPECT_NE(text.find("+ "), std::string::npos);
    EXPECT_EQ(text.find("~ mov.u32"), std::string::npos);

    const std::string same = code_view::compare_text("a", left, "b", left);
    const std::size_t n = left.instruction_count();
    EXPECT_EQ(same.rfind(std::to_string(n) + " instructions left, " + std::to_string(n) + " right; 0 only left, 0 only right", 0), 0u);
}

TEST(code_view_compare, removed_and_added_lines_are_marked_when_lengths_differ)
{
    const code_listing left = code_listing::from_ptx("\tmov.u32 %r1, %tid.x;\n\tadd.s32 %r2, %r1, 1;\n\tret;\n");
    const code_listing right = code_listing::from_ptx("\tmov.u32 %r5, %tid.x;\n\tret;\n\texit;\n");
    const std::string text = code_view::compare_text("L", left, "R", right);
    EXPECT_EQ(text, "3 instructions left, 3 right; 1 only left, 1 only right\n"
                    "  L                    | R\n"
                    "  mov.u32 %r1, %tid.x; | mov.u32 %r5, %tid.x;\n"
                    "- add.s32 %r2, %r1, 1; |\n"
                    "  ret;                 | ret;\n"
                    "+                      | exit;\n");
    const std::string html = code_view::compare_html("L", left, "R", right);
    EXPECT_TRUE(is_xml(html));
    EXPECT_NE(html.find("<tr class=\"removed\">"), std::string::npos);
    EXPECT_NE(html.find("<tr class=\"added\">"), std::string::npos);
}

TEST(code_view_compare, ptx_and_sass_listings_can_be_compared)
{
    const code_listing sass = code_listing::from_sass(fixture("use_scale_saxpy_nvdisasm.sass")).only("saxpy");
    const std::string html = code_view::compare_html("PTX", code_listing::from_ptx(fixture("saxpy.ptx")), "SASS", sass);
    EXPECT_TRUE(is_xml(html));
    EXPECT_NE(html.find("25 instructions left, " + std::to_string(sass.instruction_count()) + " right"), std::string::npos);
    EXPECT_EQ(sass.instruction_count(), 31u);  // 28, then the BRA-to-self and NOP padding
}

// ----- hostile input ------------------------------------------------------------------------------

TEST(code_view_hostile, empty_input_gives_empty_listings_and_valid_views)
{
    const code_listing ptx = code_listing::from_ptx("");
    const code_listing sass = code_listing::from_sass("");
    EXPECT_TRUE(ptx.empty());
    EXPECT_TRUE(sass.empty());
    EXPECT_TRUE(ptx.functions().empty());
    EXPECT_TRUE(is_xml(code_view::highlight_ptx_html("")));
    EXPECT_TRUE(is_xml(code_view::highlight_sass_html("")));
    EXPECT_TRUE(is_xml(code_view::side_by_side_html("", ptx, "")));
    EXPECT_TRUE(is_xml(code_view::compare_html("", ptx, "", sass)));
    EXPECT_EQ(code_view::grouped_text("", ptx), "");
    EXPECT_EQ(code_view::compare_text("", ptx, "", sass).rfind("0 instructions left, 0 right; 0 only left, 0 only right", 0), 0u);
}

TEST(code_view_hostile, huge_and_malformed_loc_line_numbers_map_to_zero)
{
    const std::string ptx = ".visible .entry k()\n{\n"
                            "\t.loc\t1 99999999999999999999 5\n\tmov.u32 %r1, %tid.x;\n"
                            "\t.loc\t1 -3 5\n\tmov.u32 %r2, %tid.y;\n"
                            "\t.loc\t1\n\tmov.u32 %r3, %tid.z;\n"
                            "\t.loc\t1 2000000 1\n\tret;\n}\n\t.file\t1 \"cell\"\n";
    const code_listing listing = code_listing::from_ptx(ptx);
    EXPECT_EQ(lines_of(instructions_starting(listing, "mov.u32")), (std::vector<int>{0, 0, 0}));
    EXPECT_EQ(lines_of(instructions_starting(listing, "ret")), (std::vector<int>{2000000}));
    const std::string text = code_view::grouped_text("one line", listing);
    EXPECT_NE(text.find("2000000 | \n"), std::string::npos);
    EXPECT_TRUE(is_xml(code_view::side_by_side_html("one line", listing, "k")));
}

TEST(code_view_hostile, unterminated_statements_and_lines_do_not_swallow_the_listing)
{
    const std::string ptx = ".visible .entry k()\n{\n\tmov.u32 %r1, %tid.x\n\n\tadd.s32 %r2, %r1, 1;\n$L1:\n\tret";
    const code_listing listing = code_listing::from_ptx(ptx);
    EXPECT_EQ(listing.instruction_count(), 3u);
    EXPECT_EQ(listing[listing.size() - 1].text, "\tret");
    EXPECT_EQ(listing[listing.size() - 2].kind, code_line::label);

    const code_listing sass = code_listing::from_sass("\t\tFunction : k\n        /*0000*/    EXIT ;   /* 0x0000");
    EXPECT_EQ(sass.instruction_count(), 1u);
    EXPECT_EQ(sass.functions(), std::vector<std::string>{"k"});
}

TEST(code_view_hostile, binary_garbage_never_crashes_and_views_stay_valid_xml_and_utf8)
{
    std::mt19937 random(20240601u);
    std::uniform_int_distribution<int> byte(0, 255);
    const std::string alphabet = ".loc 1 2 3\n%r1@!$L__BB0_1:;{}()\"/*0040*/ //## File \"cell\", line 7\nFunction : x\n";
    for (int round = 0; round < 200; ++round)
    {
        std::string garbage;
        const int length = static_cast<int>(random() % 600);
        for (int i = 0; i < length; ++i)
        {
            garbage += (random() % 2 == 0) ? static_cast<char>(byte(random))
                                           : alphabet[random() % alphabet.size()];
        }
        const code_listing ptx = code_listing::from_ptx(garbage);
        const code_listing sass = code_listing::from_sass(garbage);
        ptx.by_source_line();
        sass.functions();
        for (const std::string& html : {code_view::highlight_ptx_html(garbage), code_view::highlight_sass_html(garbage),
                                        code_view::side_by_side_html(garbage, ptx, garbage),
                                        code_view::side_by_side_html(garbage, sass, garbage),
                                        code_view::compare_html(garbage, ptx, garbage, sass)})
        {
            ASSERT_TRUE(is_xml(html)) << "round " << round;
            ASSERT_TRUE(valid_utf8(html)) << "round " << round;
        }
        ASSERT_TRUE(valid_utf8(code_view::grouped_text(garbage, ptx)));
        ASSERT_TRUE(valid_utf8(code_view::compare_text(garbage, ptx, garbage, sass)));
    }
}

TEST(code_view_hostile, invalid_utf8_and_control_characters_become_replacement_characters)
{
    const std::string source = std::string("float \xff\xfe x;\x01 caf\xc3\xa9\n");
    const std::string html = code_view::side_by_side_html(source, code_listing::from_ptx(fixture("saxpy.ptx")), "t");
    EXPECT_TRUE(valid_utf8(html));
    EXPECT_NE(html.find("float \xEF\xBF\xBD\xEF\xBF\xBD x;\xEF\xBF\xBD caf\xc3\xa9"), std::string::npos);
}

TEST(code_view_hostile, the_xml_checker_rejects_what_notebook_parsers_reject)
{
    std::string why;
    EXPECT_TRUE(xml_checker::well_formed("<a b=\"1\"><c/>&#160;&amp;<![CDATA[<&]]></a>", why)) << why;
    EXPECT_FALSE(xml_checker::well_formed("<a>&nbsp;</a>", why));
    EXPECT_FALSE(xml_checker::well_formed("<a><b></a>", why));
    EXPECT_FALSE(xml_checker::well_formed("<a x=1></a>", why));
    EXPECT_FALSE(xml_checker::well_formed("<a>x & y</a>", why));
    EXPECT_FALSE(xml_checker::well_formed("<a></a><b></b>", why));
}

namespace xcuda
{
    TEST(disassembler, line_information_keeps_file_names_without_the_machines_folders)
    {
        std::string sass = "        /*0010*/   MOV R1, c[0x0][0x28] ;\n"
                           "\t//## File \"/home/me/notebooks/cell\", line 13 inlined at \"/home/me/notebooks/cell\", line 17\n"
                           "\t//## File \"vecmath.cuh\", line 2\n"
                           "        /*0020*/   S2R R0, SR_TID.X ; // \"/not/line/info\"\n";
        std::string cleaned = disassembler::without_build_paths(sass);
        EXPECT_NE(cleaned.find("//## File \"cell\", line 13 inlined at \"cell\", line 17\n"), std::string::npos) << cleaned;
        EXPECT_NE(cleaned.find("//## File \"vecmath.cuh\", line 2\n"), std::string::npos) << cleaned;
        EXPECT_NE(cleaned.find("// \"/not/line/info\""), std::string::npos) << cleaned;  // not a //## line
        EXPECT_EQ(cleaned.find("/home/me"), std::string::npos) << cleaned;
    }
}

// Issue 28, item 9: a banner of dashes alone (no section name after it) is a comment, not an out_of_range.
TEST(code_listing_sass, a_banner_of_dashes_only_is_a_comment)
{
    for (const char* text : {"//-----", "//--", "  //-----------\n", "//-----\n//----- .text.k -----\n"})
    {
        code_listing listing = code_listing::from_sass(text);
        ASSERT_FALSE(listing.lines().empty()) << text;
        EXPECT_EQ(listing.lines()[0].kind, code_line::comment) << text;
    }
}

// ----- The editor's line numbers (base/cell_lines) --------------------------------------------------

TEST(code_view_editor_lines, a_cells_views_number_its_lines_as_the_editor_does)
{
    const cell_lines cell = cell_lines::cell(4);  // under a %%cuda line: source line 5 is the editor's 6
    const code_listing listing = code_listing::from_ptx(fixture("saxpy.ptx"));
    const std::string text = code_view::grouped_text(fixture("saxpy.cu"), listing, {}, cell);
    EXPECT_NE(text.find("   6 |         out[i] = a * x[i] + y[i];\n"), std::string::npos) << text;
    EXPECT_EQ(text.find("   5 |         out[i]"), std::string::npos) << text;
    const std::string html = code_view::side_by_side_html(fixture("saxpy.cu"), listing, "saxpy", {}, cell);
    EXPECT_NE(html.find("data-line=\"5\"><span class=\"xn\">6</span>"), std::string::npos);
}

TEST(code_view_editor_lines, annotated_ptx_writes_each_source_line_above_its_instructions)
{
    const std::string ptx = code_view::annotated_ptx(fixture("saxpy.ptx"), fixture("saxpy.cu"), cell_lines::cell(4));
    std::size_t comment = ptx.find("//    6 | out[i] = a * x[i] + y[i];\n");
    ASSERT_NE(comment, std::string::npos) << ptx;
    // Each run is headed by its own line: the comment nearest above the store is the store's line.
    std::size_t store = ptx.find("st.global.f32");
    ASSERT_NE(store, std::string::npos);
    EXPECT_EQ(ptx.rfind("//    ", store), ptx.rfind("//    6 | out[i] = a * x[i] + y[i];", store)) << ptx;
    EXPECT_NE(ptx.find("//    7 | }\n\tret;"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("//    5 | if (i < n)"), std::string::npos) << ptx;
    // PTX without line information comes back as it is.
    const std::string plain = ".version 8.0\n.target sm_90\n.visible .entry k()\n{\nret;\n}\n";
    EXPECT_EQ(code_view::annotated_ptx(plain, "x\n", cell_lines::cell(4)), plain);
}
