// Statements of the loop-level IR and PrimFunc, the unit of code generation.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/ir/expr.h"
#include "kiln/support/handle.h"

namespace kiln::ir {

enum class StmtKind : uint8_t { LetStmt, AttrStmt, BufferStore, Allocate, For, IfThenElse, Seq, Evaluate };

struct StmtNode {
  const StmtKind kind;
  virtual ~StmtNode() = default;

 protected:
  explicit StmtNode(StmtKind k) : kind(k) {}
};

class Stmt : public support::Handle<StmtNode> {
 public:
  using Handle::Handle;
  StmtKind kind() const { return get()->kind; }
};

struct LetStmtNode : StmtNode {
  Var var;
  Expr value;
  Stmt body;
  LetStmtNode(Var v, Expr val, Stmt b) : StmtNode(StmtKind::LetStmt), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  static bool matches(StmtKind k) { return k == StmtKind::LetStmt; }
};

// An annotation on a region: key "pragma_<name>" for schedule pragmas, "thread_extent",
// "tensorize", ... `node` names what it is about (a loop var, a buffer's data var) or is null.
struct AttrStmtNode : StmtNode {
  std::string key;
  Expr node;
  Expr value;
  Stmt body;
  AttrStmtNode(std::string k, Expr n, Expr v, Stmt b)
      : StmtNode(StmtKind::AttrStmt), key(std::move(k)), node(std::move(n)), value(std::move(v)), body(std::move(b)) {}
  static bool matches(StmtKind k) { return k == StmtKind::AttrStmt; }
};

struct BufferStoreNode : StmtNode {
  Buffer buffer;
  Expr value;
  std::vector<Expr> indices;
  BufferStoreNode(Buffer b, Expr v, std::vector<Expr> i)
      : StmtNode(StmtKind::BufferStore), buffer(std::move(b)), value(std::move(v)), indices(std::move(i)) {}
  static bool matches(StmtKind k) { return k == StmtKind::BufferStore; }
};

// Declares storage for `buffer` (its shape, dtype and scope) live within `body`.
struct AllocateNode : StmtNode {
  Buffer buffer;
  Stmt body;
  AllocateNode(Buffer b, Stmt bd) : StmtNode(StmtKind::Allocate), buffer(std::move(b)), body(std::move(bd)) {}
  static bool matches(StmtKind k) { return k == StmtKind::Allocate; }
};

enum class ForKind : uint8_t { Serial, Parallel, Vectorized, Unrolled, ThreadBinding };
const char* for_kind_name(ForKind k);

struct ForNode : StmtNode {
  Var loop_var;
  Expr min, extent;
  ForKind for_kind;
  std::string thread_tag;  // for ThreadBinding: "blockIdx.x", "threadIdx.x", ...
  Stmt body;
  ForNode(Var v, Expr mn, Expr ext, ForKind k, std::string tag, Stmt b)
      : StmtNode(StmtKind::For), loop_var(std::move(v)), min(std::move(mn)), extent(std::move(ext)),
        for_kind(k), thread_tag(std::move(tag)), body(std::move(b)) {}
  static bool matches(StmtKind k) { return k == StmtKind::For; }
};

struct IfThenElseNode : StmtNode {
  Expr condition;
  Stmt then_case, else_case;  // else_case may be undefined
  IfThenElseNode(Expr c, Stmt t, Stmt e)
      : StmtNode(StmtKind::IfThenElse), condition(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  static bool matches(StmtKind k) { return k == StmtKind::IfThenElse; }
};

struct SeqStmtNode : StmtNode {
  std::vector<Stmt> seq;
  explicit SeqStmtNode(std::vector<Stmt> s) : StmtNode(StmtKind::Seq), seq(std::move(s)) {}
  static bool matches(StmtKind k) { return k == StmtKind::Seq; }
};

struct EvaluateNode : StmtNode {
  Expr value;
  explicit EvaluateNode(Expr v) : StmtNode(StmtKind::Evaluate), value(std::move(v)) {}
  static bool matches(StmtKind k) { return k == StmtKind::Evaluate; }
};

// Checking constructors (throw kiln::Error on ill-typed input).
Stmt let_stmt(Var v, Expr value, Stmt body);
Stmt attr_stmt(std::string key, Expr node, Expr value, Stmt body);
Stmt buffer_store(Buffer b, Expr value, std::vector<Expr> indices);
Stmt allocate(Buffer b, Stmt body);
Stmt for_loop(Var v, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag = "");
Stmt if_then_else(Expr cond, Stmt then_case, Stmt else_case = Stmt());
// Flattens nested Seqs and drops undefined entries; a single statement is returned as is.
Stmt seq(std::vector<Stmt> stmts);
Stmt evaluate(Expr value);

// A function of the loop-level IR. Every parameter is a global Buffer with a static shape;
// the kernel calling convention (runtime/kernel.h) passes their data pointers in this order.
struct PrimFunc {
  std::string name;
  std::vector<Buffer> params;
  Stmt body;
  // Dynamic batch (runtime/graph_plan.h): the body computes one sample; the kernel takes one
  // more argument, an int64_t array {n, byte stride of parameter 0, ..., of parameter P-1}, and
  // its outermost loop runs the body for samples 0..n-1, each parameter advanced by its stride.
  bool batch_loop = false;
};

}  // namespace kiln::ir
