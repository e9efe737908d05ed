#include "kiln/ir/stmt.h"

#include "kiln/support/error.h"

namespace kiln::ir {

const char* for_kind_name(ForKind k) {
  switch (k) {
    case ForKind::Serial: return "serial";
    case ForKind::Parallel: return "parallel";
    case ForKind::Vectorized: return "vectorized";
    case ForKind::Unrolled: return "unrolled";
    case ForKind::ThreadBinding: return "thread_binding";
  }
  return "?";
}

Stmt let_stmt(Var v, Expr value, Stmt body) {
  KILN_USER_CHECK(value.defined() && v.dtype() == value.dtype())
      << "LetStmt of '" << v.name() << "': variable and value types differ";
  return Stmt(std::make_shared<LetStmtNode>(std::move(v), std::move(value), std::move(body)));
}

Stmt attr_stmt(std::string key, Expr node, Expr value, Stmt body) {
  return Stmt(std::make_shared<AttrStmtNode>(std::move(key), std::move(node), std::move(value), std::move(body)));
}

Stmt buffer_store(Buffer b, Expr value, std::vector<Expr> indices) {
  KILN_USER_CHECK(b.defined() && value.defined()) << "store with an undefined buffer or value";
  KILN_USER_CHECK(!indices.empty()) << "store to buffer '" << b->name << "' without indices";
  int lanes = 1;
  for (const Expr& i : indices) {
    KILN_USER_CHECK(i.defined() && i.dtype().is_integer()) << "buffer '" << b->name << "' indexed by a non-integer";
    lanes = std::max<int>(lanes, i.dtype().lanes);
  }
  KILN_USER_CHECK(value.dtype() == b->dtype.with_lanes(lanes))
      << "store to buffer '" << b->name << "' (" << b->dtype.with_lanes(lanes).str() << ") of a "
      << value.dtype().str() << " value";
  return Stmt(std::make_shared<BufferStoreNode>(std::move(b), std::move(value), std::move(indices)));
}

Stmt allocate(Buffer b, Stmt body) {
  KILN_USER_CHECK(b.defined()) << "allocate of an undefined buffer";
  return Stmt(std::make_shared<AllocateNode>(std::move(b), std::move(body)));
}

Stmt for_loop(Var v, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag) {
  KILN_USER_CHECK(v.dtype().is_integer() && v.dtype().is_scalar()) << "loop variable '" << v.name() << "' is not an integer";
  KILN_USER_CHECK(min.defined() && extent.defined()) << "loop '" << v.name() << "' has an undefined range";
  if (min.dtype() != v.dtype()) min = cast(v.dtype(), min);
  if (extent.dtype() != v.dtype()) extent = cast(v.dtype(), extent);
  KILN_USER_CHECK(kind != ForKind::ThreadBinding || !thread_tag.empty())
      << "thread-bound loop '" << v.name() << "' needs a thread tag";
  return Stmt(std::make_shared<ForNode>(std::move(v), std::move(min), std::move(extent), kind, std::move(thread_tag),
                                        std::move(body)));
}

Stmt if_then_else(Expr cond, Stmt then_case, Stmt else_case) {
  KILN_USER_CHECK(cond.defined() && cond.dtype() == DataType::boolean()) << "if condition must be a scalar bool";
  return Stmt(std::make_shared<IfThenElseNode>(std::move(cond), std::move(then_case), std::move(else_case)));
}

Stmt seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    if (!s.defined()) continue;
    if (auto* q = s.as<SeqStmtNode>()) {
      flat.insert(flat.end(), q->seq.begin(), q->seq.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.size() == 1) return flat[0];
  return Stmt(std::make_shared<SeqStmtNode>(std::move(flat)));
}

Stmt evaluate(Expr value) {
  KILN_USER_CHECK(value.defined()) << "evaluate of an undefined expression";
  return Stmt(std::make_shared<EvaluateNode>(std::move(value)));
}

}  // namespace kiln::ir
