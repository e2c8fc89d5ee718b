#include "frontend/onnx_tensor.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "frontend/onnx_file.h"
#include "ir/error.h"
#include "ir/file_read.h"

namespace tandem::frontend {

using ir::DataType;
using ir::Error;

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little-endian; Tandem tensors are stored in native order");

namespace {

std::string TensorLabel(const onnx::TensorProto& proto) {
  return proto.name().empty() ? std::string("(unnamed)") : "'" + proto.name() + "'";
}

std::string OnnxTypeName(int onnx_type) {
  if (onnx::TensorProto_DataType_IsValid(onnx_type)) {
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(onnx_type));
  }
  return fmt::format("unknown ({})", onnx_type);
}

// Copies `count` values of a repeated field into the tensor, converting each to T.
template <typename T, typename Field>
void CopyField(const Field& field, ir::Tensor& tensor) {
  T* out = tensor.data<T>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<T>(field.Get(i));
}

}  // namespace

ir::DataType DataTypeFromOnnx(int onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT:
      return DataType::kFloat32;
    case onnx::TensorProto::DOUBLE:
      return DataType::kFloat64;
    case onnx::TensorProto::FLOAT16:
      return DataType::kFloat16;
    case onnx::TensorProto::INT8:
      return DataType::kInt8;
    case onnx::TensorProto::UINT8:
      return DataType::kUInt8;
    case onnx::TensorProto::INT32:
      return DataType::kInt32;
    case onnx::TensorProto::INT64:
      return DataType::kInt64;
    case onnx::TensorProto::BOOL:
      return DataType::kBool;
    default:
      break;
  }
  throw Error(
      fmt::format("ONNX data type {} is not supported (Tandem supports FLOAT, DOUBLE, "
                  "FLOAT16, INT8, UINT8, INT32, INT64 and BOOL)",
                  OnnxTypeName(onnx_type)));
}

int DataTypeToOnnx(ir::DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return onnx::TensorProto::FLOAT;
    case DataType::kFloat64:
      return onnx::TensorProto::DOUBLE;
    case DataType::kFloat16:
      return onnx::TensorProto::FLOAT16;
    case DataType::kInt8:
      return onnx::TensorProto::INT8;
    case DataType::kUInt8:
      return onnx::TensorProto::UINT8;
    case DataType::kInt32:
      return onnx::TensorProto::INT32;
    case DataType::kInt64:
      return onnx::TensorProto::INT64;
    case DataType::kBool:
      return onnx::TensorProto::BOOL;
  }
  throw Error("unknown Tandem data type");
}

ir::Tensor TensorFromProto(const onnx::TensorProto& proto) {
  std::string label = TensorLabel(proto);
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    throw Error(
        fmt::format("tensor {} stores its data externally (in another file), which the "
                    "ONNX importer does not support; save the model with its data "
                    "embedded",
                    label));
  }
  if (proto.has_segment()) {
    throw Error(fmt::format("tensor {} is segmented, which is not supported", label));
  }
  DataType dtype;
  try {
    dtype = DataTypeFromOnnx(proto.data_type());
  } catch (const Error& e) {
    throw Error(fmt::format("tensor {}: {}", label, e.message()));
  }
  ir::Shape shape;
  int64_t count = 1;
  for (int64_t dim : proto.dims()) {
    if (dim < 0 || __builtin_mul_overflow(count, dim, &count)) {
      throw Error(
          fmt::format("tensor {} has invalid dims [{}]", label, fmt::join(proto.dims(), ",")));
    }
    shape.push_back(dim);
  }
  ir::TensorType type{shape, dtype, ""};
  int64_t bytes = 0;
  if (__builtin_mul_overflow(count, ir::SizeOf(dtype), &bytes)) {
    throw Error(fmt::format("tensor {} with dims [{}] is too large", label, fmt::join(shape, ",")));
  }
  if (proto.has_raw_data()) {
    if (static_cast<int64_t>(proto.raw_data().size()) != bytes) {
      throw Error(fmt::format("tensor {} of type {} needs {} bytes of raw_data but holds {}", label,
                              ir::ToString(type), bytes, proto.raw_data().size()));
    }
    const auto* data = reinterpret_cast<const uint8_t*>(proto.raw_data().data());
    return ir::Tensor::FromBytes(type, {data, static_cast<size_t>(bytes)});
  }
  // Typed fields: which one holds the data depends on the data type.
  int64_t stored = 0;
  const char* field = "";
  switch (dtype) {
    case DataType::kFloat32:
      stored = proto.float_data_size();
      field = "float_data";
      break;
    case DataType::kFloat64:
      stored = proto.double_data_size();
      field = "double_data";
      break;
    case DataType::kInt64:
      stored = proto.int64_data_size();
      field = "int64_data";
      break;
    default:
      stored = proto.int32_data_size();
      field = "int32_data";
      break;
  }
  if (stored != count) {
    throw Error(fmt::format("tensor {} of type {} needs {} values but its {} holds {}", label,
                            ir::ToString(type), count, field, stored));
  }
  ir::Tensor tensor(type);
  switch (dtype) {
    case DataType::kFloat32:
      CopyField<float>(proto.float_data(), tensor);
      break;
    case DataType::kFloat64:
      CopyField<double>(proto.double_data(), tensor);
      break;
    case DataType::kInt64:
      CopyField<int64_t>(proto.int64_data(), tensor);
      break;
    case DataType::kInt32:
      CopyField<int32_t>(proto.int32_data(), tensor);
      break;
    case DataType::kInt8:
      CopyField<int8_t>(proto.int32_data(), tensor);
      break;
    case DataType::kUInt8:
      CopyField<uint8_t>(proto.int32_data(), tensor);
      break;
    case DataType::kFloat16:
      CopyField<uint16_t>(proto.int32_data(), tensor);
      break;  // the bits
    case DataType::kBool: {
      uint8_t* out = tensor.data<uint8_t>();
      for (int i = 0; i < proto.int32_data_size(); ++i) out[i] = proto.int32_data(i) != 0 ? 1 : 0;
      break;
    }
  }
  return tensor;
}

