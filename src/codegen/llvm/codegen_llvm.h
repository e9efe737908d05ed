// CodeGenLLVM: translates loop-level PrimFuncs into LLVM IR functions (internal to the LLVM
// backend; the public API is codegen/build.h).
//
// The work is split by topic over several files, all methods of this one class:
//   codegen_llvm.cc        functions, types, statements, loops, allocation
//   codegen_expr.cc        expressions: arithmetic, casts, selects, vectors
//   codegen_memory.cc      buffer addresses, loads and stores
//   codegen_intrinsics.cc  calls: math intrinsics, extern calls, address_of
//   codegen_parallel.cc    outlining of parallel loops onto the runtime thread pool
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/arith.h"
#include "kiln/ir/expr.h"
#include "kiln/ir/stmt.h"
#include "kiln/target/target.h"

namespace kiln::codegen::llvm_backend {

struct CodeGenOptions {
  std::string cpu;
  std::string features;
  bool fast_math = false;
  // Use 512-bit vectors: sets "prefer-vector-width" and "min-legal-vector-width" so the x86
  // backend neither splits the IR's 512-bit vectors nor picks 256 bits when vectorizing.
  bool prefer_512 = false;
  // Width of the vector registers the code uses: 512 with prefer_512, 256 with AVX/AVX2,
  // else 128 (SSE, NEON). Masked memory intrinsics are emitted in pieces no wider than this
  // (codegen_memory.cc).
  int native_vector_bits = 128;
  // The ISA has mask registers (AVX-512): a masked store costs what a plain one does. Without
  // them (AVX2's vmaskmovps to memory, microcoded on AMD cores; NEON, where LLVM stores lane by
  // lane) a store under a run-time mask first tests the mask: all lanes on, a plain store.
  bool mask_registers = false;
  // The instruction int8_dot becomes where its lanes fit it (codegen_dot.cc).
  Int8Dot int8_dot = Int8Dot::kNone;
};

class CodeGenLLVM {
 public:
  CodeGenLLVM(llvm::Module* module, CodeGenOptions options);
  // Emits `f` as the external kernel f.name (kernel.h calling convention), plus internal
  // helper functions (its body, outlined parallel loops).
  void add_function(const ir::PrimFunc& f);

 private:
  // A dynamic-batch kernel's loop over the samples around its body (ir::PrimFunc::batch_loop).
  void emit_batch_loop(llvm::Function* compute, llvm::Value* args, const std::vector<llvm::Value*>& ptrs);

  // ---- int8 dot products (codegen_dot.cc)
  llvm::Value* emit_int8_dot(const ir::CallNode* op);

  // ---- types and values (codegen_llvm.cc)
  // Type of a value in registers: bool -> i1, bf16 -> float (see codegen_expr.cc), handle -> ptr.
  llvm::Type* llvm_type(ir::DataType t);
  // Type of an element in memory: bool -> i8, bf16 -> i16, otherwise llvm_type.
  llvm::Type* storage_type(ir::DataType t);
  llvm::Value* lookup_var(const ir::VarNode* v);
  // Binds v to `value` and returns what it was bound to before (nullptr: nothing), for unbind.
  llvm::Value* bind(const ir::VarNode* v, llvm::Value* value);
  void unbind(const ir::VarNode* v, llvm::Value* previous);
  llvm::Function* new_function(const std::string& name, llvm::FunctionType* ty, bool external);
  llvm::AllocaInst* entry_alloca(llvm::Type* ty, const std::string& name, uint64_t align);
  // Ends the current block with `ret code` when `cond` holds and continues after it.
  void return_if(llvm::Value* cond, llvm::Value* code);

  // ---- statements (codegen_llvm.cc)
  void emit_stmt(const ir::Stmt& s);
  void emit_attr(const ir::AttrStmtNode* op);
  void emit_allocate(const ir::AllocateNode* op);
  void emit_for(const ir::ForNode* op);
  void emit_if(const ir::IfThenElseNode* op);
  // A counted loop var in [begin, end) with step 1; body(iv) emits the body.
  void emit_loop(llvm::Value* begin, llvm::Value* end, bool is_signed, const std::string& name,
                 llvm::MDNode* loop_md, const std::function<void(llvm::Value*)>& body);
  llvm::MDNode* loop_metadata(bool vectorize, int unroll);

