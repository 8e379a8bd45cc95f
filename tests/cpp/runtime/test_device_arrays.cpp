// Unit tests of what a DeviceArray is made of apart from its memory: the shape arithmetic of
// runtime/array_layout (views of rows, another itemsize, the copy size checks and their messages, the
// numpy dtype mapping) and the DLPack bookkeeping of runtime/dlpack_tensor (dtype codes, strides, the
// export and import checks). None needs a GPU: an exported tensor here holds no buffer.

#include "expect_error.hpp"
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "array_layout.hpp"
#include "dlpack_tensor.hpp"
#include "numpy_dtype.hpp"
#include "errors.hpp"

namespace xcuda
{
    namespace
    {
        using xcuda_tests::message_of;

        using shape = std::vector<std::int64_t>;
    }

    TEST(ArrayLayout, CountsElementsAndBytes)
    {
        array_layout layout({2, 3}, 4);
        EXPECT_EQ(layout.size(), 6u);
        EXPECT_EQ(layout.nbytes(), 24u);
        EXPECT_EQ(array_layout({}, 8).size(), 1u);
        EXPECT_EQ(array_layout({0, 5}, 8).nbytes(), 0u);
    }

    TEST(ArrayLayout, SpellsShapesAsPythonTuples)
    {
        EXPECT_EQ(array_layout::shape_text({}), "()");
        EXPECT_EQ(array_layout::shape_text({3}), "(3,)");
        EXPECT_EQ(array_layout::shape_text({2, 3, 4}), "(2, 3, 4)");
    }

    TEST(ArrayLayout, RefusesNegativeExtents)
    {
        EXPECT_EQ(array_layout::checked_shape({2, 3}), (shape{2, 3}));
        EXPECT_EQ(message_of<argument_value_error>([] { array_layout::checked_shape({4, -1}); }),
                  "negative dimensions are not allowed (shape has -1)");
    }

    TEST(ArrayLayout, RowsOfASliceAreAByteRangeOfTheFirstAxis)
    {
        array_layout layout({10, 3}, 4);  // rows of 12 bytes
        array_layout::rows_view rows = layout.rows(2, 5, 1);
        EXPECT_EQ(rows.shape, (shape{3, 3}));
        EXPECT_EQ(rows.byte_offset, 24u);
        EXPECT_EQ(rows.nbytes, 36u);
    }

    TEST(ArrayLayout, RowsClampAndCountFromTheEndAsPythonSlicesDo)
    {
        array_layout layout({10}, 8);
        array_layout::rows_view tail = layout.rows(-3, 1000, 1);  // d[-3:1000]
        EXPECT_EQ(tail.shape, (shape{3}));
        EXPECT_EQ(tail.byte_offset, 56u);
        array_layout::rows_view empty = layout.rows(7, 2, 1);  // d[7:2]
        EXPECT_EQ(empty.shape, (shape{0}));
        EXPECT_EQ(empty.nbytes, 0u);
        EXPECT_EQ(layout.rows(-100, 2, 1).byte_offset, 0u);
    }

    TEST(ArrayLayout, ItsLengthIsTheFirstExtentAndA0dArrayHasNone)
    {
        EXPECT_EQ(array_layout({7, 2}, 4).length(), 7);
        EXPECT_EQ(message_of<argument_type_error>([] { array_layout({}, 4).length(); }), "len() of a 0-d device array");
    }

    TEST(ArrayLayout, RowsRefuseAStepAndA0dArray)
    {
        array_layout layout({10}, 4);
        std::string step = message_of<argument_value_error>([&] { layout.rows(0, 10, 2); });
        EXPECT_NE(step.find("takes a slice with step 1"), std::string::npos) << step;
        EXPECT_NE(step.find("got step 2"), std::string::npos) << step;
        EXPECT_EQ(message_of<index_error>([] { array_layout({}, 4).require_rows(); }),
                  "a 0-d device array has no rows to slice");
        EXPECT_EQ(message_of<index_error>([] { array_layout({}, 4).rows(0, 1, 1); }),
                  "a 0-d device array has no rows to slice");
    }

