// kiln_device_graph_create: a device plan run over the DeviceAPI (runtime/device_graph.h).
//
// Device memory follows the plan's storage assignment, allocated once per context (contexts run
// concurrently, so only the constants, uploaded once per module, are shared):
//  - every entry other than an input gets the buffer of its (storage, offset) pair, sized for the
//    largest entry placed there. Entries the CPU plan lets share bytes have disjoint lifetimes, so
//    they may share a buffer too. kiln's planner (plan_memory) puts entries at offset 0 only, so
//    this is one buffer per storage. A plan with an entry inside a storage gets a buffer of its
//    own for that offset rather than a CUDA pointer offset or an OpenCL sub-buffer:
//    clCreateSubBuffer wants origins aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN, kernels assume
//    aligned arguments, and one path for both drivers is the path PoCL tests.
//  - every input gets a buffer of its own, so that an input set once (from the host or the device)
//    survives any number of runs, as the CPU executor's staging ensures. plan_memory gives inputs
//    storages of their own anyway.
#include <cstdio>
#include <map>

#include "device_internal.h"
#include "kiln/runtime/module_loader.h"

namespace kiln::runtime {
namespace {

size_t entry_bytes(const GraphEntry& e) {
  size_t n = (e.dtype.bits * e.dtype.lanes + 7) / 8;
  for (int64_t d : e.shape) n *= static_cast<size_t>(d);
  return n;
}

class Graph;

class Context : public DeviceGraphContext {
 public:
  explicit Context(const Graph& g);
  ~Context() override;
  void set_input(int index, const DLTensor& value) override;
  void run(const std::vector<const void*>& host_inputs) override;
  void output_to_host(int index, void* host) override;
  void get_output(int index, const DLTensor& out) override;
  int64_t activation_bytes() const override { return bytes_; }

 private:
  void release();
  // Checks the caller's device tensor for entry `entry`, named `what`; returns its bytes.
  size_t check(const std::string& what, int entry, const DLTensor& t) const;

  const Graph& g_;
  std::vector<void*> own_;        // buffers this context allocated
  std::vector<void*> entry_buf_;  // per plan entry
  std::vector<std::vector<void*>> node_args_;
  std::vector<uint8_t> fetched_;  // per output: copied to the host since the last run
  bool ran_ = false;              // the last run finished: the outputs are there
  int64_t bytes_ = 0;
};

class Graph : public DeviceGraph {
 public:
  Graph(const GraphPlan& plan, const std::vector<DeviceImage>& images, const uint8_t* weights)
      : plan_(plan),
        device_(open_device(plan.device_type == kDLCUDA ? DeviceKind::kCUDA : DeviceKind::kOpenCL)) {
    module_ = device_->load_module(images);
    constant_buf_.assign(plan.entries.size(), nullptr);
    for (size_t i = 0; i < plan.entries.size(); ++i) {
      const GraphEntry& e = plan.entries[i];
      if (!e.is_constant) continue;
      const size_t bytes = entry_bytes(e);
      constant_buf_[i] = device_->alloc(bytes);
      device_->copy_to_device(constant_buf_[i], weights + e.offset, bytes);
    }
  }
  ~Graph() override {
    module_.reset();
    for (void* b : constant_buf_) device_->free(b);
  }
  std::string description() const override { return device_->description(); }
  std::unique_ptr<DeviceGraphContext> new_context() const override { return std::make_unique<Context>(*this); }

  void device_info(kiln_device_info* info) const override {
    info->device = device();
    device_->native_handles(&info->context, &info->queue);
  }
  void* alloc(size_t bytes) const override {
    try {
      return device_->alloc(bytes);
    } catch (const Error& e) {
      throw RuntimeError(ErrorKind::kOutOfMemory, "cannot allocate " + std::to_string(bytes) + " bytes on " +
                                                      device_->description() + ": " + e.what());
    }
  }
  void free(void* data) const override { device_->free(data); }
  void copy(const DLTensor& from, const DLTensor& to) const override { device::copy_tensor(from, to, device(), *device_); }

  // The device open_device opened: ordinal 0.
  DLDevice device() const { return DLDevice{static_cast<DLDeviceType>(plan_.device_type), 0}; }

