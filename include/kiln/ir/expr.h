// Expressions of the loop-level IR.
//
// One node pattern for every IR level (docs/architecture.md, "IR levels"): nodes are immutable, built by checking
// make functions, held by shared_ptr handles, and downcast through a kind enum with
// `e.as<AddNode>()` (no RTTI). Vars, Buffers and IterVars have identity: two Vars with the same
// name are different variables.
//
// Integer division: `a / b` and `a % b` on integers are floor division / floor modulo
// (FloorDiv, FloorMod), which is what index arithmetic wants; truncdiv / truncmod give C
// semantics (Div, Mod). On floats `/` is Div.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/ir/dtype.h"
#include "kiln/support/handle.h"

namespace kiln::ir {

enum class ExprKind : uint8_t {
  IntImm, FloatImm, StringImm, Var,
  // Binary arithmetic: BinaryNode, operands and result share one dtype.
  Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max,
  // Comparisons: BinaryNode, result is bool with the operands' lanes.
  EQ, NE, LT, LE, GT, GE,
  // Logical on bools: And, Or are BinaryNode; Not is NotNode.
  And, Or, Not,
  Select, Cast, Ramp, Broadcast, Let, Call, BufferLoad, ProducerLoad, Reduce,
};

const char* kind_name(ExprKind k);
inline bool is_binary(ExprKind k) { return k >= ExprKind::Add && k <= ExprKind::Or; }
inline bool is_comparison(ExprKind k) { return k >= ExprKind::EQ && k <= ExprKind::GE; }
inline bool is_arith(ExprKind k) { return k >= ExprKind::Add && k <= ExprKind::Max; }

struct ExprNode {
  const ExprKind kind;
  const DataType dtype;
  virtual ~ExprNode() = default;

 protected:
  ExprNode(ExprKind k, DataType t) : kind(k), dtype(t) {}
};

class Expr : public support::Handle<ExprNode> {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : Handle(std::move(n)) {}
  // Literals: int -> int32, int64_t -> int64, float -> float32, double -> float64. A literal
  // next to a typed operand in a binary op takes that operand's type (x_f32 * 0.5 is f32).
  Expr(int value);      // NOLINT(google-explicit-constructor): literals read naturally
  Expr(int64_t value);  // NOLINT
  Expr(float value);    // NOLINT
  Expr(double value);   // NOLINT