    TEST(ArrayLayout, AnotherItemsizeRescalesTheLastAxis)
    {
        array_layout layout({2, 4}, 4);  // float32
        EXPECT_EQ(layout.reinterpreted(1, "float32", "uint8"), (shape{2, 16}));
        EXPECT_EQ(layout.reinterpreted(8, "float32", "float64"), (shape{2, 2}));
        EXPECT_EQ(layout.reinterpreted(4, "float32", "int32"), (shape{2, 4}));
        EXPECT_EQ(message_of<argument_value_error>([&] { layout.reinterpreted(12, "float32", "V12"); }),
                  "the last axis of (2, 4) float32 is 16 bytes, not a multiple of V12's 12 bytes");
        EXPECT_EQ(message_of<argument_value_error>([] { array_layout({}, 4).reinterpreted(8, "float32", "float64"); }),
                  "a 0-d array of float32 cannot be viewed as float64: the itemsizes differ (4 and 8 bytes)");
        // A 0-d array keeps its shape when the itemsize is the same.
        EXPECT_EQ(array_layout({}, 4).reinterpreted(4, "float32", "int32"), shape{});
    }

    TEST(ArrayLayout, CopySizeChecksNameBothSizes)
    {
        array_layout layout({4}, 4);
        EXPECT_NO_THROW(layout.check_device_source(16));
        EXPECT_EQ(message_of<argument_value_error>([&] { layout.check_device_source(8); }),
                  "copy_from needs 16 bytes, the source device array has 8");
        EXPECT_NO_THROW(layout.check_host_source(4));
        EXPECT_EQ(message_of<argument_value_error>([&] { layout.check_host_source(5); }),
                  "copy_from needs 4 elements (shape (4,)), got 5");
        EXPECT_NO_THROW(layout.check_host_destination(true, "float32"));
        EXPECT_EQ(message_of<argument_value_error>([&] { layout.check_host_destination(false, "float32"); }),
                  "out must be a writeable C-contiguous numpy array of dtype float32 and 16 bytes");
    }

    TEST(ArrayLayout, DescribesItselfForRepr)
    {
        array_layout layout({2, 2}, 8);
        EXPECT_EQ(layout.describe("float64", true, 1), "<xcuda.DeviceArray shape=(2, 2) dtype=float64 nbytes=32 device=1>");
        EXPECT_EQ(layout.describe("float64", false, 1), "<xcuda.DeviceArray shape=(2, 2) dtype=float64 nbytes=32 (released)>");
    }

    TEST(ArrayLayout, MapsNumpyDtypesToScalarKindsAndBack)
    {
        EXPECT_EQ(array_layout::kind_of_numpy('f', 4), scalar_kind::f32);
        EXPECT_EQ(array_layout::kind_of_numpy('f', 2), scalar_kind::f16);
        EXPECT_EQ(array_layout::kind_of_numpy('i', 8), scalar_kind::i64);
        EXPECT_EQ(array_layout::kind_of_numpy('u', 1), scalar_kind::u8);
        EXPECT_EQ(array_layout::kind_of_numpy('b', 1), scalar_kind::boolean);
        EXPECT_EQ(array_layout::kind_of_numpy('c', 8), scalar_kind::unknown);
        EXPECT_EQ(array_layout::kind_of_numpy('i', 3), scalar_kind::unknown);
        EXPECT_EQ(array_layout::kind_of_numpy('V', 4), scalar_kind::unknown);
        EXPECT_STREQ(array_layout::numpy_name(scalar_kind::f32), "float32");
        EXPECT_STREQ(array_layout::numpy_name(scalar_kind::boolean), "bool");
        EXPECT_STREQ(array_layout::numpy_name(scalar_kind::u16), "uint16");
        EXPECT_EQ(array_layout::numpy_name(scalar_kind::bf16), nullptr);
        EXPECT_EQ(array_layout::numpy_name(scalar_kind::fp8_e4m3), nullptr);
        EXPECT_EQ(array_layout::numpy_name(scalar_kind::f16x2), nullptr);
        EXPECT_EQ(array_layout::numpy_name(scalar_kind::unknown), nullptr);
    }

