// GraphExecutor (graph_executor.h): planned memory, input/output copies with checks, node calls.
#include "kiln/runtime/graph_executor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/module_format.h"

namespace kiln::runtime {
namespace {

[[noreturn]] void fail(ErrorKind kind, const std::string& message) { throw RuntimeError(kind, message); }

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

bool is_bool(DLDataType t) { return t.code == kDLUInt && t.bits == 1 && t.lanes == 1; }

// A caller's tensor may describe a bool as DLPack >= 0.8 does (kDLBool = 6, 8 bits).
bool dtype_matches(DLDataType want, DLDataType got) {
  if (want == got) return true;
  return is_bool(want) && got.code == 6 && got.bits == 8 && got.lanes == 1;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Copies between the compact buffer `compact` and the (possibly strided) tensor `t` of the same
// shape: into the buffer when to_compact, else out of it.
void strided_copy(const DLTensor& t, void* compact, size_t elem, bool to_compact) {
  char* base = static_cast<char*>(t.data) + t.byte_offset;
  char* buf = static_cast<char*>(compact);
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  bool dense = t.strides == nullptr;
  if (!dense) {
    int64_t expect = 1;
    dense = true;
    for (int d = t.ndim - 1; d >= 0; --d) {
      if (t.shape[d] != 1 && t.strides[d] != expect) dense = false;
      expect *= t.shape[d];
    }
  }
  if (dense || n == 0) {
    if (n > 0) to_compact ? std::memcpy(buf, base, n * elem) : std::memcpy(base, buf, n * elem);
    return;
  }
  std::vector<int64_t> idx(t.ndim, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (int d = 0; d < t.ndim; ++d) off += idx[d] * t.strides[d];
    char* p = base + off * static_cast<int64_t>(elem);
    to_compact ? std::memcpy(buf + k * elem, p, elem) : std::memcpy(p, buf + k * elem, elem);
    for (int d = t.ndim - 1; d >= 0 && ++idx[d] == t.shape[d]; --d) idx[d] = 0;
  }
}

bool on_device(const DLTensor& t) { return t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost; }

// Throws naming `what` ("input 'x'") unless `t` is CPU memory of the info's dtype and shape.
void check_tensor(const std::string& what, const TensorInfo& info, const DLTensor& t) {
  if (on_device(t))
    fail(ErrorKind::kInvalidArgument,
         what + ": the tensor is not in CPU memory (device type " + std::to_string(t.device.device_type) + ")");
  if (!dtype_matches(info.dtype, t.dtype))
    fail(ErrorKind::kInvalidArgument, what + ": expected dtype " + dtype_str(info.dtype) + ", got " + dtype_str(t.dtype));
  bool same = t.ndim == static_cast<int>(info.shape.size()) && (t.ndim == 0 || t.shape != nullptr);
  for (int d = 0; same && d < t.ndim; ++d) same = t.shape[d] == info.shape[d];
  if (!same)
    fail(ErrorKind::kInvalidArgument, what + ": expected shape " +
                                          shape_str(info.shape.data(), static_cast<int>(info.shape.size())) + ", got " +
                                          (t.ndim > 0 && t.shape == nullptr ? std::string("a null shape") : shape_str(t.shape, t.ndim)));
  if (t.data == nullptr && numel(info.shape) > 0) fail(ErrorKind::kInvalidArgument, what + ": the tensor's data is null");
}

}  // namespace

struct GraphExecutor::Impl {
  std::shared_ptr<const LoadedModule> module;
  std::unique_ptr<void, FreeDeleter> arena;
  std::vector<char*> storage_ptrs;
  std::vector<void*> entry_data;
  std::vector<std::vector<void*>> node_args;
  std::vector<TensorInfo> inputs, outputs;
  std::vector<int> input_entries, output_entries;
  // 1: set from the host, 2: from a device tensor (device modules). Bytes, not vector<bool>: its
  // code would cost the runtime 1 KiB.
  std::vector<uint8_t> input_set;
  // Inputs whose bytes a node may overwrite (memory planning let an intermediate share them)
  // are kept here and copied in at every run, so run() can be repeated.
  std::vector<std::vector<char>> staged;
  std::vector<uint8_t> needs_staging;
  bool have_outputs = false;
  // Device modules: this executor's activations on the device. Host inputs are staged in host
  // memory as for CPU modules, and outputs come back into it when asked for there; device
  // tensors go to and from the device layer, which checks them (device_graph.h).
  std::unique_ptr<DeviceGraphContext> device;
  bool profiling = false;
  std::vector<GraphExecutor::NodeProfile> profile;
  // Dynamic batch (GraphPlan::batch_max > 0): the batch of the next run; the batch each input
  // was set with; outputs whose samples are not adjacent (an entry smaller than its storage)
  // are gathered into `gathered` when viewed. A kernel's batch argument {n, each argument's
  // stride} lives at the end of its node_args, int64 values in void* slots (both 8 bytes), the
  // last pointer pointing at it: no new containers, for the runtime's size budget
  // (tests/c/runtime_size.cmake).
  int64_t batch = 0;
  std::vector<int64_t> input_batch;
  mutable std::vector<std::vector<char>> gathered;
  bool dynamic() const { return batch > 0; }
  // The bytes between two samples of entry e (0 for a constant).
  int64_t stride(int e) const {
    const GraphEntry& g = module->plan().entries[e];
    return g.is_constant ? 0 : batch_stride(module->plan().storage_bytes[g.storage]);
  }
  // A sample's leading dim of an input or output (the plan's batch-1 shape).
  int64_t sample_rows(int entry) const { return module->plan().entries[entry].shape[0]; }
  __attribute__((noinline)) void set_batch(int64_t n) {
    batch = n;
    for (size_t k = 0; k < node_args.size(); ++k)
      node_args[k][module->plan().nodes[k].args.size() + 1] = reinterpret_cast<void*>(static_cast<intptr_t>(n));
    for (size_t i = 0; i < inputs.size(); ++i) inputs[i].shape[0] = n * sample_rows(input_entries[i]);
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i].shape[0] = n * sample_rows(output_entries[i]);
  }

