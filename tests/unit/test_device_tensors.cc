// Device tensors through the C API (kiln_runtime.h, "Device tensors"), and the device memory
// plan behind them: examples/tiny_cnn compiled for opencl and run by PoCL, its input and output
// in OpenCL buffers from kiln_module_device_alloc, against the host-tensor run and the
// reference output; then every refusal, with its status and a message naming the culprit.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <numeric>

#include "kiln/relay/frontend/onnx.h"
#include "kiln/runtime/kiln_runtime.h"
#include "kiln/runtime/module_loader.h"
#include "test_export_util.h"
#include "test_gpu_util.h"

using Catch::Matchers::Contains;
using namespace kiln;

namespace {

std::string tiny_cnn(const std::string& file) {
  std::string here = __FILE__;  // <repo>/tests/unit/test_device_tensors.cc
  return here.substr(0, here.rfind("/tests/unit/")) + "/examples/tiny_cnn/" + file;
}

// tiny_cnn compiled for opencl and loaded through the C API, with its reference data.
struct OpenCLModel {
  test_export::ScratchDir dir;
  std::string path = dir / "tiny_cnn.opencl.so";
  relay::NamedTensor input = relay::load_tensor_pb(tiny_cnn("test_data_set_0/input_0.pb"));
  relay::NamedTensor output = relay::load_tensor_pb(tiny_cnn("test_data_set_0/output_0.pb"));
  std::vector<int64_t> in_shape{input.value.shape().begin(), input.value.shape().end()};
  std::vector<int64_t> out_shape{output.value.shape().begin(), output.value.shape().end()};
  kiln_module* m = nullptr;

  OpenCLModel() {
    CompileOptions options;
    options.target = Target::parse("opencl");
    export_library(compile(relay::from_onnx(tiny_cnn("model.onnx")), options), path);
    REQUIRE(kiln_module_load(path.c_str(), &m) == KILN_OK);
  }
  ~OpenCLModel() { kiln_module_free(m); }
  size_t in_bytes() const { return input.value.nbytes(); }
  size_t out_bytes() const { return output.value.nbytes(); }
};

DLTensor tensor(void* data, DLDevice device, std::vector<int64_t>& shape) {
  DLTensor t{};
  t.data = data;
  t.device = device;
  t.ndim = static_cast<int>(shape.size());
  t.dtype = {kDLFloat, 32, 1};
  t.shape = shape.data();
  return t;
}

// A buffer of the module's device, freed at the end of the scope.
struct DeviceBuffer {
  const kiln_module* m;
  void* data = nullptr;
  DeviceBuffer(const kiln_module* mod, uint64_t bytes) : m(mod) {
    REQUIRE(kiln_module_device_alloc(m, bytes, &data) == KILN_OK);
  }
  ~DeviceBuffer() { CHECK(kiln_module_device_free(m, data) == KILN_OK); }
};

// Calls `call`, expecting `status` and a message containing every one of `parts`.
template <typename F>
void expect_error(F call, kiln_status status, const std::vector<std::string>& parts) {
  CHECK(call() == status);
  std::string message = kiln_last_error();
  INFO(message);
  for (const std::string& p : parts) CHECK_THAT(message, Contains(p));
}

}  // namespace