  // ---- expressions (codegen_expr.cc)
  llvm::Value* emit(const ir::Expr& e);
  llvm::Value* emit_binary(const ir::BinaryNode* op);
  llvm::Value* emit_floordiv_mod(const ir::BinaryNode* op, llvm::Value* a, llvm::Value* b);
  llvm::Value* emit_compare(ir::ExprKind k, ir::DataType t, llvm::Value* a, llvm::Value* b);
  llvm::Value* emit_select(const ir::SelectNode* op);
  llvm::Value* emit_cast(ir::DataType from, ir::DataType to, llvm::Value* v);
  llvm::Value* emit_ramp(const ir::RampNode* op);
  llvm::Value* make_constant(ir::DataType t, double fvalue, int64_t ivalue, bool is_float);
  // Register <-> memory representation (bool as i8, bf16 as the top half of a float).
  llvm::Value* to_storage(llvm::Value* v, ir::DataType t);
  llvm::Value* from_storage(llvm::Value* v, ir::DataType t);
  // float -> float holding the nearest bf16 (round to nearest even; NaN stays NaN).
  llvm::Value* round_to_bf16(llvm::Value* f);
  // ---- buffer accesses (codegen_memory.cc)
  llvm::Value* emit_load(const ir::BufferLoadNode* op);
  void emit_store(const ir::BufferStoreNode* op);
  // Base pointer of a buffer and the element address for a scalar index.
  llvm::Value* buffer_ptr(const ir::Buffer& b);
  llvm::Value* element_address(const ir::Buffer& b, llvm::Value* index, ir::DataType index_type);
  llvm::Value* to_i64_index(llvm::Value* index, ir::DataType index_type);
  // A scalar index computed in 64 bits (see codegen_expr.cc).
  llvm::Value* emit_index(const ir::Expr& index);
  // llvm.masked.load/store/gather/scatter of vector type `ty` in pieces of at most
  // native_vector_bits, each with its slice of `mask`. `where` is lane 0's address (Load,
  // Store) or one pointer per lane (Gather, Scatter); `value` is what a Store/Scatter writes.
  // Returns the loaded value (zero in lanes the mask leaves out), nullptr for stores.
  enum class MaskedOp { Load, Store, Gather, Scatter };
  llvm::Value* masked_access(MaskedOp op, llvm::Type* ty, llvm::Value* where, llvm::Value* value, llvm::Align align,
                             llvm::Value* mask, const std::string& name = "");
  // A store under a run-time mask without mask registers: a plain store when every lane is on,
  // else llvm.masked.store.
  void store_unless_masked(llvm::Value* v, llvm::Value* at, llvm::Align align, llvm::Value* mask);
  // whole() where every lane of `mask` is on, else partial(): one predictable branch (only a
  // row's border vectors are partial) in blocks named "<what>.full" and "<what>.masked". Returns
  // their value, or nullptr where they make none (stores).
  llvm::Value* unless_masked(llvm::Value* mask, const std::string& what, const std::function<llvm::Value*()>& whole,
                             const std::function<llvm::Value*()>& partial);
  // `lanes` elements `stride` apart from addr, read with plain loads that stay inside their span.
  llvm::Value* span_load(llvm::Type* elem, llvm::Value* addr, int64_t lanes, int64_t stride, llvm::Align align,
                         const std::string& name);
  // Lanes [begin, begin + count) of vector v.
  llvm::Value* lanes_of(llvm::Value* v, unsigned begin, unsigned count);
  // True if evaluating e could fault (a load not provably in bounds, an integer division by a
  // possibly-zero divisor) or has side effects (an extern call), so a Select must not evaluate
  // it for lanes/cases that do not choose it.
  bool may_trap(const ir::Expr& e) const;
  bool provably_in_bounds(const ir::BufferLoadNode* load) const;

  // ---- calls (codegen_intrinsics.cc)
  llvm::Value* emit_call(const ir::CallNode* op);
  llvm::Value* emit_intrinsic(const ir::CallNode* op);
  llvm::Value* emit_extern_call(const ir::CallNode* op);
  llvm::Value* emit_address_of(const ir::CallNode* op);
  llvm::Value* call_llvm_intrinsic(unsigned id, llvm::Value* x);
  llvm::Value* call_llvm_intrinsic(unsigned id, llvm::Value* x, llvm::Value* y);
  llvm::Value* call_libm_per_lane(const std::string& fname, llvm::Value* x);
  llvm::Value* exp_f32(llvm::Value* x);
  llvm::Value* tanh_f32(llvm::Value* x);
  llvm::Value* erf_f32(llvm::Value* x);
  llvm::Value* fconst(llvm::Type* ty, double v);

  // ---- parallel loops (codegen_parallel.cc)
  void emit_parallel_for(const ir::ForNode* op);
  std::vector<const ir::VarNode*> free_vars_of(const ir::ForNode* op);

  // Per-function state, saved and restored around outlined functions.
  struct FunctionState {
    llvm::Function* function = nullptr;
    llvm::BasicBlock* entry = nullptr;
    ir::VarMap<llvm::Value*> vars;
    bool in_parallel = false;
    // Active lanes while emitting one side of a vector Select (nullptr: all lanes).
    llvm::Value* lane_mask = nullptr;
  };

  llvm::Module* module_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> builder_;
  CodeGenOptions options_;
  FunctionState fs_;
  // Ranges of the loop variables around the code being emitted (loop vars are defined once
  // per function, so bindings never need to be undone); proves loads in bounds.
  ir::arith::Analyzer analyzer_;
  std::string kernel_name_;
  int num_outlined_ = 0;
  // Data vars of buffers that own their memory (parameters, allocations): their pointers may
  // be marked noalias. Other handle vars (address_of results) may alias them.
  std::unordered_set<const ir::VarNode*> buffer_data_vars_;
  // Loop hints from a pragma AttrStmt, for the For directly under it.
  struct LoopHints {
    bool vectorize = false;
    int unroll = 0;  // 0 none, -1 full, 1 never, n > 1 count
  } pending_hints_;
};

}  // namespace kiln::codegen::llvm_backend
