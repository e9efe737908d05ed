// Matrix products: dense (Gemm's weight layout), matmul (numpy semantics), einsum.
#include <cctype>
#include <map>

#include "kiln/support/error.h"
#include "op_families.h"
#include "op_util.h"

namespace kiln::relay {

namespace {

Type dense_rel(const std::vector<Type>& args, const Attrs&) {
  const TensorTypeNode& x = tensor_arg(args, 0, "data");
  const TensorTypeNode& w = tensor_arg(args, 1, "weight");
  check_same_dtype(x, w, "data and weight");
  KILN_USER_CHECK(!x.dtype.is_bool()) << "dense needs numeric operands";
  KILN_USER_CHECK(x.rank() == 2 && w.rank() == 2)
      << "dense takes data [M,K] and weight [N,K], got " << shape_str(x.shape) << " and " << shape_str(w.shape);
  KILN_USER_CHECK(x.shape[1] == w.shape[1]) << "reduction dims differ: data " << shape_str(x.shape) << " has K="
                                            << x.shape[1] << ", weight " << shape_str(w.shape) << " has K=" << w.shape[1];
  return tensor_type(x.dtype, {x.shape[0], w.shape[0]});
}

Type matmul_rel(const std::vector<Type>& args, const Attrs&) {
  const TensorTypeNode& a = tensor_arg(args, 0, "lhs");
  const TensorTypeNode& b = tensor_arg(args, 1, "rhs");
  check_same_dtype(a, b, "both operands");
  KILN_USER_CHECK(!a.dtype.is_bool()) << "matmul needs numeric operands";
  KILN_USER_CHECK(a.rank() >= 1 && b.rank() >= 1) << "matmul operands must have rank >= 1";
  // numpy: a 1-D lhs is a row vector, a 1-D rhs a column vector; those dims are dropped after.
  Shape sa = a.shape, sb = b.shape;
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  int64_t m = sa[sa.size() - 2], k = sa.back(), k2 = sb[sb.size() - 2], n = sb.back();
  KILN_USER_CHECK(k == k2) << "reduction dims differ: " << shape_str(a.shape) << " x " << shape_str(b.shape);
  Shape batch = broadcast_shapes(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2));
  if (a.rank() > 1) batch.push_back(m);
  if (b.rank() > 1) batch.push_back(n);
  return tensor_type(a.dtype, batch);
}

Type einsum_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const std::string& eq = attrs.get_str("equation");
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',') {
      terms.emplace_back();
    } else {
      terms.back() += c;
    }
  }
  KILN_USER_CHECK(terms.size() == args.size())
      << "equation '" << eq << "' has " << terms.size() << " inputs, the call " << args.size();
  std::map<char, int64_t> dims;
  std::map<char, int> count;
  Shape ellipsis;
  bool any_ellipsis = false;
  DataType dtype = tensor_arg(args, 0, "input 0").dtype;
  for (size_t i = 0; i < terms.size(); ++i) {
    const TensorTypeNode& t = tensor_arg(args, i, "input");
    KILN_USER_CHECK(t.dtype == dtype) << "inputs must have one data type";
    std::string term = terms[i];
    size_t dots = term.find("...");
    int64_t letters = static_cast<int64_t>(term.size()) - (dots == std::string::npos ? 0 : 3);
    int64_t ell_rank = t.rank() - letters;
    KILN_USER_CHECK(ell_rank >= 0 && (dots != std::string::npos || ell_rank == 0))
        << "term '" << term << "' does not match input " << i << " of shape " << shape_str(t.shape);
    int64_t axis = 0;
    for (size_t p = 0; p < term.size(); ++p) {
      if (p == dots) {
        any_ellipsis = true;
        ellipsis = broadcast_shapes(ellipsis, Shape(t.shape.begin() + axis, t.shape.begin() + axis + ell_rank));
        axis += ell_rank;
        p += 2;
        continue;
      }
      char c = term[p];
      KILN_USER_CHECK(std::isalpha(static_cast<unsigned char>(c))) << "bad character '" << c << "' in '" << eq << "'";
      int64_t d = t.shape[axis++];
      auto it = dims.find(c);
      KILN_USER_CHECK(it == dims.end() || it->second == d)
          << "label '" << c << "' has size " << (it == dims.end() ? d : it->second) << " and " << d;
      dims[c] = d;
      ++count[c];
    }
  }
  std::string out_term;
  if (arrow != std::string::npos) {
    out_term = eq.substr(arrow + 2);
  } else {
    out_term = any_ellipsis ? "..." : "";
    for (const auto& [c, n] : count)
      if (n == 1) out_term += c;
  }
  Shape out;
  for (size_t p = 0; p < out_term.size(); ++p) {
    if (out_term.compare(p, 3, "...") == 0) {
      out.insert(out.end(), ellipsis.begin(), ellipsis.end());
      p += 2;
      continue;
    }
    auto it = dims.find(out_term[p]);
    KILN_USER_CHECK(it != dims.end()) << "output label '" << out_term[p] << "' appears in no input of '" << eq << "'";
    out.push_back(it->second);
  }
  return tensor_type(dtype, out);
}

}  // namespace

void register_matmul_ops() {
  register_op("nn.dense", 2, 2, OpPattern::OutElementwiseFusable, dense_rel, "dense(data [M,K], weight [N,K]) -> [M,N]");
  register_op("nn.matmul", 2, 2, OpPattern::OutElementwiseFusable, matmul_rel,
              "numpy matmul: batch dims broadcast, 1-D operands are vectors");
  register_op("einsum", 1, -1, OpPattern::OutElementwiseFusable, einsum_rel,
              "equation (string, no spaces, e.g. \"bij,bjk->bik\"; \"...\" broadcasts)");
}

}  // namespace kiln::relay
