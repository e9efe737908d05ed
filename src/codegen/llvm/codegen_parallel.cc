// CodeGenLLVM: parallel loops, outlined onto the runtime thread pool.
//
// `for (i = min; i < min + extent; ++i) parallel BODY` becomes
//   closure = {min, extent, every outer value BODY uses}
//   rc = kiln_parallel_for(NAME.parK, &closure, 0)      // 0: the runtime picks (four per pool thread)
//   if (rc != 0) return rc;
// where NAME.parK(task, num_tasks, closure) unpacks the closure and calls
//   NAME.parK.body(task, num_tasks, min, extent, captures...)
// which runs the contiguous chunk [task*c, min((task+1)*c, extent)), c = ceil(extent/num_tasks).
// The body is a function of its own, rather than code reading the closure, because only
// function arguments can carry noalias/align: loaded pointers would make every store alias
// every load and defeat the vectorizers and LICM.
//
// A parallel loop inside a parallel body runs serially: the outer loop already occupies the
// pool (the runtime would serialize it anyway).
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <unordered_set>

#include "codegen_llvm.h"
#include "kiln/ir/functor.h"
#include "kiln/support/error.h"

namespace kiln::codegen::llvm_backend {

using ir::DataType;

namespace {

// Variables a statement mentions, in order of first appearance, buffer data vars included.
class VarCollector : public ir::StmtVisitor {
 public:
  std::vector<const ir::VarNode*> vars;

 protected:
  void add(const ir::VarNode* v) {
    if (seen_.insert(v).second) vars.push_back(v);
  }
  void visit_var(const ir::VarNode* op) override { add(op); }
  void visit_buffer_load(const ir::BufferLoadNode* op) override {
    add(op->buffer->data.get());
    ir::StmtVisitor::visit_buffer_load(op);
  }
  void visit_buffer_store(const ir::BufferStoreNode* op) override {
    add(op->buffer->data.get());
    ir::StmtVisitor::visit_buffer_store(op);
  }

