// group_to_te: a fused group as one te program; kernel_name.
#include <fmt/format.h>

#include <map>

#include "kiln/lower/group_to_te.h"
#include "kiln/lower/prepack_weights.h"
#include "kiln/lower/schedule_group.h"
#include "kiln/support/error.h"

namespace kiln::lower {

namespace {

using namespace relay;  // NOLINT(google-build-using-namespace): graph IR types throughout

// te has no rank-0 tensors: a relay scalar is a te tensor of shape [1] (same bytes).
std::vector<int64_t> te_shape(const Shape& s, const std::string& what) {
  for (int64_t d : s)
    KILN_SUPPORTED(d > 0) << what << " has an empty shape " << shape_str(s)
                          << "; kernels on tensors with zero elements are not supported";
  return s.empty() ? std::vector<int64_t>{1} : s;
}

std::string describe(const CallNode* c) {
  return c->name.empty() ? c->op_name() : c->op_name() + " (node '" + c->name + "')";
}

// A scalar constant as a stage of shape [1] the schedule inlines into its readers.
te::Tensor scalar_stage(const ConstantNode* c) {
  const HostTensor& v = c->value;
  DataType t = v.dtype();
  ir::Expr value = t.is_floating() ? ir::make_const(t, v.double_at(0)) : ir::make_int(t, v.int64_at(0));
  return te::compute({1}, [&](ir::Var) { return value; }, "scalar");
}

std::string param_name(const Expr& e, size_t i) {
  if (const auto* v = e.as<VarNode>()) {
    std::string n;
    for (char ch : v->name) n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    if (!n.empty() && !std::isdigit(static_cast<unsigned char>(n[0]))) return n;
  }
  return "p" + std::to_string(i);
}

void check_matches(const te::Tensor& t, const Type& want, const CallNode* c, size_t field) {
  const auto* tt = want.as<TensorTypeNode>();
  KILN_CHECK(tt != nullptr);
  std::vector<int64_t> shape = te_shape(tt->shape, describe(c));
  KILN_CHECK(t.defined() && t.dtype() == tt->dtype && t.shape() == shape)
      << "the lowering of " << describe(c) << " returned " << (t.defined() ? t.dtype().str() : "nothing")
      << (t.defined() ? shape_str(t.shape()) : "") << " for output " << field << " of type " << want.str();
}

}  // namespace

std::vector<te::Tensor> GroupProgram::args() const {
  std::vector<te::Tensor> a = inputs;
  a.insert(a.end(), outputs.begin(), outputs.end());
  return a;
}

GroupProgram group_to_te(const FusedGroup& group, const Strategy& strategy, const PrepackedWeights* prepacked) {
  GroupProgram p;
  std::map<ValueKey, te::Tensor> tensors;
  for (size_t i = 0; i < group.inputs.size(); ++i) {
    const Expr& in = group.inputs[i];
    const auto& tt = in.tensor_type();
    te::Tensor ph = te::placeholder(te_shape(tt.shape, "input " + param_name(in, i)), tt.dtype, param_name(in, i));
    p.inputs.push_back(ph);
    tensors[value_key(in)] = ph;
  }
  for (const Expr& e : group.calls) {
    const auto* c = e.as<CallNode>();
    // The anchor: the strategy's lowering for the target, its packed form when the weight was
    // packed at compile time (the packed constant is then the group input).
    const OpLowering* lower = find_op_lowering(c->op_name());
    const PrepackedWeight* packed = nullptr;
    if (e.same_as(group.anchor)) {
      if (strategy.lower) lower = &strategy.lower;
      auto it = prepacked ? prepacked->find(e.get()) : PrepackedWeights::const_iterator();
      if (prepacked && it != prepacked->end()) {
        KILN_CHECK(strategy.packing.has_value()) << describe(c) << " was prepacked but its strategy packs nothing";
        packed = &it->second;
        lower = &strategy.packing->lower_packed;
      }
    }
    KILN_SUPPORTED(lower != nullptr) << describe(c) << ": no kernel lowering for op '" << c->op_name() << "'";
    std::vector<te::Tensor> args;
    for (size_t i = 0; i < c->args.size(); ++i) {
      const Expr& a = packed && i == packed->arg ? packed->packed : c->args[i];
      if (is_inlined_constant(a)) {
        args.push_back(scalar_stage(a.as<ConstantNode>()));
        continue;
      }
      auto it = tensors.find(value_key(a));
      KILN_CHECK(it != tensors.end()) << describe(c) << " reads a value that is neither a group input nor a member";
      args.push_back(it->second);
    }
    std::vector<te::Tensor> outs;
    try {
      outs = (*lower)(args, c->attrs, c->type);
    } catch (const UnsupportedError& err) {
      // Lowerings name the op; the graph node tells the user which one of many it was.
      throw UnsupportedError(c->name.empty() ? std::string(err.what()) : fmt::format("{} (node '{}')", err.what(), c->name));
    } catch (const Error& err) {
      throw Error(c->name.empty() ? std::string(err.what()) : fmt::format("{} (node '{}')", err.what(), c->name));
    }
    const auto* tuple = c->type.as<TupleTypeNode>();
    size_t fields = tuple ? tuple->fields.size() : 1;
    KILN_CHECK(outs.size() == fields) << "the lowering of " << describe(c) << " returned " << outs.size()
                                      << " tensors for " << fields << " outputs";
    for (size_t f = 0; f < fields; ++f) {
      check_matches(outs[f], tuple ? tuple->fields[f] : c->type, c, f);
      tensors[{e.get(), static_cast<int>(f)}] = outs[f];
    }
    p.member_outputs.push_back(outs);
  }
  // A kernel parameter must be one distinct buffer: an output that is an input (an identity
  // lowering) or another output gets a copy stage.
  for (const te::Tensor& t : p.member_outputs.back()) {
    bool taken = t.op().as<te::PlaceholderOpNode>() != nullptr;
    for (const te::Tensor& o : p.outputs) taken = taken || o.same_as(t);
    if (!taken) {
      p.outputs.push_back(t);
      continue;
    }
    p.outputs.push_back(te::compute(t.shape(), [&](const std::vector<ir::Var>& i) {
      return t(std::vector<ir::Expr>(i.begin(), i.end()));
    }, t.name() + ".copy"));
  }
  return p;
}

std::string kernel_name(const FusedGroup& group, int index) {
  std::string ops;
  for (const Expr& e : group.calls) {
    std::string op = e.as<CallNode>()->op_name();
    for (char& ch : op)
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    // Long groups keep their first ops in the name; the index keeps it unique.
    if (ops.size() + op.size() > 64) {
      ops += "_etc";
      break;
    }
    ops += "_" + op;
  }
  return "fused" + ops + "_" + std::to_string(index);
}

te::Tensor anchor_tensor(const GroupProgram& p, const FusedGroup& g) {
  if (!g.anchor.defined()) return te::Tensor();
  for (size_t i = 0; i < g.calls.size(); ++i)
    if (g.calls[i].same_as(g.anchor)) return p.member_outputs[i][0];
  KILN_CHECK(false) << "the anchor of group " << g.label() << " is not one of its calls";
  return {};
}

}  // namespace kiln::lower