    TEST(ArrayLayout, MlDtypesAndPackedPairsAreKnownByName)
    {
        EXPECT_STREQ(array_layout::ml_dtypes_name(scalar_kind::bf16), "bfloat16");
        EXPECT_STREQ(array_layout::ml_dtypes_name(scalar_kind::fp8_e4m3), "float8_e4m3fn");
        EXPECT_STREQ(array_layout::ml_dtypes_name(scalar_kind::fp8_e5m2), "float8_e5m2");
        EXPECT_EQ(array_layout::ml_dtypes_name(scalar_kind::f32), nullptr);
        EXPECT_EQ(array_layout::kind_of_numpy_name("bfloat16"), scalar_kind::bf16);
        EXPECT_EQ(array_layout::kind_of_numpy_name("float8_e4m3fn"), scalar_kind::fp8_e4m3);
        EXPECT_EQ(array_layout::kind_of_numpy_name("float8_e5m2"), scalar_kind::fp8_e5m2);
        EXPECT_EQ(array_layout::kind_of_numpy_name("float8_e4m3"), scalar_kind::unknown);  // another format than e4m3fn
        EXPECT_EQ(array_layout::kind_of_numpy_name("int4"), scalar_kind::unknown);
        EXPECT_EQ(array_layout::pair_kind(scalar_kind::f16, 0, scalar_kind::f16, 2, 4), scalar_kind::f16x2);
        EXPECT_EQ(array_layout::pair_kind(scalar_kind::bf16, 0, scalar_kind::bf16, 2, 4), scalar_kind::bf16x2);
        EXPECT_EQ(array_layout::pair_kind(scalar_kind::f16, 0, scalar_kind::f16, 2, 8), scalar_kind::unknown);
        EXPECT_EQ(array_layout::pair_kind(scalar_kind::f16, 2, scalar_kind::f16, 0, 4), scalar_kind::unknown);
        EXPECT_EQ(array_layout::pair_kind(scalar_kind::f16, 0, scalar_kind::bf16, 2, 4), scalar_kind::unknown);
        EXPECT_EQ(array_layout::pair_kind(scalar_kind::i16, 0, scalar_kind::i16, 2, 4), scalar_kind::unknown);
        EXPECT_EQ(array_layout::pair_element(scalar_kind::bf16x2), scalar_kind::bf16);
        EXPECT_EQ(array_layout::pair_element(scalar_kind::f32), scalar_kind::unknown);
    }

    TEST(DlpackTensor, NumpyDtypesHaveDlpackCodes)
    {
        DLDataType f32 = dlpack_tensor::type_of_numpy('f', 4, "float32");
        EXPECT_EQ(f32.code, 2);
        EXPECT_EQ(f32.bits, 32);
        EXPECT_EQ(f32.lanes, 1);
        EXPECT_EQ(dlpack_tensor::type_of_numpy('u', 2, "uint16").code, 1);
        EXPECT_EQ(dlpack_tensor::type_of_numpy('c', 8, "complex64").code, 5);
        EXPECT_EQ(dlpack_tensor::type_of_numpy('b', 1, "bool").code, 6);
        EXPECT_EQ(message_of<export_error>([] { dlpack_tensor::type_of_numpy('V', 8, "[('x', '<f4')]"); }),
                  "DLPack cannot describe dtype [('x', '<f4')]");
    }