  const GraphPlan plan_;
  std::unique_ptr<DeviceAPI> device_;
  std::unique_ptr<DeviceModule> module_;
  std::vector<void*> constant_buf_;
};

Context::Context(const Graph& g) : g_(g) {
  const GraphPlan& plan = g.plan_;
  entry_buf_ = g.constant_buf_;
  // Buffers by key: (storage, offset), or (-1 - entry, 0) for an input: storages count from 0.
  std::map<std::pair<int64_t, int64_t>, size_t> buffer_of;
  std::vector<size_t> buffer_bytes;
  std::vector<int64_t> key_storage(plan.entries.size());
  for (size_t i = 0; i < plan.entries.size(); ++i) key_storage[i] = plan.entries[i].storage;
  for (const GraphIO& io : plan.inputs) key_storage[io.entry] = -1 - io.entry;
  std::vector<size_t> entry_buffer(plan.entries.size());
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    const GraphEntry& e = plan.entries[i];
    if (e.is_constant) continue;
    const std::pair<int64_t, int64_t> key(key_storage[i], key_storage[i] < 0 ? 0 : e.offset);
    auto [it, fresh] = buffer_of.emplace(key, buffer_bytes.size());
    if (fresh) buffer_bytes.push_back(0);
    buffer_bytes[it->second] = std::max(buffer_bytes[it->second], entry_bytes(e));
    entry_buffer[i] = it->second;
  }
  try {
    for (size_t bytes : buffer_bytes) {
      own_.push_back(g.device_->alloc(bytes));
      bytes_ += static_cast<int64_t>(bytes);
    }
  } catch (...) {
    release();
    throw;
  }
  for (size_t i = 0; i < plan.entries.size(); ++i)
    if (!plan.entries[i].is_constant) entry_buf_[i] = own_[entry_buffer[i]];
  for (const GraphNode& n : plan.nodes) {
    std::vector<void*> args;
    for (int a : n.args) args.push_back(entry_buf_[a]);
    node_args_.push_back(std::move(args));
  }
  fetched_.assign(plan.outputs.size(), 0);
}

Context::~Context() { release(); }

void Context::release() {
  for (void* b : own_) g_.device_->free(b);
  own_.clear();
}

size_t Context::check(const std::string& what, int entry, const DLTensor& t) const {
  const GraphEntry& e = g_.plan_.entries[entry];
  return device::check_tensor(what, t, e.dtype, e.shape.data(), static_cast<int>(e.shape.size()), g_.device(),
                              *g_.device_);
}

void Context::set_input(int index, const DLTensor& value) {
  const GraphIO& io = g_.plan_.inputs[index];
  KILN_CHECK(!device::is_host(value)) << "the runtime keeps host tensors";
  const size_t bytes = check("input '" + io.name + "'", io.entry, value);
  g_.device_->copy_device_to_device(entry_buf_[io.entry], value.data, bytes, 0, value.byte_offset);
  g_.device_->synchronize();
}

void Context::run(const std::vector<const void*>& host_inputs) {
  const GraphPlan& plan = g_.plan_;
  DeviceAPI& dev = *g_.device_;
  fetched_.assign(plan.outputs.size(), 0);
  ran_ = false;
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    int e = plan.inputs[i].entry;
    if (host_inputs[i]) dev.copy_to_device(entry_buf_[e], host_inputs[i], entry_bytes(plan.entries[e]));
  }
  for (size_t n = 0; n < plan.nodes.size(); ++n) g_.module_->launch(plan.nodes[n].kernel, plan.nodes[n].launch, node_args_[n]);
  dev.synchronize();
  ran_ = true;
}

void Context::output_to_host(int index, void* host) {
  const GraphEntry& e = g_.plan_.entries[g_.plan_.outputs[index].entry];
  if (fetched_[index] || e.is_constant) return;
  g_.device_->copy_to_host(host, entry_buf_[g_.plan_.outputs[index].entry], entry_bytes(e));
  fetched_[index] = 1;
}

void Context::get_output(int index, const DLTensor& out) {
  const GraphIO& io = g_.plan_.outputs[index];
  KILN_CHECK(!device::is_host(out)) << "the runtime keeps host tensors";
  // The runtime's own message and status for the host path (graph_executor.cc).
  if (!ran_) throw RuntimeError(ErrorKind::kState, "output '" + io.name + "' has not been computed (call run first)");
  const size_t bytes = check("output '" + io.name + "'", io.entry, out);
  g_.device_->copy_device_to_device(out.data, entry_buf_[io.entry], bytes, out.byte_offset, 0);
  g_.device_->synchronize();
}

}  // namespace
}  // namespace kiln::runtime

extern "C" __attribute__((visibility("default"))) kiln::runtime::DeviceGraph* kiln_device_graph_create(
    const kiln::runtime::GraphPlan* plan, const void* images, size_t images_size, const uint8_t* weights, char* error,
    size_t error_size) {
  try {
    return new kiln::runtime::Graph(*plan, kiln::runtime::decode_device_images(images, images_size), weights);
  } catch (const std::exception& e) {
    std::snprintf(error, error_size, "%s", e.what());
    return nullptr;
  }
}
