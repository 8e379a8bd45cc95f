// Unit tests of the rules of `with xcuda.graph() as g:` that need no GPU (runtime/cuda_graph's static
// checks: when a block may open, a replay or an update be made, the values g.update takes, the state
// and repr texts) and of what a stream argument may not be (runtime/cuda_stream's refusals).

#include "expect_error.hpp"
#include <string>

#include <gtest/gtest.h>

#include "cuda_graph.hpp"
#include "cuda_stream.hpp"
#include "errors.hpp"

namespace xcuda
{
    namespace
    {
        bool has(const std::string& text, const std::string& part)
        {
            return text.find(part) != std::string::npos;
        }
    }

    TEST(graph_rules, a_refusal_names_the_operation_and_what_to_do_instead)
    {
        EXPECT_EQ(xcuda_tests::message_of<graph_capture_error>([] { cuda_graph::refuse("xcuda.synchronize()", "do it later"); }),
                  "xcuda.synchronize() cannot be captured in a CUDA graph: do it later");
    }

    TEST(graph_rules, a_host_argument_inside_a_block_says_to_pass_a_device_array)
    {
        std::string text = xcuda_tests::message_of<graph_capture_error>([] { cuda_graph::refuse_host_argument("argument 'x'", "a numpy array"); });
        EXPECT_TRUE(has(text, "argument 'x': a numpy array is copied to and from the device around each launch")) << text;
        EXPECT_TRUE(has(text, "Pass a DeviceArray")) << text;
    }

    TEST(graph_rules, every_named_refusal_says_what_and_what_to_do_instead)
    {
        using kind = cuda_graph::refusal_kind;
        auto [what, instead] = cuda_graph::refusal(kind::synchronize);
        EXPECT_STREQ(what, "xcuda.synchronize()");
        EXPECT_TRUE(has(instead, "a graph holds no waits")) << instead;
        EXPECT_STREQ(cuda_graph::refusal(kind::transfer_options).second, "end the `with xcuda.graph()` block first");
        EXPECT_STREQ(cuda_graph::refusal(kind::asarray).first, "numpy.asarray of a DeviceArray");
        for (kind k : {kind::to_device_of_host_data, kind::copy_to_new_host_array, kind::copy_from_converted, kind::asarray,
                       kind::stream_synchronize, kind::event_synchronize, kind::elapsed_time, kind::synchronize,
                       kind::transfer_options, kind::release_host_registrations, kind::release_cached_temporaries})
        {
            auto [w, i] = cuda_graph::refusal(k);
            EXPECT_STRNE(w, "this operation") << "a kind without its own text: " << static_cast<int>(k);
            EXPECT_GT(std::string(i).size(), 20u) << w;
        }
    }

    TEST(graph_rules, graphs_do_not_nest_and_capture_once)
    {
        EXPECT_NO_THROW(cuda_graph::check_can_open(false, false));
        EXPECT_TRUE(has(xcuda_tests::message_of<graph_capture_error>([] { cuda_graph::check_can_open(true, false); }),
                        "graphs do not nest"));
        EXPECT_TRUE(has(xcuda_tests::message_of<graph_capture_error>([] { cuda_graph::check_can_open(false, true); }),
                        "a Graph captures once"));
    }

    TEST(graph_rules, a_graph_never_captured_is_neither_replayed_nor_updated)
    {
        EXPECT_TRUE(has(xcuda_tests::message_of<graph_capture_error>([] { cuda_graph::check_replayable(nullptr); }),
                        "this graph has not been captured yet"));
        EXPECT_EQ(xcuda_tests::message_of<graph_capture_error>([] { cuda_graph::launch_node(nullptr, 0); }),
                  "graph.update needs a captured graph (this one was never captured)");
    }

    TEST(graph_rules, launch_dimensions_of_an_update_are_checked)
    {
        EXPECT_EQ(cuda_graph::checked_dims({4}, "grid"), (std::array<unsigned, 3>{4, 1, 1}));
        EXPECT_EQ(cuda_graph::checked_dims({4, 2, 3}, "block"), (std::array<unsigned, 3>{4, 2, 3}));
        EXPECT_EQ(cuda_graph::checked_dims({0xffffffffLL}, "grid")[0], 0xffffffffu);
        EXPECT_EQ(xcuda_tests::message_of<argument_value_error>([] { cuda_graph::checked_dims({}, "grid"); }),
                  "grid must be an int or a tuple of 1 to 3 ints");
        EXPECT_EQ(xcuda_tests::message_of<argument_value_error>([] { cuda_graph::checked_dims({1, 1, 1, 1}, "block"); }),
                  "block must be an int or a tuple of 1 to 3 ints");
        EXPECT_EQ(xcuda_tests::message_of<argument_value_error>([] { cuda_graph::checked_dims({8, 0}, "block"); }),
                  "block values must be between 1 and 2**32-1, got 0");
        EXPECT_EQ(xcuda_tests::message_of<argument_value_error>([] { cuda_graph::checked_dims({0x100000000LL}, "grid"); }),
                  "grid values must be between 1 and 2**32-1, got 4294967296");
        EXPECT_EQ(cuda_graph::checked_shared_mem(0), 0u);
        EXPECT_EQ(cuda_graph::checked_shared_mem(49152), 49152u);
        EXPECT_EQ(xcuda_tests::message_of<argument_value_error>([] { cuda_graph::checked_shared_mem(-1); }),
                  "shared_mem must be between 0 and 2**32-1 bytes");
        EXPECT_THROW(cuda_graph::checked_shared_mem(0x100000000LL), argument_value_error);
    }

    TEST(graph_rules, a_graph_before_its_block_says_so)
    {
        EXPECT_EQ(cuda_graph::state_text(nullptr), "not captured");
        EXPECT_EQ(cuda_graph::summary(nullptr), "<xcuda.Graph of 0 nodes (0 launches), not captured>");
    }

    TEST(stream_rules, a_bare_integer_or_an_object_without_a_stream_protocol_is_refused)
    {
        std::string integer = xcuda_tests::message_of<argument_type_error>([] { cuda_stream::refuse_integer("1024"); });
        EXPECT_TRUE(has(integer, "got the integer 1024.")) << integer;
        EXPECT_TRUE(has(integer, "write kernel[grid, block, None, 1024]")) << integer;
        EXPECT_EQ(xcuda_tests::message_of<argument_type_error>([] { cuda_stream::refuse_object("<class 'str'>"); }),
                  "a stream must be None or 0 (the default stream), an xcuda.Stream, or an object with __cuda_stream__ "
                  "(cuda.core), .ptr (CuPy) or .cuda_stream (PyTorch); got <class 'str'>");
    }
}