 private:
  std::unordered_set<const ir::VarNode*> seen_;
};

}  // namespace

std::vector<const ir::VarNode*> CodeGenLLVM::free_vars_of(const ir::ForNode* op) {
  VarCollector c;
  c.visit_stmt(op->body);
  std::vector<const ir::VarNode*> free;
  for (const ir::VarNode* v : c.vars)
    if (v != op->loop_var.get() && fs_.vars.count(v)) free.push_back(v);
  return free;
}

void CodeGenLLVM::emit_parallel_for(const ir::ForNode* op) {
  const std::string& name = op->loop_var->name;
  DataType t = op->loop_var.dtype();
  KILN_USER_CHECK(t.is_integer() && t.is_scalar())
      << "kernel '" << kernel_name_ << "': parallel loop variable '" << name << "' has type " << t.str();
  bool is_signed = t.is_int();
  llvm::Type* ivty = llvm_type(t);
  llvm::Type* i32 = builder_.getInt32Ty();
  llvm::Type* ptr = builder_.getPtrTy();

  llvm::Value* min = emit_cast(op->min.dtype(), t, emit(op->min));
  llvm::Value* extent = emit_cast(op->extent.dtype(), t, emit(op->extent));
  std::vector<const ir::VarNode*> captures = free_vars_of(op);
  std::vector<llvm::Value*> values = {min, extent};
  for (const ir::VarNode* v : captures) values.push_back(lookup_var(v));
  std::vector<llvm::Type*> fields;
  for (llvm::Value* v : values) fields.push_back(v->getType());

  llvm::StructType* closure_ty = llvm::StructType::get(ctx_, fields);
  // Aligned for its most aligned field (a captured vector value wants 64 bytes).
  uint64_t closure_align = std::max<uint64_t>(8, module_->getDataLayout().getABITypeAlign(closure_ty).value());
  llvm::AllocaInst* closure = entry_alloca(closure_ty, name + ".closure", closure_align);
  for (size_t i = 0; i < values.size(); ++i)
    builder_.CreateStore(values[i], builder_.CreateStructGEP(closure_ty, closure, static_cast<unsigned>(i)));

  std::string base = kernel_name_ + ".par" + std::to_string(num_outlined_++);
  llvm::Function* task_fn = new_function(base, llvm::FunctionType::get(i32, {i32, i32, ptr}, false), false);
  std::vector<llvm::Type*> body_params = {i32, i32};
  body_params.insert(body_params.end(), fields.begin(), fields.end());
  llvm::Function* body_fn = new_function(base + ".body", llvm::FunctionType::get(i32, body_params, false), false);

  // noalias is only sound if no two pointer arguments can reach the same memory: true for the
  // data pointers of distinct buffers, not for other handles (an address_of result).
  bool all_buffers = true;
  for (const ir::VarNode* v : captures)
    if (v->dtype.is_handle() && !buffer_data_vars_.count(v)) all_buffers = false;
  for (size_t i = 0; i < captures.size(); ++i) {
    llvm::Argument* arg = body_fn->getArg(static_cast<unsigned>(4 + i));
    arg->setName(captures[i]->name);
    if (captures[i]->dtype.is_handle() && buffer_data_vars_.count(captures[i])) {
      if (all_buffers) arg->addAttr(llvm::Attribute::NoAlias);
      arg->addAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));
    }
  }

  FunctionState saved = std::move(fs_);
  llvm::IRBuilderBase::InsertPoint saved_ip = builder_.saveIP();

  // The task function: unpack the closure, call the body.
  fs_ = FunctionState();
  fs_.function = task_fn;
  fs_.entry = llvm::BasicBlock::Create(ctx_, "entry", task_fn);
  builder_.SetInsertPoint(fs_.entry);
  {
    std::vector<llvm::Value*> args = {task_fn->getArg(0), task_fn->getArg(1)};
    for (size_t i = 0; i < fields.size(); ++i)
      args.push_back(builder_.CreateLoad(fields[i],
                                         builder_.CreateStructGEP(closure_ty, task_fn->getArg(2), static_cast<unsigned>(i))));
    builder_.CreateRet(builder_.CreateCall(body_fn, args));
  }

  // The body function: this task's chunk of the iteration space.
  fs_ = FunctionState();
  fs_.function = body_fn;
  fs_.entry = llvm::BasicBlock::Create(ctx_, "entry", body_fn);
  fs_.in_parallel = true;
  builder_.SetInsertPoint(fs_.entry);
  for (size_t i = 0; i < captures.size(); ++i) bind(captures[i], body_fn->getArg(static_cast<unsigned>(4 + i)));
  {
    llvm::Value* task = builder_.CreateIntCast(body_fn->getArg(0), ivty, true, "task");
    llvm::Value* num_tasks = builder_.CreateIntCast(body_fn->getArg(1), ivty, true, "num_tasks");
    llvm::Value* bmin = body_fn->getArg(2);
    llvm::Value* bext = body_fn->getArg(3);
    llvm::Value* one = llvm::ConstantInt::get(ivty, 1);
    llvm::Value* chunk = builder_.CreateAdd(bext, builder_.CreateSub(num_tasks, one));
    chunk = is_signed ? builder_.CreateSDiv(chunk, num_tasks) : builder_.CreateUDiv(chunk, num_tasks);
    auto imin = [&](llvm::Value* a, llvm::Value* b) {
      return builder_.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, a, b);
    };
    llvm::Value* lo = imin(builder_.CreateMul(task, chunk), bext);
    llvm::Value* hi = imin(builder_.CreateAdd(lo, chunk), bext);
    llvm::Value* begin = builder_.CreateAdd(bmin, lo, name + ".begin", !is_signed, is_signed);
    llvm::Value* end = builder_.CreateAdd(bmin, hi, name + ".end", !is_signed, is_signed);
    analyzer_.bind(op->loop_var, ir::Range(op->min, op->extent));
    emit_loop(begin, end, is_signed, name, nullptr, [&](llvm::Value* iv) {
      bind(op->loop_var.get(), iv);
      emit_stmt(op->body);
      fs_.vars.erase(op->loop_var.get());
    });
    builder_.CreateRet(builder_.getInt32(0));
  }

  fs_ = std::move(saved);
  builder_.restoreIP(saved_ip);
  for (llvm::Function* fn : {task_fn, body_fn}) {
    std::string err;
    llvm::raw_string_ostream os(err);
    KILN_CHECK(!llvm::verifyFunction(*fn, &os)) << "invalid LLVM IR for '" << fn->getName().str() << "': " << os.str();
  }

  llvm::FunctionCallee parallel_for = module_->getOrInsertFunction(
      "kiln_parallel_for", llvm::FunctionType::get(i32, {ptr, ptr, i32}, false));
  llvm::Value* rc = builder_.CreateCall(parallel_for, {task_fn, closure, builder_.getInt32(0)});
  return_if(builder_.CreateICmpNE(rc, builder_.getInt32(0)), rc);
}

}  // namespace kiln::codegen::llvm_backend
