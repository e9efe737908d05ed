// GraphPlan <-> its binary form (graph_plan.h), and the FNV-1a checksum of weights blobs.
//
// The binary form is what a compiled .so carries, so decode_plan is the runtime's first line of
// defence against a damaged or foreign artifact: it reads through a bounded cursor, checks every
// count against the bytes left before allocating anything, and names the field it could not
// read. What the numbers mean (an entry inside its storage, node arguments naming entries) is
// plan_problem's to check (module_loader.h). A binary form rather than JSON keeps a parser
// library out of the runtime (issue 11: the whole runtime is under 100 KiB).
#include "kiln/runtime/graph_plan.h"

#include <cstring>

#include "kiln/runtime/ndarray.h"
#include "kiln/support/error.h"

namespace kiln::runtime {
namespace {

constexpr char kMagic[4] = {'K', 'P', 'L', 'N'};

class Writer {
 public:
  template <class T>
  void put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
    out_.append(b, sizeof(T));
  }
  void put_str(const std::string& s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}

  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  std::string get_str(const char* what) {
    uint32_t n = get<uint32_t>(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  // A count of items each at least `min_item_bytes` long: more than the bytes left could hold is
  // a corrupt count, refused before anything is allocated for it.
  size_t get_count(const char* what, size_t min_item_bytes) {
    uint32_t n = get<uint32_t>(what);
    if (static_cast<uint64_t>(n) * min_item_bytes > left()) bad(std::string(what) + ": count " + std::to_string(n) + " exceeds the plan's size");
    return n;
  }
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  [[noreturn]] static void bad(const std::string& why) { throw Error("graph plan: " + why); }

 private:
  void need(size_t n, const char* what) {
    if (n > left()) bad(std::string("truncated while reading ") + what);
  }
  const uint8_t* p_;
  const uint8_t* end_;
};

bool known_dtype(DLDataType t) {
  if (t.lanes != 1) return false;
  if (t.code == kDLUInt && t.bits == 1) return true;  // bool
  bool int_like = t.code == kDLInt || t.code == kDLUInt;
  if (int_like) return t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
  if (t.code == kDLFloat) return t.bits == 16 || t.bits == 32 || t.bits == 64;
  return t.code == kDLBfloat && t.bits == 16;
}

void encode_io(Writer& w, const std::vector<GraphIO>& list) {
  w.put<uint32_t>(static_cast<uint32_t>(list.size()));
  for (const GraphIO& io : list) {
    w.put_str(io.name);
    w.put<int32_t>(io.entry);
  }
}

std::vector<GraphIO> decode_io(Reader& r, const char* what) {
  std::vector<GraphIO> list(r.get_count(what, 8));
  for (GraphIO& io : list) {
    io.name = r.get_str(what);
    io.entry = r.get<int32_t>(what);
  }
  return list;
}

}  // namespace

uint64_t fnv1a64(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string encode_plan(const GraphPlan& plan) {
  Writer w;
  const bool device = plan.device_type != kDLCPU;
  for (char c : kMagic) w.put<char>(c);
  // A dynamic-batch plan is a CPU plan (kiln::compile makes no other) and has costs.
  const bool dynamic = plan.batch_max > 0 && !device;
  if (dynamic)
    w.put<uint32_t>(kDynamicBatchPlanFormatVersion);
  else if (plan.has_costs)
    w.put<uint32_t>(device ? kDeviceCostPlanFormatVersion : kCostPlanFormatVersion);
  else
    w.put<uint32_t>(device ? kDevicePlanFormatVersion : kPlanFormatVersion);
  w.put_str(plan.kiln_version);
  w.put_str(plan.target);
  if (device) w.put<int32_t>(plan.device_type);
  w.put<int64_t>(plan.weights_bytes);
  w.put<uint64_t>(plan.weights_checksum);
  w.put<uint32_t>(static_cast<uint32_t>(plan.storage_bytes.size()));
  for (int64_t b : plan.storage_bytes) w.put<int64_t>(b);
  w.put<uint32_t>(static_cast<uint32_t>(plan.entries.size()));
  for (const GraphEntry& e : plan.entries) {
    w.put<uint8_t>(e.dtype.code);
    w.put<uint8_t>(e.dtype.bits);
    w.put<uint16_t>(e.dtype.lanes);
    w.put<uint8_t>(e.is_constant ? 1 : 0);
    if (e.shape.size() > 255) throw InternalError("encode_plan: an entry of rank " + std::to_string(e.shape.size()));
    w.put<uint8_t>(static_cast<uint8_t>(e.shape.size()));
    w.put<int32_t>(e.storage);
    w.put<int64_t>(e.offset);
    for (int64_t d : e.shape) w.put<int64_t>(d);
  }
  w.put<uint32_t>(static_cast<uint32_t>(plan.nodes.size()));
  for (const GraphNode& n : plan.nodes) {
    w.put_str(n.kernel);
    w.put_str(n.label);
    w.put<uint32_t>(static_cast<uint32_t>(n.args.size()));
    for (int a : n.args) w.put<int32_t>(a);
    if (device) {
      for (uint32_t v : n.launch.grid) w.put<uint32_t>(v);
      for (uint32_t v : n.launch.block) w.put<uint32_t>(v);
      w.put<uint32_t>(n.launch.dynamic_shared_bytes);
    }
    if (!plan.has_costs && !dynamic) continue;  // version 5 always has costs
    w.put<double>(n.flops);
    w.put<int64_t>(n.bytes);
  }
  encode_io(w, plan.inputs);
  encode_io(w, plan.outputs);
  if (dynamic) {
    w.put<int64_t>(plan.batch_min);
    w.put<int64_t>(plan.batch_max);
  }
  return w.take();
}

GraphPlan decode_plan(const void* data, size_t size) {
  Reader r(static_cast<const uint8_t*>(data), size);
  char magic[4];
  for (char& c : magic) c = r.get<char>("the header");
  if (std::memcmp(magic, kMagic, 4) != 0) Reader::bad("not a kiln graph plan (no KPLN header)");
  uint32_t version = r.get<uint32_t>("the format version");
  if (version < kPlanFormatVersion || version > kDynamicBatchPlanFormatVersion)
    Reader::bad("format version " + std::to_string(version) + " is not supported (this runtime reads " +
                std::to_string(kPlanFormatVersion) + " to " + std::to_string(kDynamicBatchPlanFormatVersion) + ")");
  const bool dynamic = version == kDynamicBatchPlanFormatVersion;
  const bool device = version == kDevicePlanFormatVersion || version == kDeviceCostPlanFormatVersion;
  GraphPlan plan;
  plan.has_costs = version >= kCostPlanFormatVersion;
  plan.kiln_version = r.get_str("kiln_version");
  plan.target = r.get_str("target");
  if (device) {
    plan.device_type = r.get<int32_t>("the device type");
    if (plan.device_type != kDLCUDA && plan.device_type != kDLOpenCL)
      Reader::bad("unknown device type " + std::to_string(plan.device_type));
  }
  plan.weights_bytes = r.get<int64_t>("weights_bytes");
  plan.weights_checksum = r.get<uint64_t>("weights_checksum");
  plan.storage_bytes.resize(r.get_count("storage_bytes", 8));
  for (int64_t& b : plan.storage_bytes) b = r.get<int64_t>("storage_bytes");
  plan.entries.resize(r.get_count("entries", 18));
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    GraphEntry& e = plan.entries[i];
    e.dtype.code = r.get<uint8_t>("an entry's dtype");
    e.dtype.bits = r.get<uint8_t>("an entry's dtype");
    e.dtype.lanes = r.get<uint16_t>("an entry's dtype");
    if (!known_dtype(e.dtype)) Reader::bad("entry " + std::to_string(i) + " has an unknown dtype " + dtype_str(e.dtype));
    e.is_constant = r.get<uint8_t>("an entry's kind") != 0;
    size_t rank = r.get<uint8_t>("an entry's rank");
    e.storage = r.get<int32_t>("an entry's storage");
    e.offset = r.get<int64_t>("an entry's offset");
    e.shape.resize(rank);
    for (int64_t& d : e.shape) d = r.get<int64_t>("an entry's shape");
  }
  plan.nodes.resize(r.get_count("nodes", 12));
  for (GraphNode& n : plan.nodes) {
    n.kernel = r.get_str("a node's kernel");
    n.label = r.get_str("a node's label");
    n.args.resize(r.get_count("a node's arguments", 4));
    for (int& a : n.args) a = r.get<int32_t>("a node's arguments");
    if (device) {
      for (uint32_t& v : n.launch.grid) v = r.get<uint32_t>("a node's launch");
      for (uint32_t& v : n.launch.block) v = r.get<uint32_t>("a node's launch");
      n.launch.dynamic_shared_bytes = r.get<uint32_t>("a node's launch");
    }
    if (!plan.has_costs) continue;
    n.flops = r.get<double>("a node's cost");
    n.bytes = r.get<int64_t>("a node's cost");
    if (!(n.flops >= 0) || n.bytes < 0) Reader::bad("node '" + n.kernel + "' has a negative cost");
  }
  plan.inputs = decode_io(r, "inputs");
  plan.outputs = decode_io(r, "outputs");
  if (dynamic) {
    // plan_problem checks the range.
    plan.batch_min = r.get<int64_t>("the batch range");
    plan.batch_max = r.get<int64_t>("the batch range");
  }
  if (r.left() != 0) Reader::bad(std::to_string(r.left()) + " bytes after the end of the plan");
  return plan;
}

}  // namespace kiln::runtime
