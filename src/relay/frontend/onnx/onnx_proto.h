// Private to the ONNX frontend: protobuf <-> kiln conversions (the only files that include the
// libonnx protobuf classes; nothing public exposes them).
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "kiln/relay/host_tensor.h"

namespace kiln::relay::onnx_frontend {

// ONNX TensorProto.DataType code -> DataType; kiln::Error naming `what` and the type for types
// kiln does not compute in (string, complex, float8, int4, ...).
DataType dtype_from_onnx(int code, const std::string& what);
int dtype_to_onnx(DataType t);
// "FLOAT", "FLOAT8E4M3FN", ... ("type 42" when unknown).
std::string onnx_dtype_name(int code);

// A TensorProto's value: raw_data or the typed fields, or external data relative to model_dir.
HostTensor tensor_from_proto(const ::onnx::TensorProto& t, const std::string& model_dir);

}  // namespace kiln::relay::onnx_frontend
