// The printer of one GPU kernel in a C dialect (codegen_c.h), declared for the two files that
// define it: codegen_c.cc (the kernel, names and types, race checks, statements) and
// codegen_c_expr.cc (expressions, and vector IR printed lane by lane). Private to the printer.
#pragma once

#include <fmt/format.h>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include "ldmatrix.h"
#include "ir/arith.h"
#include "kiln/ir/functor.h"
#include "ir/shared_storage.h"
#include "kiln/ir/structural.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"

#include "codegen_c.h"
#include "codegen_c_support.h"

namespace kiln::codegen::source::detail {

using ir::DataType;
using ir::ExprKind;

class KernelPrinter {
 public:
  // race_check: print the race-checking build; `checked` numbers its shadowed buffers across
  // the module (a buffer's id is its position + 1).
  KernelPrinter(const Dialect& d, const ir::PrimFunc& f, const ir::KernelLaunch& launch, bool race_check,
                std::vector<std::string>& checked)
      : d_(d), f_(f), launch_(launch), race_check_(race_check), checked_(checked) {}

  std::string print();

 private:
  // ---- names and types ----
  std::string name_of(const ir::Var& v);

  // A C name from `name` that no other variable of the kernel takes.
  std::string fresh_name(const std::string& name);

  void check_type(DataType t, const std::string& what);

  // The C type of a value: 16-bit floats are computed in float (stored as bits, bits16()).
  std::string type(DataType t);

  static bool bits16(DataType t) { return t.is_floating() && t.bits == 16; }
  // A float holding a 16-bit float's value, rounded to it (after arithmetic in float).
  static std::string round16(DataType t, const std::string& v);
  static std::string from_bits16(DataType t, const std::string& v);
  static std::string to_bits16(DataType t, const std::string& v);

  void line(const std::string& s);

  // ---- race checking ----
  struct Shadow {
    const ir::VarNode* buffer;  // the shared buffer's data
    int id;                     // in the race record and the module's checked buffers
    int64_t n;                  // elements of the shared buffer
    std::string name;           // its shadow array, 4 n ints (kRaceCheckFunctions)
  };

  const Shadow* shadow(const ir::Buffer& b) const;

  // The arguments a shadowed access passes after the buffer: its shadow, the element, who and
  // when, and where to report.
  std::string race_args(const Shadow& sh, const std::string& index) const;

  // The work-item's flat local id and epoch; the group sets every shadow epoch to -1 (no
  // access yet), each work-item a strided slice, and a barrier publishes that before the body.
  // That barrier is not counted: the body starts in epoch 0.
  void race_check_prologue();

  // ---- expressions ----
  std::string literal_int(DataType t, int64_t v);
  std::string cast_prefix(DataType t) { return "(" + type(t) + ")"; }

  std::string literal_float(DataType t, double v);

  std::string helper(const std::string& op, DataType t);

  // An expression's C text; a 16-bit float result of arithmetic, a conversion or a call is
  // rounded to its type (computed in float: IEEE float16 arithmetic rounds each operation).
  std::string expr(const ir::Expr& e);

  std::string expr_unrounded(const ir::Expr& e);

  std::string binary(const ir::BinaryNode* b);

  std::string call(const ir::CallNode* c);

  // The same bits as another type of one width (ONNX BitCast). Integers and bools convert
  // bit for bit in C; a 16-bit float goes through its stored bits; 32- and 64-bit floats
  // through the dialect's bit casts (CUDA __float_as_int ..., OpenCL as_int ...).
  std::string reinterpret(const ir::CallNode* c);

  // Shuffles move 32- and 64-bit values; a narrower one (bool, 8- and 16-bit integers) goes
  // through int. A 16-bit float is a float here (type()).
  std::string shuffle_down(const ir::CallNode* c);

  // `value` as a buffer of type t stores it. A 16-bit float is converted to its bits once: its
  // outermost operation is printed unrounded (expr()), as the conversion rounds alike.
  std::string stored(DataType t, const ir::Expr& value);

  // ---- vector IR: lanes and vector accesses ----

  // The lets of a vector statement's value, printed first; returns the value without them.
  ir::Expr lift_vector_lets(const ir::Expr& value);

  // A let's binding without let expressions in `value`: one const, or one per lane of a vector.
  void let_lanes(const ir::Var& v, const ir::Expr& value);

  // The address of element base + offset of parameter b.
  std::string address(const ir::Buffer& b, const ir::Expr& base, int offset);

  // Reads every load in `e` that is an aligned contiguous access of a parameter and runs
  // unconditionally into registers, one vector access per vector_access_lanes(); lane_of then
  // reads those registers.
  void read_vector_loads(const ir::Expr& e);

  // The registers of a load of the same vector this statement has read, or null.
  const ir::Buffer* read_before(const ir::BufferLoadNode* l) const;

  // Lane l->indices[0] (a constant) of the registers read_vector_loads read for l->buffer.
  static std::string register_lane(const std::vector<std::string>& chunks, const ir::BufferLoadNode* l);

  // A store at a vector index (codegen_c.h; the file's comment on masked stores).
  void vector_store(const ir::BufferStoreNode* st);

