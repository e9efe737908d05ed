#include "kiln/ir/printer.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <unordered_set>

#include "kiln/support/error.h"

namespace kiln::ir {

namespace {
// An Allocate's tile layout, after its scope (none for plain rows).
const char* layout_suffix(TileLayout layout) {
  switch (layout) {
    case TileLayout::kRows: return "";
    case TileLayout::kCoreMatrices: return ", core_matrices";
    case TileLayout::kSwizzle128B: return ", swizzle_128b";
  }
  return "";
}

// Binding strength of infix operators; higher binds tighter.
int precedence(ExprKind k) {
  switch (k) {
    case ExprKind::Or: return 1;
    case ExprKind::And: return 2;
    case ExprKind::EQ: case ExprKind::NE: case ExprKind::LT:
    case ExprKind::LE: case ExprKind::GT: case ExprKind::GE: return 3;
    case ExprKind::Add: case ExprKind::Sub: return 4;
    case ExprKind::Mul: case ExprKind::Div: return 5;
    default: return 10;  // atoms and function-call forms
  }
}

const char* infix(ExprKind k) {
  switch (k) {
    case ExprKind::Add: return " + ";
    case ExprKind::Sub: return " - ";
    case ExprKind::Mul: return "*";
    case ExprKind::Div: return " / ";
    case ExprKind::EQ: return " == ";
    case ExprKind::NE: return " != ";
    case ExprKind::LT: return " < ";
    case ExprKind::LE: return " <= ";
    case ExprKind::GT: return " > ";
    case ExprKind::GE: return " >= ";
    case ExprKind::And: return " && ";
    case ExprKind::Or: return " || ";
    default: return nullptr;
  }
}

const char* call_form(ExprKind k) {
  switch (k) {
    case ExprKind::FloorDiv: return "floordiv";
    case ExprKind::FloorMod: return "floormod";
    case ExprKind::Div: return "truncdiv";  // integer Div only; float Div prints infix
    case ExprKind::Mod: return "truncmod";
    case ExprKind::Min: return "min";
    case ExprKind::Max: return "max";
    default: return nullptr;
  }
}

std::string float_text(DataType t, double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, t.bits == 64 ? "%.17g" : "%.9g", v);
  return buf;
}

class Printer {
 public:
  std::ostringstream os;

  void print_expr(const Expr& e, int parent_prec = 0) {
    if (!e.defined()) { os << "<undef>"; return; }
    switch (e.kind()) {
      case ExprKind::IntImm: {
        auto* n = e.as<IntImmNode>();
        if (n->dtype.is_bool()) os << (n->value ? "true" : "false");
        else if (n->dtype == DataType::i32()) os << n->value;
        else os << n->dtype.str() << "(" << n->value << ")";
        return;
      }
      case ExprKind::FloatImm: {
        auto* n = e.as<FloatImmNode>();
        std::string text = float_text(n->dtype, n->value);
        if (n->dtype == DataType::f32()) os << text << "f";
        else if (n->dtype == DataType::f64()) os << text;
        else os << n->dtype.str() << "(" << text << ")";
        return;
      }
      case ExprKind::StringImm: os << '"' << e.as<StringImmNode>()->value << '"'; return;
      case ExprKind::Var: os << name_of(e.as<VarNode>()); return;
      case ExprKind::Not: os << "!"; print_expr(e.as<NotNode>()->a, 10); return;
      case ExprKind::Select: {
        auto* n = e.as<SelectNode>();
        print_call("select", {n->condition, n->true_value, n->false_value});
        return;
      }
      case ExprKind::Cast: {
        auto* n = e.as<CastNode>();
        print_call(n->dtype.str(), {n->value});
        return;
      }
      case ExprKind::Ramp: {
        auto* n = e.as<RampNode>();
        print_call("ramp", {n->base, n->stride, Expr(n->lanes)});
        return;
      }
      case ExprKind::Broadcast: {
        auto* n = e.as<BroadcastNode>();
        print_call("broadcast", {n->value, Expr(n->lanes)});
        return;
      }
      case ExprKind::Let: {
        auto* n = e.as<LetNode>();
        os << "(let " << name_of(n->var.get()) << " = ";
        print_expr(n->value);
        os << " in ";
        print_expr(n->body);
        os << ")";
        return;
      }
      case ExprKind::Call: {
        auto* n = e.as<CallNode>();
        print_call(n->call_kind == CallKind::Extern ? "extern " + n->name : n->name, n->args);
        return;
      }
      case ExprKind::BufferLoad: {
        auto* n = e.as<BufferLoadNode>();
        os << name_of(n->buffer->data.get());
        print_indices(n->indices, '[', ']');
        return;
      }
      case ExprKind::ProducerLoad: {
        auto* n = e.as<ProducerLoadNode>();
        os << n->producer->name();
        print_indices(n->indices, '(', ')');
        return;
      }
      case ExprKind::Reduce: print_reduce(e.as<ReduceNode>()); return;
      default: break;
    }
    auto* b = e.as<BinaryNode>();
    KILN_CHECK(b) << "printer: unhandled kind " << kind_name(e.kind());
    const char* op = infix(b->kind);
    if (b->kind == ExprKind::Div && b->dtype.element_of().is_integer()) op = nullptr;
    if (!op) {
      print_call(call_form(b->kind), {b->a, b->b});
      return;
    }
    int prec = precedence(b->kind);
    if (prec < parent_prec) os << "(";
    print_expr(b->a, prec);
    os << op;
    print_expr(b->b, prec + 1);
    if (prec < parent_prec) os << ")";
  }

