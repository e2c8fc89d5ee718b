// Conversion between ONNX TensorProto messages and Tandem tensors, and the ONNX test-data file
// convention (a directory holding input_0.pb, input_1.pb, ..., output_0.pb, ...: one serialized
// TensorProto per file).
//
// Protobuf types are only forward-declared here; code that calls the TensorProto overloads
// includes <onnx/onnx_pb.h> itself and links the tandem_onnx target.
#pragma once

#include <string>
#include <vector>

#include "ir/tensor.h"
#include "ir/type.h"

namespace onnx {
class TensorProto;
}  // namespace onnx

namespace tandem::frontend {

// The Tandem dtype of an ONNX TensorProto data type code (TensorProto::FLOAT ...). Throws Error
// naming the ONNX type for the ones Tandem has no dtype for (string, complex, bfloat16 ...).
ir::DataType DataTypeFromOnnx(int onnx_type);
// The ONNX TensorProto data type code of a Tandem dtype.
int DataTypeToOnnx(ir::DataType dtype);

// Reads the data of `proto` (raw_data or the typed fields float_data, int32_data, int64_data,
// double_data, uint64_data) into a new tensor. Throws Error naming the tensor when its data is
// stored externally, its size does not match its dims, or its type is not supported.
ir::Tensor TensorFromProto(const onnx::TensorProto& proto);
// Fills `proto` (cleared first) with dims, data type, name and raw_data of `tensor`.
void TensorToProto(const ir::Tensor& tensor, onnx::TensorProto* proto,
                   const std::string& name = "");

// Reads one serialized TensorProto. Throws Error naming the path when the file is missing, empty,
// a directory, or not a valid TensorProto.
ir::Tensor ReadTensorProtoFile(const std::string& path);
// Writes `tensor` as one serialized TensorProto (raw_data form). Throws Error when the file
// cannot be written.
void WriteTensorProtoFile(const ir::Tensor& tensor, const std::string& path,
                          const std::string& name = "");
// Reads `prefix`_0.pb, `prefix`_1.pb, ... from `dir` in index order (prefix is "input" or
// "output" in the ONNX convention). Throws Error when the directory does not exist, holds no such
// file, or the indices have a gap.
std::vector<ir::Tensor> ReadTensorProtoDirectory(const std::string& dir, const std::string& prefix);

}  // namespace tandem::frontend