  // Registers read for one statement serve that statement only (their loads are its nodes).
  void end_vector_statement();

  // An expression for use in the statement printed next (pending lets go first).
  std::string use(const ir::Expr& e) { return flush_pending(expr(e)); }
  // Prints the lines an expression's text needs before it; returns the text.
  std::string flush_pending(std::string text);

  // ---- statements ----
  void stmt(const ir::Stmt& s);

  // An ir::kAsyncCopy store (its form: transforms.h) as the dialect's asynchronous copy: the
  // addresses of the first lanes; where a select zero-fills, the source index clamped to 0 (an
  // element that exists: the index where the condition fails may lie outside the buffer, a
  // padding row) and the source bytes the condition's.
  void async_copy(const ir::AttrStmtNode* a);

  // A warp's mma over one tile (mma_intrin.h): the lanes' loop around an ir::kMmaSync region
  // (or another intrinsic's, `key`).
  static const ir::AttrStmtNode* lane_attr(const ir::Stmt& s, const char* key);
  static const ir::AttrStmtNode* lane_mma(const ir::Stmt& s) { return lane_attr(s, ir::kMmaSync); }

  // Consecutive wgmma of a warpgroup (one K slice's, mma_intrin.h) as the dialect's fenced,
  // committed and waited run: each in its lanes' loop (warp_wgmma), the run's accumulators held
  // after the wait.
  // A run left in flight (its calls' in_flight operand) waits for the run before it instead, and
  // its accumulators join those kWgmmaDrain waits for after the loop.
  void wgmma_run(const std::vector<ir::Stmt>& run);

  // An ir::kWgmma region as the dialect's wgmma, inside a run (wgmma_run): the call's
  // accumulators as lvalues, its operands as shared-memory descriptors.
  void warp_wgmma(const ir::AttrStmtNode* a);

  // Appends to `to` each of `names` it does not hold yet.
  static void add_once(const std::vector<std::string>& names, std::vector<std::string>& to);

  // Consecutive mma of a warp's tiles, printed as one lanes' loop whose ldmatrix loads are
  // shared: the tiles of a row of the warp's tile read the same fragment of A, those of a
  // column the same of B (mma_fragments_ caches them for the run; nothing in it writes memory).
  void warp_mma_run(const std::vector<ir::Stmt>& run);

  // The registers of an mma operand: `count` 16-bit elements (args[first...]) two to a 32-bit
  // register, the lower element in the low half. One ldmatrix where the elements are rows of
  // shared memory in its layout (ldmatrix.h), else loads, with a comment saying why.
  std::vector<std::string> mma_operand(const std::vector<ir::Expr>& args, size_t first, size_t count,
                                       const char* operand);

  // Register `lo / 2` of an operand by loads: neighbours in memory, the first 4-byte aligned,
  // as one 32-bit load (little-endian: the lower element in the low half), else two.
  std::string pack(const std::vector<ir::Expr>& args, size_t lo);

  // An mma operand's element: a flat load, as an lvalue.
  std::string mma_element(const ir::Expr& e);

  // An ir::kMmaSync region as the dialect's mma: the call's 4 accumulators as lvalues, its 8
  // elements of A and 4 of B as their bits (16-bit floats are stored as bits) in registers
  // (mma_operand). Buffers are at least 16-byte aligned (shared: the dialect's qualifier).
  void warp_mma(const ir::AttrStmtNode* a);

  void block(const ir::Stmt& s);

  void for_loop(const ir::ForNode* op);

 public:
  std::set<std::string> helpers_;
  bool uses_float16_ = false;  // the module needs float16_helpers()

 private:
  const Dialect& d_;
  const ir::PrimFunc& f_;
  const ir::KernelLaunch& launch_;
  const bool race_check_;
  std::vector<std::string>& checked_;
  std::vector<Shadow> shadows_;  // in declaration order
  std::ostringstream out_;
  int indent_ = 0;
  int pow_count_ = 0;
  std::unordered_map<const ir::VarNode*, std::string> names_;
  std::unordered_set<const ir::VarNode*> params_;  // their data: what vector accesses may read and write
  ir::arith::Analyzer analyzer_;                   // knows the lets printed so far
  LaneMap lanes_;
  // Registers read_vector_loads filled, by their buffer's data: a vector variable per access.
  std::unordered_map<const ir::VarNode*, std::vector<std::string>> registers_;
  std::unordered_set<std::string> used_;
  std::vector<ir::Var> lane_vars_;  // the threadIdx.x loops around, innermost last
  // Only in a run of mma (warp_mma_run): the registers each ldmatrix filled, by instruction and
  // address.
  std::optional<std::map<std::string, std::vector<std::string>>> mma_fragments_;
  bool wgmma_ = false;  // the kernel has wgmma (ir::kWgmma) the dialect prints
  bool wgmma_run_in_flight_ = false;         // the run being printed stays in flight
  std::vector<std::string> in_flight_acc_;  // the accumulators of the runs left in flight
  // Only in a run of wgmma (wgmma_run): its accumulators, each once.
  std::optional<std::vector<std::string>> wgmma_acc_;
  std::vector<std::string> pending_;
};

}  // namespace kiln::codegen::source::detail