  size_t bytes_of(int entry) const {
    const GraphEntry& e = module->plan().entries[entry];
    return static_cast<size_t>(numel(e.shape)) * dtype_bytes(e.dtype);
  }
  std::string input_name_list() const {
    std::string s;
    for (const TensorInfo& i : inputs) s += (s.empty() ? "'" : ", '") + i.name + "'";
    return s;
  }
};

GraphExecutor GraphExecutor::load(const std::string& path) { return GraphExecutor(LoadedModule::load(path)); }

GraphExecutor::GraphExecutor(std::shared_ptr<const LoadedModule> module) : impl_(std::make_unique<Impl>()) {
  if (module == nullptr) fail(ErrorKind::kInvalidArgument, "GraphExecutor: null module");
  Impl& m = *impl_;
  m.module = std::move(module);
  const GraphPlan& plan = m.module->plan();
  // All storages live in one arena, each starting on its own page. Allocated one by one, the
  // larger storages were separate mmaps whose relative placement changed with ASLR, and the
  // same module ran bimodally from process to process (shufflenet_v2, 2 threads, AMD EPYC
  // Zen 4: 3.0 or 6.3 ms by launch; one arena: 2.6-2.9 ms on every launch).
  constexpr size_t kPage = 4096;
  std::vector<size_t> starts;
  size_t total = 0;
  // A dynamic-batch plan's storages hold batch_max samples (plan_problem bounds the product).
  const int64_t samples = plan.batch_max > 0 ? plan.batch_max : 1;
  for (int64_t bytes : plan.storage_bytes) {
    starts.push_back(total);
    int64_t all = plan.batch_max > 0 ? batch_stride(bytes) * samples : bytes;
    total += (static_cast<size_t>(all) + kPage - 1) / kPage * kPage;
  }
  void* arena = nullptr;
  if (posix_memalign(&arena, kPage, total == 0 ? kPage : total) != 0 || arena == nullptr)
    fail(ErrorKind::kOutOfMemory, "cannot allocate the " + std::to_string(plan.storage_bytes.size()) +
                                      " activation storages (" + std::to_string(total) + " bytes)");
  m.arena.reset(arena);
  for (size_t start : starts) m.storage_ptrs.push_back(static_cast<char*>(arena) + start);
  for (const GraphEntry& e : plan.entries) {
    // Constants are only ever read by kernels; the const_cast is the kernel ABI's void*.
    void* p = e.is_constant ? static_cast<void*>(const_cast<uint8_t*>(m.module->weights()) + e.offset)
                            : static_cast<void*>(m.storage_ptrs[e.storage] + e.offset);
    m.entry_data.push_back(p);
  }
  const bool dynamic = plan.batch_max > 0;
  static_assert(sizeof(void*) == sizeof(int64_t), "batch arguments share the pointer slots");
  for (const GraphNode& n : plan.nodes) {
    std::vector<void*> args;
    for (int a : n.args) args.push_back(m.entry_data[a]);
    if (dynamic) {
      // The kernel's last argument points at {n, each argument's stride} (ir::PrimFunc::batch_loop),
      // kept after it in this vector, which is never resized again. (Lvalues: push_back(const&)
      // is the one instantiation the runtime has.)
      void* slot = nullptr;
      args.push_back(slot);
      args.push_back(slot);  // n: set_batch
      for (int a : n.args) {
        slot = reinterpret_cast<void*>(static_cast<intptr_t>(m.stride(a)));
        args.push_back(slot);
      }
      args[n.args.size()] = &args[n.args.size() + 1];
    }
    m.node_args.push_back(std::move(args));
  }
  auto info = [&](const GraphIO& io) {
    const GraphEntry& e = plan.entries[io.entry];
    return TensorInfo{io.name, e.dtype, e.shape};
  };
  for (const GraphIO& io : plan.inputs) {
    m.inputs.push_back(info(io));
    m.input_entries.push_back(io.entry);
    const GraphEntry& in = plan.entries[io.entry];
    int64_t lo = in.offset, hi = in.offset + static_cast<int64_t>(m.bytes_of(io.entry));
    bool shared = false;
    for (size_t f = 0; f < plan.entries.size() && !shared; ++f) {
      const GraphEntry& e = plan.entries[f];
      if (static_cast<int>(f) == io.entry || e.is_constant || e.storage != in.storage) continue;
      int64_t elo = e.offset, ehi = e.offset + static_cast<int64_t>(m.bytes_of(static_cast<int>(f)));
      shared = elo < hi && lo < ehi && ehi > elo && hi > lo;
    }
    m.needs_staging.push_back(shared);
    m.staged.emplace_back(shared ? m.bytes_of(io.entry) * static_cast<size_t>(samples) : 0);
  }
  m.input_set.assign(m.inputs.size(), 0);
  m.input_batch = std::vector<int64_t>(m.inputs.size());
  for (const GraphIO& io : plan.outputs) {
    m.outputs.push_back(info(io));
    m.output_entries.push_back(io.entry);
    const bool gather = m.stride(io.entry) != static_cast<int64_t>(m.bytes_of(io.entry));
    m.gathered.emplace_back(dynamic && gather ? m.bytes_of(io.entry) * static_cast<size_t>(samples) : 0);
  }
  if (dynamic) m.set_batch(plan.batch_min);
  // Errors from the device library are rethrown as this library's own (its exception types are
  // its own copies).
  if (const DeviceGraph* g = m.module->device_graph()) try {
      m.device = g->new_context();
    } catch (const std::exception& e) {
      fail(ErrorKind::kOutOfMemory, std::string("cannot set up the device memory of an inference: ") + e.what());
    }
}

GraphExecutor::GraphExecutor(GraphExecutor&&) noexcept = default;
GraphExecutor& GraphExecutor::operator=(GraphExecutor&&) noexcept = default;
GraphExecutor::~GraphExecutor() = default;

const LoadedModule& GraphExecutor::module() const { return *impl_->module; }
std::shared_ptr<const LoadedModule> GraphExecutor::shared_module() const { return impl_->module; }
int GraphExecutor::num_inputs() const { return static_cast<int>(impl_->inputs.size()); }
int GraphExecutor::num_outputs() const { return static_cast<int>(impl_->outputs.size()); }

const TensorInfo& GraphExecutor::input_info(int index) const {
  if (index < 0 || index >= num_inputs())
    fail(ErrorKind::kInvalidArgument, "input index " + std::to_string(index) + " is out of range (the module has " +
                                          std::to_string(num_inputs()) + " inputs)");
  return impl_->inputs[index];
}

const TensorInfo& GraphExecutor::output_info(int index) const {
  if (index < 0 || index >= num_outputs())
    fail(ErrorKind::kInvalidArgument, "output index " + std::to_string(index) + " is out of range (the module has " +
                                          std::to_string(num_outputs()) + " outputs)");
  return impl_->outputs[index];
}

int GraphExecutor::input_index(const std::string& name) const {
  for (int i = 0; i < num_inputs(); ++i)
    if (impl_->inputs[i].name == name) return i;
  fail(ErrorKind::kInvalidArgument, "the module has no input named '" + name + "' (its inputs: " +
                                        impl_->input_name_list() + ")");
}

int GraphExecutor::output_index(const std::string& name) const {
  for (int i = 0; i < num_outputs(); ++i)
    if (impl_->outputs[i].name == name) return i;
  fail(ErrorKind::kInvalidArgument, "the module has no output named '" + name + "'");
}

void GraphExecutor::set_input(int index, const DLTensor& value) {
  const TensorInfo& info = input_info(index);
  Impl& m = *impl_;
  if (m.device && on_device(value)) {
    m.device->set_input(index, value);
    m.input_set[index] = 2;
    return;
  }
  int entry = m.input_entries[index];
  char* dst = static_cast<char*>(m.needs_staging[index] ? static_cast<void*>(m.staged[index].data()) : m.entry_data[entry]);
  const std::string what = "input '" + info.name + "'";
  const size_t elem = dtype_bytes(info.dtype);
  if (!m.dynamic()) {
    check_tensor(what, info, value);
    strided_copy(value, dst, elem, /*to_compact=*/true);
  } else {
    // n samples of a sample's rows each, n in the plan's range, becomes the batch of the next
    // run (before the shape check: a failed set_input may have changed it); sample b goes to
    // dst + b * the entry's stride.
    const GraphPlan& plan = m.module->plan();
    const int64_t rows = m.sample_rows(entry);
    const int64_t n = value.ndim > 0 && value.shape != nullptr && value.shape[0] > 0 ? value.shape[0] / rows : 0;
    if (n < plan.batch_min || n > plan.batch_max)
      fail(ErrorKind::kInvalidArgument, what + ": batch " + std::to_string(static_cast<uint64_t>(n)) +
                                            " is outside the module's range " + std::to_string(static_cast<uint64_t>(plan.batch_min)) +
                                            ".." + std::to_string(static_cast<uint64_t>(plan.batch_max)));
    if (n != m.batch) {
      m.have_outputs = false;  // the output shapes change with the batch
      m.set_batch(n);
    }
    std::vector<int64_t>& shape = m.inputs[index].shape;  // n * rows now
    check_tensor(what, info, value);
    const int64_t sample_elems = numel(shape) / n;
    DLTensor sample = value;
    sample.shape = shape.data();
    shape[0] = rows;  // one sample's shape while copying
    for (int64_t b = 0; b < n; ++b) {
      // A sample's first element: row b * rows, strided or not.
      int64_t first = value.strides ? b * rows * value.strides[0] : b * sample_elems;
      sample.byte_offset = value.byte_offset + static_cast<uint64_t>(first) * elem;
      strided_copy(sample, dst + b * m.stride(entry), elem, /*to_compact=*/true);
    }
    shape[0] = n * rows;
    m.input_batch[index] = n;
  }
  // Outputs stay valid: an input that shares bytes with any other entry is staged, so this
  // copy never lands on an output.
  m.input_set[index] = 1;
}

void GraphExecutor::set_input(const std::string& name, const DLTensor& value) { set_input(input_index(name), value); }

void GraphExecutor::run() {
  Impl& m = *impl_;
  const GraphPlan& plan = m.module->plan();
  for (size_t i = 0; i < m.inputs.size(); ++i)
    if (!m.input_set[i]) fail(ErrorKind::kState, "run: input '" + m.inputs[i].name + "' was never set");
  m.have_outputs = false;
  if (m.device) {
    std::vector<const void*> in;
    for (size_t i = 0; i < m.inputs.size(); ++i)
      in.push_back(m.input_set[i] == 2   ? nullptr
                   : m.needs_staging[i] ? m.staged[i].data()
                                        : m.entry_data[m.input_entries[i]]);
    try {
      m.device->run(in);
    } catch (const std::exception& e) {
      fail(ErrorKind::kKernel, std::string("run: ") + e.what());
    }
    m.have_outputs = true;
    return;
  }
  for (size_t i = 0; m.dynamic() && i < m.inputs.size(); ++i)
    if (m.input_batch[i] != m.batch)
      fail(ErrorKind::kInvalidArgument, "run: input '" + m.inputs[i].name + "' has another batch than the last input set");
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    if (!m.needs_staging[i]) continue;
    if (!m.dynamic()) {
      std::memcpy(m.entry_data[m.input_entries[i]], m.staged[i].data(), m.staged[i].size());
      continue;
    }
    const int e = m.input_entries[i];
    for (int64_t b = 0; b < m.batch; ++b)
      std::memcpy(static_cast<char*>(m.entry_data[e]) + b * m.stride(e), m.staged[i].data() + b * m.stride(e), m.bytes_of(e));
  }
  using Clock = std::chrono::steady_clock;
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    const std::vector<void*>& args = m.node_args[n];
    Clock::time_point t0;
    if (m.profiling) t0 = Clock::now();
    // A dynamic-batch node's batch argument is one more; its values follow (constructor).
    int32_t rc = m.module->node_kernel(n)(args.data(), static_cast<int32_t>(plan.nodes[n].args.size()) + m.dynamic());
    if (m.profiling) m.profile[n].seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    if (rc != 0) {
      const GraphNode& node = plan.nodes[n];
      std::string why = rc == -1                       ? " (a heap allocation failed)"
                        : rc == -2                     ? " (wrong number of arguments: the plan does not fit the kernel)"
                        : rc == KILN_MODULE_NO_RUNTIME ? " (the module is not connected to the runtime's thread pool)"
                                                       : "";
      fail(ErrorKind::kKernel, "run: node " + std::to_string(n) + " '" + node.label + "' (kernel " + node.kernel +
                                   ") failed with code " + std::to_string(rc) + why);
    }
  }
  m.have_outputs = true;
}

