// base/cell_lines: the one mapping from a line of the source the compiler saw (NVRTC's log, PTX's .loc,
// the simulator's reports) to the line the editor shows, and the name of the cell that holds it.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cell_lines.hpp"

namespace xcuda
{
    TEST(cell_lines, a_cells_source_line_is_its_editor_line_under_the_magic_line)
    {
        cell_lines cell = cell_lines::cell(5);
        EXPECT_EQ(cell.label(), "Cell In[5]");
        EXPECT_EQ(cell.editor_line(4), 5);
        EXPECT_EQ(cell.source_line(5), 4);
        EXPECT_EQ(cell.editor_line(0), 0);  // no line stays no line
        EXPECT_EQ(cell.source_line(1), 0);  // the magic line is no line of the source
        cell_lines string_source;
        EXPECT_EQ(string_source.label(), "the source");
        EXPECT_EQ(string_source.editor_line(4), 4);
        EXPECT_EQ(cell_lines::cell(0).label(), "the %%cuda cell");
    }

    TEST(cell_lines, line_information_files_are_named_as_the_notebook_names_them)
    {
        cell_lines cell = cell_lines::cell(7, {"vec.cuh"});
        cell_lines::place own = cell.locate("/home/me/notebooks/cell", 4);
        EXPECT_TRUE(own.own);
        EXPECT_EQ(own.where(), "Cell In[7], line 5");
        EXPECT_TRUE(cell.locate("cell", 4).own);
        EXPECT_TRUE(cell.locate("", 4).own);  // a compile message's file "" is the cell
        cell_lines::place header = cell.locate("vec.cuh", 2);
        EXPECT_FALSE(header.own);
        EXPECT_EQ(header.where(), "header cell vec.cuh, line 3");  // under its %%cuda_header line
        cell_lines::place other = cell.locate("/usr/local/cuda/include/cuda_fp16.hpp", 120);
        EXPECT_FALSE(other.own);
        EXPECT_EQ(other.where(), "cuda_fp16.hpp, line 120");
        EXPECT_FALSE(cell_lines::names_program("cells.cu"));
        EXPECT_FALSE(cell_lines::names_program("/srv/mycell"));
    }

    TEST(cell_lines, the_simulators_report_names_the_cell_line_and_never_the_working_folder)
    {
        cell_lines cell = cell_lines::cell(3);
        std::string report = "kernel 'oob', thread (5,0,0) of block (0,0,0): write of 4 bytes at 0x10 past the end, "
                             "at 'st.global.f32 [%rd4], %f1;' in oob, line 4 of /srv/notebooks/cell\n"
                             "On the PTX simulator a fault is not sticky.";
        cell_lines::place first;
        std::string located = cell.located_report(report, &first);
        EXPECT_NE(located.find("in oob, Cell In[3], line 5\nOn the PTX simulator"), std::string::npos) << located;
        EXPECT_EQ(located.find("/srv/notebooks"), std::string::npos) << located;
        EXPECT_TRUE(first.own);
        EXPECT_EQ(first.line, 5);

        // Two places (a race): both said, the first returned; a full stop after the file stays.
        std::string race = "writes it at 'st.shared' in k, line 6 of /x/cell, and reads it at 'ld.shared' in k, "
                           "line 9 of /x/cell.";
        EXPECT_EQ(cell.located_report(race, &first),
                  "writes it at 'st.shared' in k, Cell In[3], line 7, and reads it at 'ld.shared' in k, "
                  "Cell In[3], line 10.");
        EXPECT_EQ(first.line, 7);
        // Text without "line N of FILE" is left alone.
        EXPECT_EQ(cell.located_report("in k, line 4", nullptr), "in k, line 4");
        EXPECT_EQ(cell.located_report("deadline 4 of x", nullptr), "deadline 4 of x");
        EXPECT_EQ(cell.located_report("", nullptr), "");
    }

    TEST(cell_lines, compile_messages_get_the_editor_lines_of_the_cell_and_its_header_cells)
    {
        std::vector<diagnostic> messages(4);
        messages[0].line = 4;                   // the cell
        messages[1].file = "vec.cuh";           // a header cell
        messages[1].line = 2;
        messages[2].file = "/usr/include/x.h";  // a header found in a folder
        messages[2].line = 9;
        messages[3].line = 0;                   // an option error: no line
        std::vector<diagnostic> shown = cell_lines::cell(1, {"vec.cuh"}).shown(messages);
        EXPECT_EQ(shown[0].line, 5);
        EXPECT_EQ(shown[1].line, 3);
        EXPECT_EQ(shown[2].line, 9);
        EXPECT_EQ(shown[3].line, 0);
    }
}