TEST_CASE("device tensors: an opencl module takes and gives OpenCL buffers as it does host memory",
          "[device][opencl][c_api]") {
  REQUIRE_OPENCL(dev);
  OpenCLModel model;
  kiln_module* m = model.m;
  kiln_device_info info;
  REQUIRE(kiln_module_device_info(m, &info) == KILN_OK);
  CHECK(info.device.device_type == kDLOpenCL);
  CHECK(info.device.device_id == 0);
  CHECK(info.context != nullptr);
  CHECK(info.queue != nullptr);

  // The host-tensor run, as before.
  DLTensor host_in = tensor(const_cast<uint8_t*>(model.input.value.data()), {kDLCPU, 0}, model.in_shape);
  std::vector<float> host_out(model.out_bytes() / 4), device_out(host_out.size());
  DLTensor host_y = tensor(host_out.data(), {kDLCPU, 0}, model.out_shape);
  REQUIRE(kiln_module_set_input_index(m, 0, &host_in) == KILN_OK);
  REQUIRE(kiln_module_run(m) == KILN_OK);
  REQUIRE(kiln_module_get_output(m, 0, &host_y) == KILN_OK);

  // The same with the input and the output in OpenCL buffers, in a context of the module.
  DeviceBuffer x(m, model.in_bytes()), y(m, model.out_bytes());
  DLTensor dev_x = tensor(x.data, info.device, model.in_shape);
  DLTensor dev_y = tensor(y.data, info.device, model.out_shape);
  DLTensor back = tensor(device_out.data(), {kDLCPU, 0}, model.out_shape);
  kiln_context* ctx = nullptr;
  REQUIRE(kiln_context_create(m, &ctx) == KILN_OK);
  REQUIRE(kiln_module_device_copy(m, &host_in, &dev_x) == KILN_OK);
  REQUIRE(kiln_context_set_input_index(ctx, 0, &dev_x) == KILN_OK);
  // Set once, the device input serves every run, and the output is taken on the device.
  for (int run = 0; run < 2; ++run) {
    REQUIRE(kiln_context_run(ctx) == KILN_OK);
    REQUIRE(kiln_context_get_output(ctx, 0, &dev_y) == KILN_OK);
    std::fill(device_out.begin(), device_out.end(), 0.0f);
    REQUIRE(kiln_module_device_copy(m, &dev_y, &back) == KILN_OK);
    CHECK(device_out == host_out);  // same kernels, same device: the same bits
  }
  // After a run, the host path still reads the output (copied to the host when first asked).
  std::fill(device_out.begin(), device_out.end(), 0.0f);
  REQUIRE(kiln_context_get_output(ctx, 0, &back) == KILN_OK);
  CHECK(device_out == host_out);
  kiln_context_free(ctx);

  // Against PyTorch's output (kiln check's tolerance).
  const float* ref = model.output.value.data_as<float>();
  for (size_t i = 0; i < host_out.size(); ++i) {
    INFO("element " << i);
    CHECK(std::fabs(host_out[i] - ref[i]) <= 1e-4f + 1e-3f * std::fabs(ref[i]));
  }

  // byte_offset counts bytes into the buffer: the input again, 256 bytes into a bigger buffer.
  DeviceBuffer big(m, model.in_bytes() + 256);
  DLTensor offset_x = tensor(big.data, info.device, model.in_shape);
  offset_x.byte_offset = 256;
  REQUIRE(kiln_module_device_copy(m, &host_in, &offset_x) == KILN_OK);
  REQUIRE(kiln_module_set_input_index(m, 0, &offset_x) == KILN_OK);
  REQUIRE(kiln_module_run(m) == KILN_OK);
  REQUIRE(kiln_module_get_output(m, 0, &back) == KILN_OK);
  CHECK(device_out == host_out);
}

TEST_CASE("device tensors: the device memory follows the plan's storages", "[device][opencl]") {
  REQUIRE_OPENCL(dev);
  OpenCLModel model;
  auto loaded = runtime::LoadedModule::load(model.path);
  const runtime::GraphPlan& plan = loaded->plan();
  int64_t storages = std::accumulate(plan.storage_bytes.begin(), plan.storage_bytes.end(), int64_t{0});
  int64_t entries = 0;
  for (const runtime::GraphEntry& e : plan.entries)
    if (!e.is_constant)
      entries += std::accumulate(e.shape.begin(), e.shape.end(), int64_t{(e.dtype.bits + 7) / 8}, std::multiplies<>());
  // kiln's planner puts every entry at offset 0 of its storage, inputs in storages of their own:
  // one buffer per storage, sized as the CPU plan sizes it, less than a buffer per entry.
  CHECK(loaded->device_graph()->new_context()->activation_bytes() == storages);
  CHECK(storages < entries);
}

