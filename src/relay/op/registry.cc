// The op table and its one-time initialization: each family registers its ops here, in a
// fixed order, the first time any op is looked up.
#include <map>
#include <memory>

#include "kiln/relay/op.h"
#include "kiln/support/error.h"
#include "op_families.h"

namespace kiln::relay {

namespace {
std::map<std::string, std::unique_ptr<OpDef>>& table() {
  static std::map<std::string, std::unique_ptr<OpDef>> t;
  return t;
}

void ensure_registered() {
  // A function-local static runs the registration exactly once, thread-safely.
  static const bool done = [] {
    register_elemwise_ops();
    register_broadcast_ops();
    register_reduce_ops();
    register_conv_ops();
    register_matmul_ops();
    register_pool_ops();
    register_norm_ops();
    register_transform_ops();
    register_gather_ops();
    register_sort_ops();
    register_image_ops();
    register_layout_ops();
    register_integer_ops();
    register_quantize_ops();
    return true;
  }();
  (void)done;
}
}  // namespace

const char* pattern_name(OpPattern p) {
  switch (p) {
    case OpPattern::Elementwise: return "elementwise";
    case OpPattern::Broadcast: return "broadcast";
    case OpPattern::Injective: return "injective";
    case OpPattern::CommReduce: return "comm_reduce";
    case OpPattern::OutElementwiseFusable: return "out_elementwise_fusable";
    case OpPattern::Tuple: return "tuple";
    case OpPattern::Opaque: return "opaque";
  }
  return "?";
}

OpDef& register_op(const std::string& name, int min_args, int max_args, OpPattern pattern, TypeRelation relation,
                   std::string attrs_doc) {
  auto& t = table();
  KILN_CHECK(!t.count(name)) << "op '" << name << "' registered twice";
  auto def = std::make_unique<OpDef>();
  def->name = name;
  def->min_args = min_args;
  def->max_args = max_args;
  def->pattern = pattern;
  def->relation = std::move(relation);
  def->attrs_doc = std::move(attrs_doc);
  OpDef& ref = *def;
  t.emplace(name, std::move(def));
  return ref;
}

const OpDef* find_op(const std::string& name) {
  ensure_registered();
  auto it = table().find(name);
  return it == table().end() ? nullptr : it->second.get();
}

const OpDef& get_op(const std::string& name) {
  const OpDef* op = find_op(name);
  KILN_USER_CHECK(op != nullptr) << "unknown graph op '" << name << "'";
  return *op;
}

std::vector<std::string> list_ops() {
  ensure_registered();
  std::vector<std::string> names;
  for (const auto& [n, d] : table()) names.push_back(n);
  return names;
}


}  // namespace kiln::relay