    TEST(DlpackTensor, DlpackCodesHaveScalarKinds)
    {
        EXPECT_EQ(dlpack_tensor::kind_of({0, 32, 1}), scalar_kind::i32);
        EXPECT_EQ(dlpack_tensor::kind_of({1, 8, 1}), scalar_kind::u8);
        EXPECT_EQ(dlpack_tensor::kind_of({2, 64, 1}), scalar_kind::f64);
        EXPECT_EQ(dlpack_tensor::kind_of({4, 16, 1}), scalar_kind::bf16);
        EXPECT_EQ(dlpack_tensor::kind_of({6, 8, 1}), scalar_kind::boolean);
        EXPECT_EQ(dlpack_tensor::kind_of({2, 32, 4}), scalar_kind::unknown);  // a vector type
        EXPECT_EQ(dlpack_tensor::kind_of({5, 64, 1}), scalar_kind::unknown);  // complex
    }

    TEST(DlpackTensor, ExportIsCContiguousAndFreesItself)
    {
        DLManagedTensor* tensor = dlpack_tensor::export_buffer(nullptr, 0x1000, 1, {2, 3, 4}, {2, 32, 1});
        const DLTensor& t = tensor->dl_tensor;
        EXPECT_EQ(t.ndim, 3);
        EXPECT_EQ(t.device.device_type, dlpack_tensor::kDLCUDA);
        EXPECT_EQ(t.device.device_id, 1);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data), 0x1000u);
        EXPECT_EQ((shape{t.shape[0], t.shape[1], t.shape[2]}), (shape{2, 3, 4}));
        EXPECT_EQ((shape{t.strides[0], t.strides[1], t.strides[2]}), (shape{12, 4, 1}));
        EXPECT_EQ(t.byte_offset, 0u);
        // What an importer reads back of the export is the whole array.
        dlpack_tensor::extent memory = dlpack_tensor::device_memory(t, scalar_kind::f32, "x");
        EXPECT_EQ(memory.address, 0x1000u);
        EXPECT_EQ(memory.bytes, 96u);
        ASSERT_NE(tensor->deleter, nullptr);
        tensor->deleter(tensor);
    }

    TEST(DlpackTensor, ExportRequestsAreChecked)
    {
        EXPECT_NO_THROW(dlpack_tensor::check_export(0, false, false, 0, 0));
        EXPECT_NO_THROW(dlpack_tensor::check_export(1, false, true, dlpack_tensor::kDLCUDA, 1));
        EXPECT_NE(message_of<export_error>([] { dlpack_tensor::check_export(0, true, false, 0, 0); })
                      .find("copy=True is not supported"),
                  std::string::npos);
        EXPECT_EQ(message_of<export_error>([] { dlpack_tensor::check_export(0, false, true, 1, 0); }),
                  "DeviceArray lives on CUDA device 0; it cannot be exported to device (1, 0)");
        EXPECT_EQ(message_of<export_error>([] { dlpack_tensor::check_export(0, false, true, 2, 3); }),
                  "DeviceArray lives on CUDA device 0; it cannot be exported to device (2, 3)");
    }

    TEST(DlpackTensor, ImportsCheckDeviceKindAndContiguity)
    {
        EXPECT_NO_THROW(dlpack_tensor::check_import_device(dlpack_tensor::kDLCUDA, "x"));
        EXPECT_NO_THROW(dlpack_tensor::check_import_device(dlpack_tensor::kDLCUDAManaged, "x"));
        std::string host = message_of<argument_type_error>([] { dlpack_tensor::check_import_device(1, "argument 'x'"); });
        EXPECT_EQ(host, "argument 'x': the array passed through DLPack is not in CUDA device memory (DLPack device type 1); "
                        "move it to the GPU first");

        std::int64_t extents[2] = {4, 3};
        std::int64_t transposed[2] = {1, 4};
        DLTensor t{reinterpret_cast<void*>(0x2000), {2, 0}, 2, {0, 32, 1}, extents, transposed, 16};
        EXPECT_NE(message_of<argument_value_error>([&] { dlpack_tensor::device_memory(t, scalar_kind::i32, "x"); })
                      .find("x: the DLPack array is not C-contiguous"),
                  std::string::npos);
        t.strides = nullptr;  // C-contiguous by DLPack's convention
        dlpack_tensor::extent memory = dlpack_tensor::device_memory(t, scalar_kind::unknown, "x");
        EXPECT_EQ(memory.address, 0x2010u);  // with the byte offset
        EXPECT_EQ(memory.bytes, 48u);
        EXPECT_EQ(message_of<argument_type_error>([&] { dlpack_tensor::device_memory(t, scalar_kind::f32, "x"); }),
                  "x needs float32 elements, got a DLPack array of int32 (code 0, 32 bits)");
        // A stride on an axis of extent 1 does not matter.
        std::int64_t row[2] = {1, 3};
        std::int64_t odd[2] = {99, 1};
        DLTensor r{nullptr, {2, 0}, 2, {2, 32, 1}, row, odd, 0};
        EXPECT_EQ(dlpack_tensor::device_memory(r, scalar_kind::f32, "x").bytes, 12u);
    }

    namespace
    {
        std::shared_ptr<const value_layout> layout_of(const std::vector<module_variable>& variables, const std::string& name)
        {
            for (const module_variable& v : variables)
            {
                if (v.name == name)
                {
                    return v.layout;
                }
            }
            return nullptr;
        }
    }

    TEST(NumpyDtype, ScalarsPointersAndRecordsAsNumpyDescribesThem)
    {
        auto found = parse_module_variables(R"(
struct Base { float x; int n; };
struct Derived : Base { double x; __nv_bfloat16 h; float w[2][3]; };
__constant__ Derived c_d;
__constant__ float c_f;
__device__ int* d_p;
__device__ __nv_bfloat16 d_h;
__device__ float2 d_v;
)");
        std::optional<numpy_dtype> f = numpy_dtype::of(layout_of(found, "c_f"));
        ASSERT_TRUE(f);
        EXPECT_FALSE(f->is_record());
        EXPECT_EQ(f->name(), "float32");
        EXPECT_EQ(numpy_dtype::of(layout_of(found, "d_p"))->name(), "uint64");
        std::optional<numpy_dtype> h = numpy_dtype::of(layout_of(found, "d_h"));
        ASSERT_TRUE(h);
        EXPECT_TRUE(h->from_ml_dtypes()) << "numpy has bfloat16 through ml_dtypes only";
        EXPECT_EQ(h->name(), "bfloat16");
        EXPECT_FALSE(f->from_ml_dtypes());
        EXPECT_FALSE(numpy_dtype::of(nullptr));
        std::optional<numpy_dtype> v = numpy_dtype::of(layout_of(found, "d_v"));
        ASSERT_TRUE(v && v->is_record());
        ASSERT_EQ(v->fields().size(), 2u);
        EXPECT_EQ(v->fields()[1].name, "y");
        EXPECT_EQ(v->fields()[1].offset, 4u);

        std::optional<numpy_dtype> d = numpy_dtype::of(layout_of(found, "c_d"));
        ASSERT_TRUE(d && d->is_record());
        std::vector<std::string> names;
        for (const auto& field : d->fields())
        {
            names.push_back(field.name);
        }
        // Derived::x hides Base::x: the second of the two gets a suffix, so numpy's names stay unique.
        EXPECT_EQ(names, (std::vector<std::string>{"x", "n", "x_1", "h", "w"}));
        EXPECT_EQ(d->fields()[2].type->name(), "float64");
        EXPECT_EQ(d->fields()[3].type->name(), "bfloat16");
        EXPECT_TRUE(d->fields()[3].type->from_ml_dtypes()) << "the binding makes it V2 without ml_dtypes";
        EXPECT_EQ(d->fields()[4].extents, (std::vector<std::size_t>{2, 3}));
        EXPECT_EQ(d->itemsize(), layout_of(found, "c_d")->size);
    }
}
