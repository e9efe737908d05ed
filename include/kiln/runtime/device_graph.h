// A compiled model's plan run on a device: the interface between the runtime (graph_executor,
// module_loader) and the device layer's library, libkiln_device.so, which the runtime loads
// with dlopen the first time a device module is loaded (so CPU-only programs never need it and
// libkiln_runtime.so stays small). Everything crosses the boundary through one C entry point
// and these virtual interfaces.
//
// Device images: what a device module carries in its kiln_module_device_images symbol
// (module_format.h), little-endian: "KIMG", u32 count, then per image u32 format
// (DeviceImage::Format), u32 sm, u64 offset and u64 size (offsets from the blob's start), then
// the bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kiln/runtime/graph_plan.h"
#include "kiln/runtime/kiln_runtime.h"
#include "kiln/support/error.h"

namespace kiln::runtime {

// One compiled form of a device module. A module carries several (cubins for sm_80 and sm_90,
// PTX for newer GPUs, or OpenCL C) and the device picks the one it can run.
struct DeviceImage {
  enum Format { kCubin, kPTX, kOpenCLSource };
  Format format = kOpenCLSource;
  int sm = 0;         // cubin / PTX: the compute capability it targets, major*10+minor (80, 90)
  std::string bytes;  // cubin bytes, or PTX / OpenCL C text
};

// One inference at a time on the device, with its own activation buffers. Tensors on the device
// (`set_input`, `get_output`) must be on the module's device (DeviceGraph::device_info), of the
// entry's dtype and shape, compact (strides null or dense) and in a buffer that holds them; else
// kiln::Error names the input or output ("input 'x': ...") and what is wrong. Their copies are
// finished when the call returns, so the caller may reuse or read its buffer at once.
class DeviceGraphContext {
 public:
  virtual ~DeviceGraphContext() = default;
  // Copies `value`, a tensor on the device, into input `index` (plan.inputs order).
  virtual void set_input(int index, const DLTensor& value) = 0;
  // Copies each host input (compact memory, plan.inputs order; null for an input that set_input
  // gave last) to the device, launches every node in order and waits. Outputs stay on the
  // device until asked for: a caller taking them as device tensors never pays for a host copy.
  virtual void run(const std::vector<const void*>& host_inputs) = 0;
  // Copies output `index` of the last run into compact host memory, once per run (later calls
  // do nothing); outputs that are constants are not copied: the caller reads them from the weights.
  virtual void output_to_host(int index, void* host) = 0;
  // Copies output `index` of the last run into `out`, a tensor on the device. Throws
  // RuntimeError(kState) when no run has finished since the context was made or a run failed.
  virtual void get_output(int index, const DLTensor& out) = 0;
  // Device bytes of this context's activation buffers (inputs, outputs and intermediates).
  virtual int64_t activation_bytes() const = 0;
};

// A device module loaded once: device opened, images loaded, constants uploaded. Contexts made
// from it share those, and may run concurrently from different threads. The rest serves the C
// API's kiln_module_device_* functions (kiln_runtime.h says what they promise).
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  virtual std::string description() const = 0;  // the device's
  virtual std::unique_ptr<DeviceGraphContext> new_context() const = 0;
  virtual void device_info(kiln_device_info* info) const = 0;
  // Throws RuntimeError(kOutOfMemory) naming the size when the device refuses.
  virtual void* alloc(size_t bytes) const = 0;
  virtual void free(void* data) const = 0;
  // Copies between two tensors of the same dtype and shape, each in host memory or on the device
  // (not both in host memory).
  virtual void copy(const DLTensor& from, const DLTensor& to) const = 0;
};

inline std::string encode_device_images(const std::vector<DeviceImage>& images) {
  std::string out = "KIMG";
  auto put = [&](auto v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  put(static_cast<uint32_t>(images.size()));
  uint64_t offset = 4 + 4 + images.size() * 24;
  for (const DeviceImage& im : images) {
    put(static_cast<uint32_t>(im.format));
    put(static_cast<uint32_t>(im.sm));
    put(offset);
    put(static_cast<uint64_t>(im.bytes.size()));
    offset += im.bytes.size();
  }
  for (const DeviceImage& im : images) out += im.bytes;
  return out;
}

// Throws kiln::Error naming what is wrong with a damaged blob.
inline std::vector<DeviceImage> decode_device_images(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  auto get = [&](size_t at, auto* v) {
    KILN_USER_CHECK(at + sizeof(*v) <= size) << "device images: truncated";
    std::memcpy(v, p + at, sizeof(*v));
  };
  KILN_USER_CHECK(size >= 8 && std::memcmp(p, "KIMG", 4) == 0) << "device images: no KIMG header";
  uint32_t n = 0;
  get(4, &n);
  KILN_USER_CHECK(n <= (size - 8) / 24) << "device images: count " << n << " exceeds the blob";
  std::vector<DeviceImage> images(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t format = 0, sm = 0;
    uint64_t offset = 0, bytes = 0;
    get(8 + i * 24, &format);
    get(12 + i * 24, &sm);
    get(16 + i * 24, &offset);
    get(24 + i * 24, &bytes);
    KILN_USER_CHECK(format <= DeviceImage::kOpenCLSource) << "device images: image " << i << " has format " << format;
    KILN_USER_CHECK(offset <= size && bytes <= size - offset) << "device images: image " << i << " lies outside the blob";
    images[i].format = static_cast<DeviceImage::Format>(format);
    images[i].sm = static_cast<int>(sm);
    images[i].bytes.assign(p + offset, bytes);
  }
  return images;
}

}  // namespace kiln::runtime

// The entry point of libkiln_device.so: the device graph of `plan` (a device plan), or null
// with a message in `error` (e.g. "needs a CUDA driver: libcuda.so.1 not found").
extern "C" kiln::runtime::DeviceGraph* kiln_device_graph_create(const kiln::runtime::GraphPlan* plan,
                                                                 const void* images, size_t images_size,
                                                                 const uint8_t* weights, char* error,
                                                                 size_t error_size);
typedef kiln::runtime::DeviceGraph* (*kiln_device_graph_create_fn)(const kiln::runtime::GraphPlan*, const void*, size_t,
                                                                  const uint8_t*, char*, size_t);
