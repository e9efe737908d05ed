// The op table: every op's lowering by name, filled once by the family files through the
// wrapper all lowerings go through.
#include <map>
#include <mutex>

#include "kiln/relay/op.h"
#include "kiln/support/error.h"
#include "kiln/te/ops/transform.h"
#include "op_table.h"

namespace kiln::lower {

namespace {
std::map<std::string, OpLowering>& table() {
  static std::map<std::string, OpLowering> t;
  return t;
}

void fill_table() {
  static std::once_flag once;
  std::call_once(once, [] {
    detail::add_elemwise_lowerings();
    detail::add_transform_lowerings();
    detail::add_reduce_lowerings();
    detail::add_nn_lowerings();
    detail::add_integer_lowerings();
    detail::add_quantize_lowerings();
  });
}
}  // namespace

const OpLowering* find_op_lowering(const std::string& op) {
  fill_table();
  auto it = table().find(op);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> lowered_ops() {
  fill_table();
  std::vector<std::string> names;
  for (const auto& [name, f] : table()) names.push_back(name);
  return names;
}

std::vector<int64_t> te_shape(const relay::Type& t) {
  const auto* tt = t.as<relay::TensorTypeNode>();
  KILN_USER_CHECK(tt != nullptr) << "expected a tensor type, got " << t.str();
  // Valid ONNX (a Slice past the end, a zero-size Split) that kiln does not implement yet: the
  // same verdict as group_to_te's for a group's inputs.
  for (int64_t d : tt->shape)
    KILN_SUPPORTED(d > 0) << "tensor " << t.str() << " is empty; kernels on tensors with zero elements are not supported";
  return tt->shape.empty() ? std::vector<int64_t>{1} : tt->shape;
}

namespace detail {

ir::DataType out_dtype(const relay::Type& t) {
  const auto* tt = t.as<relay::TensorTypeNode>();
  KILN_CHECK(tt != nullptr) << "tensor output type expected, got " << t.str();
  return tt->dtype;
}

bool scalar_with_empty_axes(const te::Tensor& x, size_t attr_entries) {
  return attr_entries == 0 && x.ndim() == 1 && x.shape()[0] == 1;
}

namespace {
// Prefixes the op (and node) to an error that does not name it yet.
std::string with_context(const std::string& op, const relay::Attrs& attrs, const std::string& msg) {
  std::string ctx = attrs.context().empty() ? op : attrs.context();
  if (msg.rfind(ctx, 0) == 0) return msg;
  return ctx + ": " + msg;
}

std::vector<int64_t> without_ones(const std::vector<int64_t>& s) {
  std::vector<int64_t> r;
  for (int64_t d : s)
    if (d != 1) r.push_back(d);
  return r;
}
}  // namespace

void set_lowering(const std::string& op, OpLowering f) {
  const relay::OpDef& def = relay::get_op(op);
  KILN_CHECK(!table().count(op)) << "two lowerings of op '" << op << "'";
  table()[op] = [op, f, &def](const std::vector<te::Tensor>& inputs, const relay::Attrs& attrs,
                              const relay::Type& out_type) -> std::vector<te::Tensor> {
    try {
      KILN_USER_CHECK(static_cast<int>(inputs.size()) >= def.min_args &&
                      (def.max_args < 0 || static_cast<int>(inputs.size()) <= def.max_args))
          << "got " << inputs.size() << " inputs";
      std::vector<relay::Type> want;
      if (const auto* tt = out_type.as<relay::TupleTypeNode>()) want = tt->fields;
      else want.push_back(out_type);
      for (const relay::Type& t : want) te_shape(t);  // rejects empty outputs up front
      std::vector<te::Tensor> outs = f(inputs, attrs, out_type);
      KILN_CHECK(outs.size() == want.size()) << op << " lowered to " << outs.size() << " tensors for type "
                                             << out_type.str();
      for (size_t i = 0; i < outs.size(); ++i) {
        std::vector<int64_t> shape = te_shape(want[i]);
        KILN_CHECK(outs[i].dtype() == out_dtype(want[i]))
            << op << " lowered output " << i << " to " << outs[i].dtype().str() << ", type says " << want[i].str();
        if (outs[i].shape() == shape) continue;
        // Only an arrangement of 1s may differ (same elements, same order); anything else is a bug.
        KILN_CHECK(without_ones(outs[i].shape()) == without_ones(shape))
            << op << " lowered output " << i << " to a shape that does not fit " << want[i].str();
        outs[i] = te::ops::reshape(outs[i], shape, op);
      }
      return outs;
    } catch (const InternalError&) {
      throw;
    } catch (const UnsupportedError& e) {  // keeps its kind: tools report it with status 3
      throw UnsupportedError(with_context(op, attrs, e.what()));
    } catch (const Error& e) {
      throw Error(with_context(op, attrs, e.what()));
    }
  };
}

}  // namespace detail

}  // namespace kiln::lower
