// Tests of TensorProto conversion and the ONNX test-data file convention.
#include "frontend/onnx_tensor.h"
#include "tests/common/temp_path.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/error.h"
#include "tests/frontend/onnx_test_util.h"

namespace tandem::frontend {
namespace {

using ir::DataType;
using ir::Tensor;
using testing::ExpectError;
namespace fs = std::filesystem;

// A fresh empty directory under the system temp directory, removed when it goes out of scope.
struct TempDir : tandem::testing::ScopedTempPath {
  explicit TempDir(const std::string& name) : ScopedTempPath("tandem_onnx_tensor_test_" + name) {
    fs::create_directories(path());
  }
};

void WriteBytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.type() == b.type() &&
         std::memcmp(a.raw_data(), b.raw_data(), static_cast<size_t>(a.num_bytes())) == 0;
}

TEST(OnnxTensor, FileRoundTripKeepsEveryDtypeBitExact) {
  TempDir scoped("round_trip");
  const fs::path& dir = scoped.path();
  for (DataType dtype :
       {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kInt8,
        DataType::kUInt8, DataType::kInt32, DataType::kInt64, DataType::kBool}) {
    for (const ir::Shape& shape : {ir::Shape{2, 3, 4}, ir::Shape{}, ir::Shape{0, 5}}) {
      Tensor original = Tensor::Random(ir::TensorType{shape, dtype, ""}, 7, -100, 100);
      std::string path = (dir / "t.pb").string();
      WriteTensorProtoFile(original, path, "x");
      Tensor back = ReadTensorProtoFile(path);
      EXPECT_TRUE(SameBytes(back, original)) << ir::ToString(original.type());
    }
  }
}

TEST(OnnxTensor, TypedFieldsAreRead) {
  onnx::TensorProto proto;
  proto.set_data_type(onnx::TensorProto::FLOAT);
  proto.add_dims(3);
  for (float v : {1.5f, -2.0f, 3.25f}) proto.add_float_data(v);
  EXPECT_EQ(TensorFromProto(proto).ToDoubles(), (std::vector<double>{1.5, -2.0, 3.25}));

  proto.Clear();
  proto.set_data_type(onnx::TensorProto::INT64);
  proto.add_dims(2);
  proto.add_int64_data(int64_t{1} << 62);
  proto.add_int64_data(-5);
  Tensor i64 = TensorFromProto(proto);
  EXPECT_EQ(i64.data<int64_t>()[0], int64_t{1} << 62);
  EXPECT_EQ(i64.data<int64_t>()[1], -5);

  proto.Clear();
  proto.set_data_type(onnx::TensorProto::DOUBLE);
  proto.add_double_data(0.1);  // no dims: a scalar
  EXPECT_EQ(TensorFromProto(proto).ToDoubles(), (std::vector<double>{0.1}));

  // INT8, UINT8, INT32, BOOL and FLOAT16 (as bits) all live in int32_data.
  struct Case {
    int onnx_type;
    std::vector<int32_t> stored;
    std::vector<double> expected;
  };
  for (const Case& c :
       std::vector<Case>{{onnx::TensorProto::INT8, {-128, 127}, {-128, 127}},
                         {onnx::TensorProto::UINT8, {0, 255}, {0, 255}},
                         {onnx::TensorProto::INT32, {-70000, 70000}, {-70000, 70000}},
                         {onnx::TensorProto::BOOL, {0, 1}, {0, 1}},
                         {onnx::TensorProto::FLOAT16, {0x3c00, 0xc000}, {1.0, -2.0}}}) {
    proto.Clear();
    proto.set_data_type(c.onnx_type);
    proto.add_dims(2);
    for (int32_t v : c.stored) proto.add_int32_data(v);
    EXPECT_EQ(TensorFromProto(proto).ToDoubles(), c.expected) << c.onnx_type;
  }
}

TEST(OnnxTensor, BadProtosAreErrorsNamingTheTensor) {
  onnx::TensorProto proto;
  proto.set_name("w");
  proto.set_data_type(onnx::TensorProto::FLOAT);
  proto.add_dims(4);
  proto.set_raw_data(std::string(12, '\0'));  // 3 floats for 4
  ExpectError([&] { TensorFromProto(proto); }, {"'w'", "16 bytes", "12"});

  proto.clear_raw_data();
  proto.add_float_data(1.0f);
  ExpectError([&] { TensorFromProto(proto); }, {"'w'", "float_data"});

  proto.set_data_location(onnx::TensorProto::EXTERNAL);
  ExpectError([&] { TensorFromProto(proto); }, {"'w'", "externally"});

  proto.Clear();
  proto.set_name("s");
  proto.set_data_type(onnx::TensorProto::STRING);
  ExpectError([&] { TensorFromProto(proto); }, {"'s'", "STRING", "not supported"});

  proto.Clear();
  proto.set_name("n");
  proto.set_data_type(onnx::TensorProto::FLOAT);
  proto.add_dims(-3);
  ExpectError([&] { TensorFromProto(proto); }, {"'n'", "invalid dims"});

  proto.Clear();
  proto.set_name("huge");
  proto.set_data_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < 4; ++i) proto.add_dims(int64_t{1} << 20);  // 2^80 elements
  ExpectError([&] { TensorFromProto(proto); }, {"'huge'"});
}