TEST_CASE("device tensors: refusals name the input or output", "[device][opencl][c_api][errors]") {
  REQUIRE_OPENCL(dev);
  OpenCLModel model;
  kiln_module* m = model.m;
  DeviceBuffer x(m, model.in_bytes()), y(m, model.out_bytes());
  DLTensor dev_x = tensor(x.data, {kDLOpenCL, 0}, model.in_shape);
  DLTensor dev_y = tensor(y.data, {kDLOpenCL, 0}, model.out_shape);
  const std::string input = "input '" + model.input.name + "'";

  // An output asked for on the device before any run.
  expect_error([&] { return kiln_module_get_output(m, 0, &dev_y); }, KILN_ERROR_STATE,
               {"kiln_module_get_output: output '", "has not been computed (call run first)"});
  // Another kind of device, another device id.
  DLTensor cuda_x = dev_x;
  cuda_x.device = {kDLCUDA, 0};
  expect_error([&] { return kiln_module_set_input_index(m, 0, &cuda_x); }, KILN_ERROR_INVALID_ARGUMENT,
               {input, "the tensor is on CUDA device 0, the module runs on OpenCL device 0"});
  DLTensor other_id = dev_x;
  other_id.device.device_id = 1;
  expect_error([&] { return kiln_module_set_input_index(m, 0, &other_id); }, KILN_ERROR_INVALID_ARGUMENT,
               {input, "the tensor is on OpenCL device 1"});
  // A wrong shape, strides that are not compact, a buffer too small for the tensor.
  std::vector<int64_t> wrong_shape = model.in_shape;
  wrong_shape.back() += 1;
  DLTensor wrong = tensor(x.data, {kDLOpenCL, 0}, wrong_shape);
  expect_error([&] { return kiln_module_set_input_index(m, 0, &wrong); }, KILN_ERROR_INVALID_ARGUMENT,
               {input, "expected shape"});
  std::vector<int64_t> strides(model.in_shape.size(), 1);
  DLTensor strided = dev_x;
  strided.strides = strides.data();
  expect_error([&] { return kiln_module_set_input_index(m, 0, &strided); }, KILN_ERROR_INVALID_ARGUMENT,
               {input, "must be compact"});
  DLTensor shifted = dev_x;
  shifted.byte_offset = 4;
  expect_error([&] { return kiln_module_set_input_index(m, 0, &shifted); }, KILN_ERROR_INVALID_ARGUMENT,
               {input, "its cl_mem holds " + std::to_string(model.in_bytes()) + " bytes, " +
                           std::to_string(model.in_bytes() + 4) + " needed"});
  // A cl_mem of another OpenCL context (the tests' own device).
  void* foreign = dev->alloc(model.in_bytes());
  DLTensor foreign_x = tensor(foreign, {kDLOpenCL, 0}, model.in_shape);
  expect_error([&] { return kiln_module_set_input_index(m, 0, &foreign_x); }, KILN_ERROR_INVALID_ARGUMENT,
               {input, "belongs to another OpenCL context than the module's"});
  dev->free(foreign);
  // The output side checks the same way, naming the output.
  DLTensor host_in = tensor(const_cast<uint8_t*>(model.input.value.data()), {kDLCPU, 0}, model.in_shape);
  REQUIRE(kiln_module_set_input_index(m, 0, &host_in) == KILN_OK);
  REQUIRE(kiln_module_run(m) == KILN_OK);
  DLTensor small_y = tensor(x.data, {kDLOpenCL, 0}, model.out_shape);
  small_y.dtype = {kDLInt, 32, 1};
  expect_error([&] { return kiln_module_get_output(m, 0, &small_y); }, KILN_ERROR_INVALID_ARGUMENT,
               {"output '", "expected dtype float32, got int32"});

  // kiln_module_device_*: copies need the device on one side; the device refuses a huge buffer.
  expect_error([&] { return kiln_module_device_copy(m, &host_in, &host_in); }, KILN_ERROR_INVALID_ARGUMENT,
               {"kiln_module_device_copy: both tensors are in host memory"});
  expect_error([&] { return kiln_module_device_copy(m, &host_in, &dev_y); }, KILN_ERROR_INVALID_ARGUMENT,
               {"to: expected shape"});
  void* huge = reinterpret_cast<void*>(0x1);
  expect_error([&] { return kiln_module_device_alloc(m, uint64_t{1} << 62, &huge); }, KILN_ERROR_OUT_OF_MEMORY,
               {"kiln_module_device_alloc: cannot allocate 4611686018427387904 bytes on OpenCL: "});
  CHECK(huge == nullptr);

  // A CPU module has no device: a device tensor is refused by name, and so is device memory.
  test_export::DenseModel dense;
  std::string cpu_path = model.dir / "dense.so";
  export_library(dense.model, cpu_path);
  kiln_module* cpu = nullptr;
  REQUIRE(kiln_module_load(cpu_path.c_str(), &cpu) == KILN_OK);
  kiln_device_info info{{kDLOpenCL, 3}, &info, &info};
  REQUIRE(kiln_module_device_info(cpu, &info) == KILN_OK);
  CHECK(info.device.device_type == kDLCPU);
  CHECK(info.context == nullptr);
  std::vector<int64_t> x_shape{test_export::kB, test_export::kI};
  DLTensor cpu_x = tensor(x.data, {kDLOpenCL, 0}, x_shape);
  expect_error([&] { return kiln_module_set_input(cpu, "x", &cpu_x); }, KILN_ERROR_INVALID_ARGUMENT,
               {"input 'x': the tensor is not in CPU memory (device type 4)"});
  void* none = nullptr;
  expect_error([&] { return kiln_module_device_alloc(cpu, 16, &none); }, KILN_ERROR_INVALID_ARGUMENT,
               {"kiln_module_device_alloc: the module runs on the CPU: it has no device memory"});
  kiln_module_free(cpu);
}
