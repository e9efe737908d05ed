// GraphPlan <-> JSON, and the FNV-1a checksum of weights blobs.
//
// The JSON is what a compiled .so carries, so plan_from_json is the runtime's first line of
// defence against a damaged or foreign artifact: it checks every index and byte range it can
// (an entry inside its storage, a constant inside the weights, node arguments naming entries)
// and names the offending field, instead of letting the executor read out of bounds later.
#include "kiln/runtime/graph_plan.h"

#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "kiln/runtime/ndarray.h"
#include "kiln/support/error.h"

namespace kiln::runtime {

using nlohmann::json;

namespace {

constexpr const char* kFormat = "kiln-graph-plan";
constexpr int kFormatVersion = 1;

std::string hex64(uint64_t v) {
  char buf[19];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

// The inverse of dtype_str for the scalar types a plan can hold.
DLDataType parse_dtype(const std::string& s, const std::string& where) {
  if (s == "bool") return dtype_bool();
  struct Prefix { const char* name; uint8_t code; };
  // "bfloat" before "float" would not matter (no common prefix), but "uint" must precede "int".
  for (Prefix p : {Prefix{"bfloat", kDLBfloat}, Prefix{"float", kDLFloat}, Prefix{"uint", kDLUInt}, Prefix{"int", kDLInt}}) {
    std::string n = p.name;
    if (s.compare(0, n.size(), n) != 0) continue;
    std::string rest = s.substr(n.size());
    if (rest.empty() || rest.find_first_not_of("0123456789") != std::string::npos) break;
    int bits = std::stoi(rest);
    if (bits != 8 && bits != 16 && bits != 32 && bits != 64) break;
    return make_dtype(p.code, static_cast<uint8_t>(bits));
  }
  KILN_THROW() << "graph plan: " << where << ": unknown dtype '" << s << "'";
  return {};
}

// Typed field access naming the path on a mismatch ("graph plan: entries[3].shape: expected
// an array of integers").
const json& field(const json& obj, const char* key, const std::string& where) {
  KILN_USER_CHECK(obj.is_object()) << "graph plan: " << where << ": expected an object";
  auto it = obj.find(key);
  KILN_USER_CHECK(it != obj.end()) << "graph plan: " << where << ": missing field '" << key << "'";
  return *it;
}
std::string path(const std::string& where, const char* key) { return where.empty() ? key : where + "." + key; }
int64_t get_int(const json& obj, const char* key, const std::string& where) {
  const json& v = field(obj, key, where);
  KILN_USER_CHECK(v.is_number_integer()) << "graph plan: " << path(where, key) << ": expected an integer";
  return v.get<int64_t>();
}
std::string get_str(const json& obj, const char* key, const std::string& where) {
  const json& v = field(obj, key, where);
  KILN_USER_CHECK(v.is_string()) << "graph plan: " << path(where, key) << ": expected a string";
  return v.get<std::string>();
}
bool get_bool(const json& obj, const char* key, const std::string& where) {
  const json& v = field(obj, key, where);
  KILN_USER_CHECK(v.is_boolean()) << "graph plan: " << path(where, key) << ": expected true or false";
  return v.get<bool>();
}
std::vector<int64_t> get_ints(const json& obj, const char* key, const std::string& where) {
  const json& v = field(obj, key, where);
  KILN_USER_CHECK(v.is_array()) << "graph plan: " << path(where, key) << ": expected an array of integers";
  std::vector<int64_t> out;
  for (const json& e : v) {
    KILN_USER_CHECK(e.is_number_integer()) << "graph plan: " << path(where, key) << ": expected an array of integers";
    out.push_back(e.get<int64_t>());
  }
  return out;
}
const json& get_array(const json& obj, const char* key) {
  const json& v = field(obj, key, "");
  KILN_USER_CHECK(v.is_array()) << "graph plan: " << key << ": expected an array";
  return v;
}
std::string at(const char* key, size_t i) { return std::string(key) + "[" + std::to_string(i) + "]"; }

int64_t entry_bytes(const GraphEntry& e) {
  int64_t n = static_cast<int64_t>(dtype_bytes(e.dtype));
  for (int64_t d : e.shape) n *= d;
  return n;
}

std::vector<GraphIO> parse_io(const json& root, const char* key, size_t num_entries) {
  std::vector<GraphIO> out;
  const json& arr = get_array(root, key);
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string w = at(key, i);
    GraphIO io{get_str(arr[i], "name", w), static_cast<int>(get_int(arr[i], "entry", w))};
    KILN_USER_CHECK(io.entry >= 0 && static_cast<size_t>(io.entry) < num_entries)
        << "graph plan: " << w << " ('" << io.name << "'): entry " << io.entry << " out of range (" << num_entries
        << " entries)";
    out.push_back(std::move(io));
  }
  return out;
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

std::string to_json(const GraphPlan& plan) {
  json entries = json::array();
  for (const GraphEntry& e : plan.entries)
    entries.push_back({{"dtype", dtype_str(e.dtype)}, {"shape", e.shape}, {"storage", e.storage},
                       {"offset", e.offset}, {"constant", e.is_constant}});
  json nodes = json::array();
  for (const GraphNode& n : plan.nodes) nodes.push_back({{"kernel", n.kernel}, {"args", n.args}, {"label", n.label}});
  auto io = [](const std::vector<GraphIO>& v) {
    json a = json::array();
    for (const GraphIO& x : v) a.push_back({{"name", x.name}, {"entry", x.entry}});
    return a;
  };
  // json objects keep keys sorted, so the text depends only on the plan. The checksum is a hex
  // string: JSON readers outside C++ often hold numbers as doubles, which would round it.
  json root = {{"format", kFormat},
               {"format_version", kFormatVersion},
               {"kiln_version", plan.kiln_version},
               {"target", plan.target},
               {"storage_bytes", plan.storage_bytes},
               {"entries", std::move(entries)},
               {"nodes", std::move(nodes)},
               {"inputs", io(plan.inputs)},
               {"outputs", io(plan.outputs)},
               {"weights_bytes", plan.weights_bytes},
               {"weights_checksum", hex64(plan.weights_checksum)}};
  return root.dump(1);
}

GraphPlan plan_from_json(const std::string& text) {
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  KILN_USER_CHECK(!root.is_discarded()) << "graph plan: not valid JSON";
  auto fmt = root.is_object() ? root.find("format") : root.end();
  KILN_USER_CHECK(root.is_object() && fmt != root.end() && *fmt == kFormat)
      << "graph plan: not a kiln graph plan (missing \"format\": \"" << kFormat << "\")";
  int64_t version = get_int(root, "format_version", "");
  KILN_USER_CHECK(version == kFormatVersion)
      << "graph plan: format_version " << version << " is not supported (this runtime reads " << kFormatVersion << ")";

  GraphPlan plan;
  plan.kiln_version = get_str(root, "kiln_version", "");
  plan.target = get_str(root, "target", "");
  plan.storage_bytes = get_ints(root, "storage_bytes", "");
  for (size_t s = 0; s < plan.storage_bytes.size(); ++s)
    KILN_USER_CHECK(plan.storage_bytes[s] >= 0) << "graph plan: storage_bytes[" << s << "] is negative";
  plan.weights_bytes = get_int(root, "weights_bytes", "");
  KILN_USER_CHECK(plan.weights_bytes >= 0) << "graph plan: weights_bytes is negative";
  std::string sum = get_str(root, "weights_checksum", "");
  KILN_USER_CHECK(sum.size() == 16 && sum.find_first_not_of("0123456789abcdef") == std::string::npos)
      << "graph plan: weights_checksum '" << sum << "' is not 16 hex digits";
  plan.weights_checksum = std::stoull(sum, nullptr, 16);

  const json& entries = get_array(root, "entries");
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string w = at("entries", i);
    GraphEntry e;
    e.dtype = parse_dtype(get_str(entries[i], "dtype", w), w + ".dtype");
    e.shape = get_ints(entries[i], "shape", w);
    for (int64_t d : e.shape) KILN_USER_CHECK(d >= 0) << "graph plan: " << w << ".shape has a negative extent";
    e.storage = static_cast<int>(get_int(entries[i], "storage", w));
    e.offset = get_int(entries[i], "offset", w);
    e.is_constant = get_bool(entries[i], "constant", w);
    KILN_USER_CHECK(e.offset >= 0) << "graph plan: " << w << ".offset is negative";
    int64_t end = e.offset + entry_bytes(e);
    if (e.is_constant) {
      KILN_USER_CHECK(e.storage == -1) << "graph plan: " << w << " is a constant but names storage " << e.storage;
      KILN_USER_CHECK(end <= plan.weights_bytes)
          << "graph plan: " << w << " (constant, bytes [" << e.offset << ", " << end << ")) lies outside the "
          << plan.weights_bytes << "-byte weights";
    } else {
      KILN_USER_CHECK(e.storage >= 0 && static_cast<size_t>(e.storage) < plan.storage_bytes.size())
          << "graph plan: " << w << ".storage " << e.storage << " out of range (" << plan.storage_bytes.size()
          << " storages)";
      KILN_USER_CHECK(end <= plan.storage_bytes[e.storage])
          << "graph plan: " << w << " (bytes [" << e.offset << ", " << end << ")) does not fit storage " << e.storage
          << " of " << plan.storage_bytes[e.storage] << " bytes";
    }
    plan.entries.push_back(std::move(e));
  }

  const json& nodes = get_array(root, "nodes");
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::string w = at("nodes", i);
    GraphNode n;
    n.kernel = get_str(nodes[i], "kernel", w);
    KILN_USER_CHECK(!n.kernel.empty()) << "graph plan: " << w << ".kernel is empty";
    n.label = get_str(nodes[i], "label", w);
    for (int64_t a : get_ints(nodes[i], "args", w)) {
      KILN_USER_CHECK(a >= 0 && static_cast<size_t>(a) < plan.entries.size())
          << "graph plan: " << w << " (" << n.kernel << "): argument entry " << a << " out of range ("
          << plan.entries.size() << " entries)";
      n.args.push_back(static_cast<int>(a));
    }
    plan.nodes.push_back(std::move(n));
  }
  plan.inputs = parse_io(root, "inputs", plan.entries.size());
  plan.outputs = parse_io(root, "outputs", plan.entries.size());
  return plan;
}

}  // namespace kiln::runtime