  void print_stmt(const Stmt& s, int indent) {
    if (!s.defined()) return;
    std::string pad(indent * 2, ' ');
    switch (s.kind()) {
      case StmtKind::LetStmt: {
        auto* n = s.as<LetStmtNode>();
        os << pad << "let " << name_of(n->var.get()) << " = ";
        print_expr(n->value);
        os << "\n";
        print_stmt(n->body, indent);
        return;
      }
      case StmtKind::AttrStmt: {
        auto* n = s.as<AttrStmtNode>();
        os << pad << "// attr ";
        if (n->node.defined()) { os << "["; print_expr(n->node); os << "] "; }
        os << n->key << " = ";
        print_expr(n->value);
        os << "\n";
        print_stmt(n->body, indent);
        return;
      }
      case StmtKind::BufferStore: {
        auto* n = s.as<BufferStoreNode>();
        os << pad << name_of(n->buffer->data.get());
        print_indices(n->indices, '[', ']');
        os << " = ";
        print_expr(n->value);
        os << "\n";
        return;
      }
      case StmtKind::Allocate: {
        auto* n = s.as<AllocateNode>();
        os << pad << "allocate " << name_of(n->buffer->data.get()) << ": ";
        print_buffer_type(n->buffer);
        os << ", " << n->buffer->scope << layout_suffix(n->buffer->layout) << "\n";
        print_stmt(n->body, indent);
        return;
      }
      case StmtKind::For: {
        auto* n = s.as<ForNode>();
        os << pad;
        if (n->for_kind == ForKind::ThreadBinding) os << "thread_binding(\"" << n->thread_tag << "\") ";
        else if (n->for_kind != ForKind::Serial) os << for_kind_name(n->for_kind) << " ";
        os << "for (" << name_of(n->loop_var.get()) << ", ";
        print_expr(n->min);
        os << ", ";
        print_expr(n->extent);
        os << ") {\n";
        print_stmt(n->body, indent + 1);
        os << pad << "}\n";
        return;
      }
      case StmtKind::IfThenElse: {
        auto* n = s.as<IfThenElseNode>();
        os << pad << "if (";
        print_expr(n->condition);
        os << ") {\n";
        print_stmt(n->then_case, indent + 1);
        if (n->else_case.defined()) {
          os << pad << "} else {\n";
          print_stmt(n->else_case, indent + 1);
        }
        os << pad << "}\n";
        return;
      }
      case StmtKind::Seq:
        for (const Stmt& c : s.as<SeqStmtNode>()->seq) print_stmt(c, indent);
        return;
      case StmtKind::Evaluate:
        os << pad;
        print_expr(s.as<EvaluateNode>()->value);
        os << "\n";
        return;
    }
  }

  void print_func(const PrimFunc& f) {
    os << "func " << f.name << "(";
    for (size_t i = 0; i < f.params.size(); ++i) {
      if (i) os << ", ";
      os << name_of(f.params[i]->data.get()) << ": ";
      print_buffer_type(f.params[i]);
    }
    os << ") {\n";
    print_stmt(f.body, 1);
    os << "}\n";
  }

 private:
  // Printed name per variable, unique within one printing (first come keeps the bare name).
  std::string name_of(const VarNode* v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    std::string name = v->name.empty() ? "v" : v->name;
    for (int k = 1; used_.count(name); ++k) name = v->name + "_" + std::to_string(k);
    used_.insert(name);
    names_.emplace(v, name);
    return name;
  }

  void print_call(const std::string& name, const std::vector<Expr>& args) {
    os << name << "(";
    for (size_t i = 0; i < args.size(); ++i) {
      if (i) os << ", ";
      print_expr(args[i]);
    }
    os << ")";
  }

  void print_indices(const std::vector<Expr>& idx, char open, char close) {
    os << open;
    for (size_t i = 0; i < idx.size(); ++i) {
      if (i) os << ", ";
      print_expr(idx[i]);
    }
    os << close;
  }

  void print_buffer_type(const Buffer& b) {
    os << b->dtype.str();
    print_indices(b->shape, '[', ']');
  }

  void print_reduce(const ReduceNode* n) {
    os << "reduce(";
    const CommReducerNode& c = *n->combiner;
    for (size_t i = 0; i < c.result.size(); ++i) {
      if (i) os << "; ";
      os << name_of(c.lhs[i].get()) << ", " << name_of(c.rhs[i].get()) << " => ";
      print_expr(c.result[i]);
      os << " init ";
      print_expr(c.identity[i]);
    }
    os << " | ";
    for (size_t i = 0; i < n->source.size(); ++i) {
      if (i) os << ", ";
      print_expr(n->source[i]);
    }
    os << " | axis";
    for (const IterVar& iv : n->axis) {
      os << " " << name_of(iv->var.get()) << "(";
      print_expr(iv->dom.min);
      os << ", ";
      print_expr(iv->dom.extent);
      os << ")";
    }
    if (!is_const_int(n->condition, 1)) {
      os << " | where ";
      print_expr(n->condition);
    }
    if (n->source.size() > 1) os << " | value " << n->value_index;
    os << ")";
  }

  std::unordered_map<const VarNode*, std::string> names_;
  std::unordered_set<std::string> used_;
};

}  // namespace

std::string to_string(const Expr& e) { Printer p; p.print_expr(e); return p.os.str(); }
std::string to_string(const Stmt& s) { Printer p; p.print_stmt(s, 0); return p.os.str(); }
std::string to_string(const PrimFunc& f) { Printer p; p.print_func(f); return p.os.str(); }

std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << to_string(e); }
std::ostream& operator<<(std::ostream& os, const Stmt& s) { return os << to_string(s); }
std::ostream& operator<<(std::ostream& os, const PrimFunc& f) { return os << to_string(f); }

}  // namespace kiln::ir
