// kiln_device_graph_create: a device plan run over the DeviceAPI (runtime/device_graph.h).
//
// Device memory: one buffer per constant (uploaded once per module) and one per activation
// entry of a context (allocated once per context). Entries that the CPU plan lets share a
// storage get buffers of their own: OpenCL buffers cannot be offset like pointers. Simple and
// correct; it spends more device memory than the plan's storages would (a known weakness).
#include <cstdio>
#include <mutex>

#include "kiln/runtime/device_graph.h"

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
  void run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) override;

 private:
  const Graph& g_;
  std::vector<void*> own_;                // buffers this context allocated
  std::vector<void*> entry_buf_;          // per plan entry
  std::vector<std::vector<void*>> node_args_;
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

  const GraphPlan plan_;
  std::unique_ptr<DeviceAPI> device_;
  std::unique_ptr<DeviceModule> module_;
  std::vector<void*> constant_buf_;
};

Context::Context(const Graph& g) : g_(g) {
  const GraphPlan& plan = g.plan_;
  entry_buf_ = g.constant_buf_;
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    if (plan.entries[i].is_constant) continue;
    own_.push_back(g.device_->alloc(entry_bytes(plan.entries[i])));
    entry_buf_[i] = own_.back();
  }
  for (const GraphNode& n : plan.nodes) {
    std::vector<void*> args;
    for (int a : n.args) args.push_back(entry_buf_[a]);
    node_args_.push_back(std::move(args));
  }
}

Context::~Context() {
  for (void* b : own_) g_.device_->free(b);
}

void Context::run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
  const GraphPlan& plan = g_.plan_;
  DeviceAPI& dev = *g_.device_;
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    int e = plan.inputs[i].entry;
    dev.copy_to_device(entry_buf_[e], inputs[i], entry_bytes(plan.entries[e]));
  }
  for (size_t n = 0; n < plan.nodes.size(); ++n) g_.module_->launch(plan.nodes[n].kernel, plan.nodes[n].launch, node_args_[n]);
  dev.synchronize();
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    int e = plan.outputs[i].entry;
    if (plan.entries[e].is_constant) continue;  // the caller reads it from the weights
    dev.copy_to_host(outputs[i], entry_buf_[e], entry_bytes(plan.entries[e]));
  }
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