TEST(OnnxTensor, BadFilesAreErrorsNamingThePath) {
  TempDir scoped("bad_files");
  const fs::path& dir = scoped.path();
  ExpectError([&] { ReadTensorProtoFile((dir / "missing.pb").string()); },
              {"missing.pb", "does not exist"});
  ExpectError([&] { ReadTensorProtoFile(dir.string()); }, {"is a directory"});
  WriteBytes(dir / "empty.pb", "");
  ExpectError([&] { ReadTensorProtoFile((dir / "empty.pb").string()); }, {"empty.pb", "is empty"});
  WriteBytes(dir / "junk.pb", std::string("\xff\xff\xff\xff\xff\xff", 6));
  ExpectError([&] { ReadTensorProtoFile((dir / "junk.pb").string()); },
              {"junk.pb", "not a valid ONNX TensorProto"});
  ExpectError(
      [&] {
        WriteTensorProtoFile(Tensor::FromFloats({1}, {1}), (dir / "no/such/dir/x.pb").string());
      },
      {"cannot write"});
}

TEST(OnnxTensor, DirectoryIsReadInNumericIndexOrder) {
  TempDir scoped("directory");
  const fs::path& dir = scoped.path();
  // Twelve files: lexicographic order would put input_10 before input_2.
  for (int i = 0; i < 12; ++i) {
    WriteTensorProtoFile(Tensor::FromFloats({1}, {static_cast<float>(i)}),
                         (dir / ("input_" + std::to_string(i) + ".pb")).string());
  }
  WriteTensorProtoFile(Tensor::FromFloats({2}, {7, 8}), (dir / "output_0.pb").string());
  std::vector<Tensor> inputs = ReadTensorProtoDirectory(dir.string(), "input");
  ASSERT_EQ(inputs.size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(inputs[static_cast<size_t>(i)].GetDouble(0), i);
  std::vector<Tensor> outputs = ReadTensorProtoDirectory(dir.string(), "output");
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].ToDoubles(), (std::vector<double>{7, 8}));

  fs::remove(dir / "input_3.pb");
  ExpectError([&] { ReadTensorProtoDirectory(dir.string(), "input"); }, {"input_3.pb"});
  ExpectError([&] { ReadTensorProtoDirectory(dir.string(), "weights"); }, {"weights_0.pb"});
  ExpectError([&] { ReadTensorProtoDirectory((dir / "nope").string(), "input"); },
              {"does not exist"});
}

}  // namespace
}  // namespace tandem::frontend