DLTensor GraphExecutor::output_view(int index) const {
  const TensorInfo& info = output_info(index);
  if (!impl_->have_outputs) fail(ErrorKind::kState, "output '" + info.name + "' has not been computed (call run first)");
  DLTensor t{};
  const Impl& m = *impl_;
  const int e = m.output_entries[index];
  t.data = m.entry_data[e];
  // Samples lie a storage apart; when that is more than the entry, they are gathered.
  if (!m.gathered[index].empty()) {
    std::vector<char>& g = m.gathered[index];
    for (int64_t b = 0; b < m.batch; ++b)
      std::memcpy(g.data() + b * m.bytes_of(e), static_cast<char*>(t.data) + b * m.stride(e), m.bytes_of(e));
    t.data = g.data();
  }
  if (impl_->device) impl_->device->output_to_host(index, t.data);
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = static_cast<int>(info.shape.size());
  t.dtype = info.dtype;
  t.shape = const_cast<int64_t*>(info.shape.data());
  t.strides = nullptr;
  t.byte_offset = 0;
  return t;
}

void GraphExecutor::get_output(int index, DLTensor& out) const {
  const TensorInfo& info = output_info(index);
  if (impl_->device && on_device(out)) return impl_->device->get_output(index, out);
  DLTensor view = output_view(index);
  check_tensor("output '" + info.name + "'", info, out);
  strided_copy(out, view.data, dtype_bytes(info.dtype), /*to_compact=*/false);
}