void TensorToProto(const ir::Tensor& tensor, onnx::TensorProto* proto, const std::string& name) {
  proto->Clear();
  if (!name.empty()) proto->set_name(name);
  for (int64_t dim : tensor.shape()) proto->add_dims(dim);
  proto->set_data_type(DataTypeToOnnx(tensor.dtype()));
  if (tensor.num_bytes() > 0) {
    proto->set_raw_data(tensor.raw_data(), static_cast<size_t>(tensor.num_bytes()));
  } else {
    proto->set_raw_data("");
  }
}

ir::Tensor ReadTensorProtoFile(const std::string& path) {
  std::string bytes = ReadFileBytes(path, "tensor file");
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) {
    throw Error(fmt::format("not a valid ONNX TensorProto file: {}", path),
                ir::ErrorLocation{.file = path});
  }
  try {
    return TensorFromProto(proto);
  } catch (const Error& e) {
    throw e.WithFile(path);
  }
}

void WriteTensorProtoFile(const ir::Tensor& tensor, const std::string& path,
                          const std::string& name) {
  onnx::TensorProto proto;
  TensorToProto(tensor, &proto, name);
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) {
    throw Error(
        fmt::format("cannot serialize tensor {} for {}", ir::ToString(tensor.type()), path));
  }
  // Opening a named pipe for writing would wait for a reader.
  if (std::string kind = ir::NotRegularFileKind(path); !kind.empty()) {
    throw Error(fmt::format("cannot write tensor file {}: it is {}", path, kind), {.file = path});
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw Error(fmt::format("cannot write tensor file {}", path));
}

std::vector<ir::Tensor> ReadTensorProtoDirectory(const std::string& dir,
                                                 const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    throw Error(fmt::format("test-data directory {} does not exist or is not a directory", dir));
  }
  // Collects the indices present, so that a gap (input_0.pb, input_2.pb) is reported instead of
  // silently dropping the files after it.
  std::set<int64_t> indices;
  std::string head = prefix + "_";
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    std::string file = entry.path().filename().string();
    if (file.size() <= head.size() + 3 || file.rfind(head, 0) != 0) continue;
    if (file.substr(file.size() - 3) != ".pb") continue;
    std::string digits = file.substr(head.size(), file.size() - head.size() - 3);
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    indices.insert(std::stoll(digits));
  }
  if (error) {
    throw Error(fmt::format("cannot list test-data directory {}: {}", dir, error.message()));
  }
  if (indices.empty()) throw Error(fmt::format("directory {} holds no {}_0.pb", dir, prefix));
  std::vector<ir::Tensor> tensors;
  int64_t expected = 0;
  for (int64_t index : indices) {
    if (index != expected) {
      throw Error(fmt::format("directory {} has no {}_{}.pb but has {}_{}.pb", dir, prefix,
                              expected, prefix, index));
    }
    tensors.push_back(
        ReadTensorProtoFile((fs::path(dir) / fmt::format("{}_{}.pb", prefix, index)).string()));
    ++expected;
  }
  return tensors;
}

}  // namespace tandem::frontend