  DataType dtype() const { return get()->dtype; }
  ExprKind kind() const { return get()->kind; }
};

// ---------------------------------------------------------------------------------------------
// Leaves

struct IntImmNode : ExprNode {
  int64_t value;
  IntImmNode(DataType t, int64_t v) : ExprNode(ExprKind::IntImm, t), value(v) {}
  static bool matches(ExprKind k) { return k == ExprKind::IntImm; }
};

struct FloatImmNode : ExprNode {
  double value;
  FloatImmNode(DataType t, double v) : ExprNode(ExprKind::FloatImm, t), value(v) {}
  static bool matches(ExprKind k) { return k == ExprKind::FloatImm; }
};

struct StringImmNode : ExprNode {
  std::string value;
  explicit StringImmNode(std::string v) : ExprNode(ExprKind::StringImm, DataType::handle()), value(std::move(v)) {}
  static bool matches(ExprKind k) { return k == ExprKind::StringImm; }
};

struct VarNode : ExprNode {
  std::string name;
  VarNode(std::string n, DataType t) : ExprNode(ExprKind::Var, t), name(std::move(n)) {}
  static bool matches(ExprKind k) { return k == ExprKind::Var; }
};

class Var : public Expr {
 public:
  Var() = default;
  explicit Var(std::string name, DataType t = DataType::i32());
  explicit Var(std::shared_ptr<const VarNode> n) : Expr(std::move(n)) {}
  const VarNode* get() const { return static_cast<const VarNode*>(Expr::get()); }
  const VarNode* operator->() const { return get(); }
  const std::string& name() const { return get()->name; }
};

// Maps keyed by variable identity.
template <typename V>
using VarMap = std::unordered_map<const VarNode*, V>;

// [min, min + extent)
struct Range {
  Expr min, extent;
  Range() = default;
  Range(Expr mn, Expr ext) : min(std::move(mn)), extent(std::move(ext)) {}
};

// ---------------------------------------------------------------------------------------------
// Iteration variables: a Var with its domain and role (used by Reduce, te and schedules).

enum class IterKind : uint8_t { DataPar, Reduce, Opaque, Thread };

struct IterVarNode {
  Var var;
  Range dom;
  IterKind iter_kind;
  std::string thread_tag;  // "blockIdx.x", "threadIdx.y", ... for IterKind::Thread
};

class IterVar : public support::Handle<IterVarNode> {
 public:
  using Handle::Handle;
  static IterVar make(Var v, Range dom, IterKind kind, std::string thread_tag = "");
  const Var& var() const { return get()->var; }
};

// ---------------------------------------------------------------------------------------------
// Buffers: a named region of memory with a static shape. Before flatten_storage, loads and
// stores index a buffer with one index per dimension; after it, with one flat index.

// How a shared tile's last two dimensions [R, C] are laid out (flatten_storage): rows of C
// elements one after another; as the 8 x 8 core matrices Hopper's wgmma reads without a swizzle,
// element (r, c) at ((r / 8) (C / 8) + c / 8) 64 + (r % 8) 8 + c % 8, each core matrix's 8 rows
// of 8 contiguous (Stage::core_matrix_layout); or as 128-byte rows (C = 64 16-bit elements)
// whose eight 16-byte chunks are permuted by the row: element (r, c) at
// r 64 + ((c / 8) xor (r % 8)) 8 + c % 8, what wgmma reads with its 128-byte swizzle, which
// XORs address bits 4-6 with bits 7-9: the buffer starts 1024-byte aligned (plan_shared_storage)
// (Stage::swizzle_128b_layout).
enum class TileLayout : uint8_t { kRows, kCoreMatrices, kSwizzle128B };

struct BufferNode {
  std::string name;
  DataType dtype;             // element type (scalar)
  std::vector<Expr> shape;    // constant extents
  Var data;                   // the handle variable that holds the base pointer
  std::string scope;          // "global", "local" (registers/stack), "shared" (GPU)
  TileLayout layout = TileLayout::kRows;  // of the last two dimensions (shared tiles)
};

class Buffer : public support::Handle<BufferNode> {
 public:
  using Handle::Handle;
  static Buffer make(std::string name, DataType dtype, std::vector<Expr> shape,
                     std::string scope = "global");
  // Product of the shape; requires constant extents.
  int64_t num_elements() const;
};

// Something a te program reads by multi-dimensional index before lowering: a te::Tensor.
// Defined here as an interface so the IR does not depend on te.
struct ProducerNode {
  virtual ~ProducerNode() = default;
  virtual std::string name() const = 0;
  virtual DataType dtype() const = 0;
  virtual std::vector<int64_t> shape() const = 0;
  virtual bool same_as(const ProducerNode& other) const = 0;
  virtual size_t hash() const = 0;
};
using Producer = std::shared_ptr<const ProducerNode>;

// ---------------------------------------------------------------------------------------------
// Composite expressions

struct BinaryNode : ExprNode {
  Expr a, b;
  BinaryNode(ExprKind k, DataType t, Expr a_, Expr b_) : ExprNode(k, t), a(std::move(a_)), b(std::move(b_)) {}
  static bool matches(ExprKind k) { return is_binary(k); }
};

struct NotNode : ExprNode {
  Expr a;
  NotNode(DataType t, Expr a_) : ExprNode(ExprKind::Not, t), a(std::move(a_)) {}
  static bool matches(ExprKind k) { return k == ExprKind::Not; }
};

struct SelectNode : ExprNode {
  Expr condition, true_value, false_value;
  SelectNode(DataType t, Expr c, Expr tv, Expr fv)
      : ExprNode(ExprKind::Select, t), condition(std::move(c)), true_value(std::move(tv)), false_value(std::move(fv)) {}
  static bool matches(ExprKind k) { return k == ExprKind::Select; }
};

struct CastNode : ExprNode {
  Expr value;
  CastNode(DataType t, Expr v) : ExprNode(ExprKind::Cast, t), value(std::move(v)) {}
  static bool matches(ExprKind k) { return k == ExprKind::Cast; }
};

// base, base + stride, ..., base + (lanes-1) * stride
struct RampNode : ExprNode {
  Expr base, stride;
  int lanes;
  RampNode(DataType t, Expr b, Expr s, int l)
      : ExprNode(ExprKind::Ramp, t), base(std::move(b)), stride(std::move(s)), lanes(l) {}
  static bool matches(ExprKind k) { return k == ExprKind::Ramp; }
};

struct BroadcastNode : ExprNode {
  Expr value;
  int lanes;
  BroadcastNode(DataType t, Expr v, int l) : ExprNode(ExprKind::Broadcast, t), value(std::move(v)), lanes(l) {}
  static bool matches(ExprKind k) { return k == ExprKind::Broadcast; }
};

struct LetNode : ExprNode {
  Var var;
  Expr value, body;
  LetNode(DataType t, Var v, Expr val, Expr b)
      : ExprNode(ExprKind::Let, t), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  static bool matches(ExprKind k) { return k == ExprKind::Let; }
};

// PureIntrinsic: math the backends know (see intrinsic names in make_intrinsic's comment).
// Extern: a call to a C function by name (used by tensorize); may have side effects.
enum class CallKind : uint8_t { PureIntrinsic, Extern };

struct CallNode : ExprNode {
  std::string name;
  std::vector<Expr> args;
  CallKind call_kind;
  CallNode(DataType t, std::string n, std::vector<Expr> a, CallKind ck)
      : ExprNode(ExprKind::Call, t), name(std::move(n)), args(std::move(a)), call_kind(ck) {}
  static bool matches(ExprKind k) { return k == ExprKind::Call; }
};

struct BufferLoadNode : ExprNode {
  Buffer buffer;
  std::vector<Expr> indices;
  BufferLoadNode(DataType t, Buffer b, std::vector<Expr> i)
      : ExprNode(ExprKind::BufferLoad, t), buffer(std::move(b)), indices(std::move(i)) {}
  static bool matches(ExprKind k) { return k == ExprKind::BufferLoad; }
};

struct ProducerLoadNode : ExprNode {
  Producer producer;
  std::vector<Expr> indices;
  ProducerLoadNode(DataType t, Producer p, std::vector<Expr> i)
      : ExprNode(ExprKind::ProducerLoad, t), producer(std::move(p)), indices(std::move(i)) {}
  static bool matches(ExprKind k) { return k == ExprKind::ProducerLoad; }
};

// A commutative reducer over tuples: result_i(lhs, rhs), with an identity element per slot.
// sum, max and min are one-slot reducers; argmax is a two-slot one (index, value).
struct CommReducerNode {
  std::vector<Var> lhs, rhs;
  std::vector<Expr> result;
  std::vector<Expr> identity;
};
using CommReducer = std::shared_ptr<const CommReducerNode>;

CommReducer make_comm_reducer(std::vector<Var> lhs, std::vector<Var> rhs, std::vector<Expr> result,
                              std::vector<Expr> identity);
CommReducer sum_reducer(DataType t);
CommReducer max_reducer(DataType t);
CommReducer min_reducer(DataType t);
CommReducer prod_reducer(DataType t);

// Reduction of `source` over `axis` (all reduce IterVars) with `combiner`; the value is slot
// `value_index` of the tuple result. `condition` (bool) masks which points take part.
struct ReduceNode : ExprNode {
  CommReducer combiner;
  std::vector<Expr> source;
  std::vector<IterVar> axis;
  Expr condition;
  int value_index;
  ReduceNode(DataType t, CommReducer c, std::vector<Expr> s, std::vector<IterVar> ax, Expr cond, int vi)
      : ExprNode(ExprKind::Reduce, t), combiner(std::move(c)), source(std::move(s)), axis(std::move(ax)),
        condition(std::move(cond)), value_index(vi) {}
  static bool matches(ExprKind k) { return k == ExprKind::Reduce; }
};

// ---------------------------------------------------------------------------------------------
// Checking constructors. They throw kiln::Error on ill-typed input (operands of different
// types, non-bool conditions, lane mismatches). Binary makers fold two integer constants.

Expr make_int(DataType t, int64_t v);      // IntImm, or Broadcast of one for vector t
Expr make_float(DataType t, double v);     // FloatImm, or Broadcast of one for vector t
Expr make_const(DataType t, double v);     // int or float constant of type t (bool too)
Expr make_zero(DataType t);
Expr make_string(std::string s);
Expr max_value(DataType t);                // largest finite value of t
Expr min_value(DataType t);                // lowest finite value of t (-inf not used)

Expr make_binary(ExprKind k, Expr a, Expr b);
Expr add(Expr a, Expr b);
Expr sub(Expr a, Expr b);
Expr mul(Expr a, Expr b);
Expr div(Expr a, Expr b);       // float division, or floor division on integers
Expr truncdiv(Expr a, Expr b);  // C division on integers (Div)
Expr truncmod(Expr a, Expr b);  // C remainder on integers (Mod)
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr eq(Expr a, Expr b);
Expr ne(Expr a, Expr b);
Expr lt(Expr a, Expr b);
Expr le(Expr a, Expr b);
Expr gt(Expr a, Expr b);
Expr ge(Expr a, Expr b);
Expr logical_and(Expr a, Expr b);
Expr logical_or(Expr a, Expr b);
Expr logical_not(Expr a);
Expr select(Expr cond, Expr t, Expr f);
Expr cast(DataType t, Expr v);  // returns v itself when it already has type t
Expr ramp(Expr base, Expr stride, int lanes);
Expr broadcast(Expr value, int lanes);
Expr let(Var v, Expr value, Expr body);
// Pure math intrinsics known to every backend, result type = first argument's type unless
// `t` given: exp log sqrt rsqrt tanh erf fabs floor ceil round trunc sin cos sigmoid pow fma
// (fma(a,b,c) = a*b+c), isnan.
Expr make_intrinsic(const std::string& name, std::vector<Expr> args);
Expr make_intrinsic(DataType t, const std::string& name, std::vector<Expr> args);
Expr call_extern(DataType t, const std::string& name, std::vector<Expr> args);
// The int8 dot product of int8 kernels: acc[j] + sum_{k<G} a[k] * b[G*j + k] for j < L, exact
// in int32; acc int32 x L, b int8 x G*L, and a the group of G channels: int8 or uint8 x 4, or
// int16 x 2 holding 8-bit values (AVX2's form: two 16-bit values are one vpmaddwd operand, so a
// broadcast is one load; CPU targets: codegen_dot.cc). With an int16 a, b may be int16 too (an
// integer Winograd conv's transformed operands, te/ops/nn_winograd.h): exact while no two
// products are both (-32768)^2.
Expr int8_dot(Expr acc, Expr a, Expr b);
Expr buffer_load(Buffer b, std::vector<Expr> indices);
Expr producer_load(Producer p, std::vector<Expr> indices);
Expr make_reduce(CommReducer combiner, std::vector<Expr> source, std::vector<IterVar> axis,
                 Expr condition, int value_index);

// Operators build IR (they do not compute); literals adapt to the other operand's type.
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);

// Constant queries.
std::optional<int64_t> as_const_int(const Expr& e);   // IntImm (or Broadcast of one)
std::optional<double> as_const_float(const Expr& e);  // FloatImm (or Broadcast of one)
bool is_const_int(const Expr& e, int64_t value);
bool is_zero(const Expr& e);
bool is_one(const Expr& e);

}  // namespace kiln::ir
