// verify: well-formedness checks of a PrimFunc (see verify.h for the rules).
#include "kiln/ir/verify.h"

#include <string>
#include <unordered_set>

#include "kiln/ir/functor.h"
#include "kiln/support/error.h"

namespace kiln::ir {
namespace {

class Verifier : public StmtVisitor {
 public:
  explicit Verifier(const PrimFunc& f) : func_(f.name) {}

  void define(const Var& v, const std::string& by) {
    KILN_CHECK(defined_.insert(v.get()).second)
        << where() << "variable '" << v.name() << "' is defined more than once (again by " << by << ")";
    in_scope_.insert(v.get());
  }
  void undefine(const Var& v) { in_scope_.erase(v.get()); }

 protected:
  void visit_var(const VarNode* op) override { check_use(op, "variable '" + op->name + "'"); }

  void visit_let(const LetNode* op) override {
    visit(op->value);
    define(op->var, "a let");
    visit(op->body);
    undefine(op->var);
  }

  void visit_reduce(const ReduceNode* op) override {
    for (const IterVar& iv : op->axis) {
      visit(iv->dom.min);
      visit(iv->dom.extent);
    }
    for (const IterVar& iv : op->axis) define(iv->var, "a reduce axis");
    for (const Expr& s : op->source) visit(s);
    visit(op->condition);
    for (const IterVar& iv : op->axis) undefine(iv->var);
  }

  void visit_buffer_load(const BufferLoadNode* op) override {
    int lanes = check_access(op->buffer, op->indices, "load from");
    KILN_CHECK(op->dtype == op->buffer->dtype.with_lanes(lanes))
        << where() << "load from '" << op->buffer->name << "' has type " << op->dtype.str() << ", expected "
        << op->buffer->dtype.with_lanes(lanes).str();
    StmtVisitor::visit_buffer_load(op);
  }

  void visit_buffer_store(const BufferStoreNode* op) override {
    int lanes = check_access(op->buffer, op->indices, "store to");
    KILN_CHECK(op->value.defined()) << where() << "store to '" << op->buffer->name << "' has no value";
    KILN_CHECK(op->value.dtype() == op->buffer->dtype.with_lanes(lanes))
        << where() << "store to '" << op->buffer->name << "' of a " << op->value.dtype().str() << " value, expected "
        << op->buffer->dtype.with_lanes(lanes).str();
    StmtVisitor::visit_buffer_store(op);
  }

  void visit_let_stmt(const LetStmtNode* op) override {
    visit(op->value);
    define(op->var, "a let");
    visit_stmt(op->body);
    undefine(op->var);
  }

  // The node of an attribute names what it is about (often a loop it wraps, not yet defined).
  void visit_attr(const AttrStmtNode* op) override {
    visit(op->value);
    visit_stmt(op->body);
  }

  void visit_allocate(const AllocateNode* op) override {
    for (const Expr& e : op->buffer->shape) visit(e);
    define(op->buffer->data, "an allocation of '" + op->buffer->name + "'");
    visit_stmt(op->body);
    undefine(op->buffer->data);
  }

  void visit_for(const ForNode* op) override {
    const std::string& name = op->loop_var.name();
    for (const Expr* e : {&op->min, &op->extent}) {
      KILN_CHECK(e->defined() && e->dtype().is_integer() && e->dtype().is_scalar())
          << where() << "loop '" << name << "' has a non-integer " << (e == &op->min ? "min" : "extent") << " ("
          << (e->defined() ? e->dtype().str() : "undefined") << ")";
      visit(*e);
    }
    define(op->loop_var, "loop '" + name + "'");
    visit_stmt(op->body);
    undefine(op->loop_var);
  }

 private:
  std::string where() const { return "in '" + func_ + "': "; }

  void check_use(const VarNode* v, const std::string& what) {
    if (in_scope_.count(v)) return;
    KILN_CHECK(!defined_.count(v)) << where() << what << " is used outside the scope of its definition";
    KILN_CHECK(false) << where() << what << " is used but never defined";
  }

  // Checks the buffer and index count of an access; returns the lanes of its index.
  int check_access(const Buffer& b, const std::vector<Expr>& indices, const char* verb) {
    KILN_CHECK(b.defined()) << where() << verb << " an undefined buffer";
    check_use(b->data.get(), "buffer '" + b->name + "'");
    KILN_CHECK(indices.size() == b->shape.size())
        << where() << verb << " '" << b->name << "' has " << indices.size() << " indices but the buffer has "
        << b->shape.size() << " dimensions";
    int lanes = 1;
    for (const Expr& i : indices) {
      KILN_CHECK(i.defined() && i.dtype().is_integer())
          << where() << verb << " '" << b->name << "' has a non-integer index";
      if (i.dtype().lanes > 1) {
        KILN_CHECK(lanes == 1 || lanes == i.dtype().lanes)
            << where() << verb << " '" << b->name << "' mixes indices of different lanes";
        lanes = i.dtype().lanes;
      }
    }
    return lanes;
  }

  std::string func_;
  std::unordered_set<const VarNode*> defined_;   // ever defined in this function
  std::unordered_set<const VarNode*> in_scope_;  // defined where the walk is now
};

}  // namespace

void verify(const PrimFunc& f) {
  Verifier v(f);
  for (const Buffer& p : f.params) {
    KILN_CHECK(p.defined() && p->data.defined()) << "in '" << f.name << "': a parameter has no buffer";
    v.define(p->data, "parameter '" + p->name + "'");
  }
  v.visit_stmt(f.body);
}

}  // namespace kiln::ir