NDArray GraphExecutor::get_output(int index) const {
  const TensorInfo& info = output_info(index);
  NDArray a = NDArray::empty(info.shape, info.dtype);
  get_output(index, *a.dltensor());
  return a;
}

void GraphExecutor::set_profiling(bool on) {
  Impl& m = *impl_;
  m.profiling = on;
  if (!on) return;
  m.profile.clear();
  for (const GraphNode& n : m.module->plan().nodes) m.profile.push_back(NodeProfile{n.kernel, n.label, {}});
}

const std::vector<GraphExecutor::NodeProfile>& GraphExecutor::profile() const { return impl_->profile; }

std::string GraphExecutor::profile_table() const {
  const std::vector<NodeProfile>& prof = impl_->profile;
  if (prof.empty() || prof[0].seconds.empty()) return "";
  std::vector<double> median;
  std::vector<size_t> order;
  double total = 0;
  for (size_t n = 0; n < prof.size(); ++n) {
    std::vector<double> v = prof[n].seconds;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    median.push_back(v[v.size() / 2]);
    order.push_back(n);
    total += median.back();
  }
  // Slowest first; ties in plan order.
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return median[a] != median[b] ? median[a] > median[b] : a < b; });
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%4s %10s %7s %7s  %-44s %s\n", "node", "median ms", "share", "samples", "kernel", "label");
  out += line;
  for (size_t n : order) {
    const NodeProfile& p = prof[n];
    std::snprintf(line, sizeof line, "%4zu %10.4f %6.2f%% %7zu  %-44s ", n, median[n] * 1e3,
                  total > 0 ? 100.0 * median[n] / total : 0.0, p.seconds.size(), p.kernel.c_str());
    out += line + p.label + "\n";
  }
  std::snprintf(line, sizeof line, "sum of node medians %.4f ms over %zu nodes\n", total * 1e3, prof.size());
  return out + line;
}

}  // namespace kiln::runtime
