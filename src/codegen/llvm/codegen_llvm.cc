// CodeGenLLVM: functions, types, statements, loops and allocation.
#include "codegen_llvm.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "kiln/support/error.h"

namespace kiln::codegen::llvm_backend {

using ir::DataType;

namespace {
// Allocations at most this large live on the stack (in the entry block, so SROA/mem2reg can
// promote small accumulators to registers); "local" scope may use up to kMaxLocalStackBytes.
// Larger ones go to the heap: worker threads have ordinary 8 MiB stacks.
constexpr int64_t kMaxStackBytes = 16 * 1024;
constexpr int64_t kMaxLocalStackBytes = 1024 * 1024;
constexpr uint64_t kAlignment = 64;  // the runtime's tensor alignment (runtime/ndarray.h)
}  // namespace

CodeGenLLVM::CodeGenLLVM(llvm::Module* module, CodeGenOptions options)
    : module_(module), ctx_(module->getContext()), builder_(module->getContext()), options_(std::move(options)) {
  llvm::FastMathFlags fmf;
  fmf.setAllowContract(true);
  if (options_.fast_math) {
    fmf.setAllowReassoc(true);
    fmf.setNoSignedZeros(true);
    fmf.setAllowReciprocal(true);
    fmf.setApproxFunc(true);
  }
  builder_.setFastMathFlags(fmf);
}

// ---------------------------------------------------------------------------------------------
// Types and variables

llvm::Type* CodeGenLLVM::llvm_type(DataType t) {
  llvm::Type* elem = nullptr;
  switch (t.code) {
    case ir::TypeCode::Int:
    case ir::TypeCode::UInt: elem = llvm::Type::getIntNTy(ctx_, t.bits); break;
    case ir::TypeCode::Bool: elem = llvm::Type::getInt1Ty(ctx_); break;
    case ir::TypeCode::BFloat: elem = llvm::Type::getFloatTy(ctx_); break;
    case ir::TypeCode::Handle: elem = llvm::PointerType::get(ctx_, 0); break;
    case ir::TypeCode::Float:
      if (t.bits == 16) elem = llvm::Type::getHalfTy(ctx_);
      else if (t.bits == 32) elem = llvm::Type::getFloatTy(ctx_);
      else if (t.bits == 64) elem = llvm::Type::getDoubleTy(ctx_);
      break;
  }
  KILN_USER_CHECK(elem != nullptr) << "llvm codegen: unsupported type " << t.str();
  if (t.lanes == 1) return elem;
  KILN_USER_CHECK(!t.is_handle()) << "llvm codegen: vector of handles " << t.str();
  return llvm::FixedVectorType::get(elem, t.lanes);
}

llvm::Type* CodeGenLLVM::storage_type(DataType t) {
  if (t.is_bool()) return llvm_type(DataType::i8(t.lanes));
  if (t.is_bfloat()) return llvm_type(DataType::i16(t.lanes));
  return llvm_type(t);
}

llvm::Value* CodeGenLLVM::lookup_var(const ir::VarNode* v) {
  auto it = fs_.vars.find(v);
  KILN_CHECK(it != fs_.vars.end()) << "variable '" << v->name << "' is used but not defined in kernel '"
                                   << kernel_name_ << "'";
  return it->second;
}

llvm::Value* CodeGenLLVM::bind(const ir::VarNode* v, llvm::Value* value) {
  auto it = fs_.vars.find(v);
  llvm::Value* previous = it == fs_.vars.end() ? nullptr : it->second;
  fs_.vars[v] = value;
  return previous;
}

void CodeGenLLVM::unbind(const ir::VarNode* v, llvm::Value* previous) {
  if (previous) fs_.vars[v] = previous;
  else fs_.vars.erase(v);
}

llvm::Function* CodeGenLLVM::new_function(const std::string& name, llvm::FunctionType* ty, bool external) {
  auto linkage = external ? llvm::Function::ExternalLinkage : llvm::Function::InternalLinkage;
  llvm::Function* f = llvm::Function::Create(ty, linkage, name, module_);
  KILN_USER_CHECK(f->getName() == name) << "llvm codegen: function name '" << name << "' is defined twice";
  f->addFnAttr(llvm::Attribute::NoUnwind);
  if (!options_.cpu.empty()) f->addFnAttr("target-cpu", options_.cpu);
  if (!options_.features.empty()) f->addFnAttr("target-features", options_.features);
  // We never inspect floating-point exception flags; this lets LLVM speculate FP ops.
  f->addFnAttr("no-trapping-math", "true");
  if (options_.prefer_512) {
    f->addFnAttr("prefer-vector-width", "512");
    f->addFnAttr("min-legal-vector-width", "512");
  }
  return f;
}

llvm::AllocaInst* CodeGenLLVM::entry_alloca(llvm::Type* ty, const std::string& name, uint64_t align) {
  llvm::IRBuilder<> b(fs_.entry, fs_.entry->getFirstInsertionPt());
  llvm::AllocaInst* a = b.CreateAlloca(ty, nullptr, name);
  a->setAlignment(llvm::Align(align));
  return a;
}

void CodeGenLLVM::return_if(llvm::Value* cond, llvm::Value* code) {
  llvm::Function* f = fs_.function;
  auto* fail = llvm::BasicBlock::Create(ctx_, "fail", f);
  auto* cont = llvm::BasicBlock::Create(ctx_, "cont", f);
  llvm::MDBuilder md(ctx_);
  builder_.CreateCondBr(cond, fail, cont, md.createBranchWeights(1, 1 << 20));
  builder_.SetInsertPoint(fail);
  builder_.CreateRet(code);
  builder_.SetInsertPoint(cont);
}

// ---------------------------------------------------------------------------------------------
// Functions

void CodeGenLLVM::add_function(const ir::PrimFunc& f) {
  KILN_USER_CHECK(!f.name.empty()) << "llvm codegen: a PrimFunc without a name";
  KILN_USER_CHECK(f.body.defined()) << "llvm codegen: PrimFunc '" << f.name << "' has no body";
  kernel_name_ = f.name;
  num_outlined_ = 0;
  llvm::Type* i32 = builder_.getInt32Ty();
  llvm::Type* ptr = builder_.getPtrTy();

  // The body lives in an internal function whose parameters are the data pointers: only
  // function arguments can carry noalias/align/dereferenceable, which alias analysis and the
  // vectorizers rely on. It is inlined into the kernel (the attributes become scoped metadata).
  std::vector<llvm::Type*> param_types(f.params.size(), ptr);
  llvm::Function* compute =
      new_function(f.name + ".compute", llvm::FunctionType::get(i32, param_types, false), false);
  std::unordered_set<const ir::VarNode*> seen;
  for (size_t i = 0; i < f.params.size(); ++i) {
    const ir::Buffer& b = f.params[i];
    KILN_USER_CHECK(b.defined()) << "PrimFunc '" << f.name << "': parameter " << i << " is undefined";
    KILN_USER_CHECK(seen.insert(b->data.get()).second)
        << "PrimFunc '" << f.name << "': parameter '" << b->name << "' appears twice";
    for (const ir::Expr& e : b->shape)
      KILN_USER_CHECK(ir::as_const_int(e).has_value())
          << "PrimFunc '" << f.name << "': parameter '" << b->name << "' has a non-constant shape";
    llvm::Argument* arg = compute->getArg(static_cast<unsigned>(i));
    arg->setName(b->name);
    arg->addAttr(llvm::Attribute::NoAlias);
    arg->addAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(kAlignment)));
    int64_t bytes = b.num_elements() * b->dtype.bytes();
    if (bytes > 0) arg->addAttr(llvm::Attribute::getWithDereferenceableBytes(ctx_, static_cast<uint64_t>(bytes)));
  }

  // The kernel: int32_t NAME(void* const* args, int32_t num_args).
  llvm::Function* kernel =
      new_function(f.name, llvm::FunctionType::get(i32, {ptr, i32}, false), /*external=*/true);
  {
    fs_ = FunctionState();
    fs_.function = kernel;
    fs_.entry = llvm::BasicBlock::Create(ctx_, "entry", kernel);
    builder_.SetInsertPoint(fs_.entry);
    llvm::Value* args = kernel->getArg(0);
    args->setName("args");
    llvm::Value* num_args = kernel->getArg(1);
    num_args->setName("num_args");
    const size_t num_params = f.params.size() + (f.batch_loop ? 1 : 0);
    return_if(builder_.CreateICmpNE(num_args, builder_.getInt32(static_cast<uint32_t>(num_params))),
              builder_.getInt32(-2));
    std::vector<llvm::Value*> ptrs;
    for (size_t i = 0; i < f.params.size(); ++i) {
      llvm::Value* slot = builder_.CreateConstInBoundsGEP1_64(ptr, args, i);
      ptrs.push_back(builder_.CreateAlignedLoad(ptr, slot, llvm::Align(8), f.params[i]->name));
    }
    if (f.batch_loop) emit_batch_loop(compute, args, ptrs);
    else builder_.CreateRet(builder_.CreateCall(compute, ptrs));
  }

  fs_ = FunctionState();
  fs_.function = compute;
  fs_.entry = llvm::BasicBlock::Create(ctx_, "entry", compute);
  builder_.SetInsertPoint(fs_.entry);
  for (size_t i = 0; i < f.params.size(); ++i) {
    bind(f.params[i]->data.get(), compute->getArg(static_cast<unsigned>(i)));
    buffer_data_vars_.insert(f.params[i]->data.get());
  }
  emit_stmt(f.body);
  builder_.CreateRet(builder_.getInt32(0));
  fs_ = FunctionState();

  for (llvm::Function* fn : {kernel, compute}) {
    std::string err;
    llvm::raw_string_ostream os(err);
    KILN_CHECK(!llvm::verifyFunction(*fn, &os)) << "invalid LLVM IR for '" << fn->getName().str() << "': " << os.str();
  }
}

// The dynamic-batch kernel's outermost loop (ir::PrimFunc::batch_loop): for b in [0, n), the
// body on every parameter advanced by b times its stride; the first non-zero return ends it.
// The body is inlined here, so the batch is a run-time extent of the kernel's own loop nest.
void CodeGenLLVM::emit_batch_loop(llvm::Function* compute, llvm::Value* args, const std::vector<llvm::Value*>& ptrs) {
  llvm::Type* i64 = builder_.getInt64Ty();
  llvm::Type* ptr = builder_.getPtrTy();
  llvm::Type* i8 = builder_.getInt8Ty();
  llvm::Value* info_slot = builder_.CreateConstInBoundsGEP1_64(ptr, args, ptrs.size());
  llvm::Value* info = builder_.CreateAlignedLoad(ptr, info_slot, llvm::Align(8), "batch_info");
  llvm::Value* n = builder_.CreateAlignedLoad(i64, info, llvm::Align(8), "batch");
  std::vector<llvm::Value*> strides;
  for (size_t i = 0; i < ptrs.size(); ++i)
    strides.push_back(builder_.CreateAlignedLoad(i64, builder_.CreateConstInBoundsGEP1_64(i64, info, i + 1),
                                                 llvm::Align(8), "batch_stride"));
  llvm::Function* f = fs_.function;
  llvm::BasicBlock* pre = builder_.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx_, "batch_head", f);
  auto* body = llvm::BasicBlock::Create(ctx_, "batch_body", f);
  auto* next = llvm::BasicBlock::Create(ctx_, "batch_next", f);
  auto* done = llvm::BasicBlock::Create(ctx_, "batch_done", f);
  auto* failed = llvm::BasicBlock::Create(ctx_, "batch_failed", f);
  builder_.CreateBr(head);
  builder_.SetInsertPoint(head);
  llvm::PHINode* b = builder_.CreatePHI(i64, 2, "b");
  b->addIncoming(builder_.getInt64(0), pre);
  builder_.CreateCondBr(builder_.CreateICmpSLT(b, n), body, done);
  builder_.SetInsertPoint(body);
  std::vector<llvm::Value*> moved;
  for (size_t i = 0; i < ptrs.size(); ++i)
    moved.push_back(builder_.CreateInBoundsGEP(i8, ptrs[i], builder_.CreateMul(b, strides[i])));
  llvm::Value* rc = builder_.CreateCall(compute, moved);
  builder_.CreateCondBr(builder_.CreateICmpNE(rc, builder_.getInt32(0)), failed, next);
  builder_.SetInsertPoint(failed);
  builder_.CreateRet(rc);
  builder_.SetInsertPoint(next);
  b->addIncoming(builder_.CreateAdd(b, builder_.getInt64(1)), next);
  builder_.CreateBr(head);
  builder_.SetInsertPoint(done);
  builder_.CreateRet(builder_.getInt32(0));
}

// ---------------------------------------------------------------------------------------------
// Statements

void CodeGenLLVM::emit_stmt(const ir::Stmt& s) {
  KILN_CHECK(s.defined()) << "undefined statement in kernel '" << kernel_name_ << "'";
  switch (s.kind()) {
    case ir::StmtKind::LetStmt: {
      const auto* op = s.as<ir::LetStmtNode>();
      llvm::Value* v = emit(op->value);
      v->setName(op->var->name);
      llvm::Value* prev = bind(op->var.get(), v);
      emit_stmt(op->body);
      unbind(op->var.get(), prev);
      return;
    }
    case ir::StmtKind::AttrStmt: return emit_attr(s.as<ir::AttrStmtNode>());
    case ir::StmtKind::BufferStore: return emit_store(s.as<ir::BufferStoreNode>());
    case ir::StmtKind::Allocate: return emit_allocate(s.as<ir::AllocateNode>());
    case ir::StmtKind::For: return emit_for(s.as<ir::ForNode>());
    case ir::StmtKind::IfThenElse: return emit_if(s.as<ir::IfThenElseNode>());
    case ir::StmtKind::Seq:
      for (const ir::Stmt& st : s.as<ir::SeqStmtNode>()->seq) emit_stmt(st);
      return;
    case ir::StmtKind::Evaluate: {
      const ir::Expr& e = s.as<ir::EvaluateNode>()->value;
      if (!e.as<ir::IntImmNode>()) emit(e);  // Evaluate(0) is a no-op placeholder
      return;
    }
  }
  KILN_CHECK(false) << "unknown statement kind";
}

void CodeGenLLVM::emit_attr(const ir::AttrStmtNode* op) {
  // Attributes are annotations; the body is what runs. Two schedule pragmas become LLVM loop
  // hints on the loop directly under them: pragma_unroll (value n > 1: unroll by n; 1: never
  // unroll, where LLVM's own unrolling would spill a register tile; else fully) and
  // pragma_vectorize.
  bool is_pragma_for = op->body.as<ir::ForNode>() != nullptr || op->body.as<ir::AttrStmtNode>() != nullptr;
  if (is_pragma_for && op->key == "pragma_unroll") {
    auto n = op->value.defined() ? ir::as_const_int(op->value) : std::nullopt;
    pending_hints_.unroll = (n && *n >= 1) ? static_cast<int>(*n) : -1;
  } else if (is_pragma_for && op->key == "pragma_vectorize") {
    pending_hints_.vectorize = true;
  }
  emit_stmt(op->body);
}

void CodeGenLLVM::emit_allocate(const ir::AllocateNode* op) {
  const ir::Buffer& b = op->buffer;
  for (const ir::Expr& e : b->shape)
    KILN_USER_CHECK(ir::as_const_int(e).has_value())
        << "kernel '" << kernel_name_ << "': allocation '" << b->name << "' has a non-constant size";
  int64_t n = std::max<int64_t>(b.num_elements(), 1);
  int64_t bytes = n * b->dtype.bytes();
  llvm::Type* elem = storage_type(b->dtype);
  bool on_stack = bytes <= kMaxStackBytes || (b->scope == "local" && bytes <= kMaxLocalStackBytes);
  llvm::Value* data = nullptr;
  if (on_stack) {
    data = entry_alloca(llvm::ArrayType::get(elem, static_cast<uint64_t>(n)), b->name, kAlignment);
  } else {
    llvm::Type* ptr = builder_.getPtrTy();
    llvm::Type* i64 = builder_.getInt64Ty();
    llvm::FunctionCallee memalign = module_->getOrInsertFunction(
        "posix_memalign", llvm::FunctionType::get(builder_.getInt32Ty(), {ptr, i64, i64}, false));
    llvm::AllocaInst* slot = entry_alloca(ptr, b->name + ".slot", 8);
    llvm::Value* rc = builder_.CreateCall(memalign, {slot, builder_.getInt64(kAlignment), builder_.getInt64(bytes)});
    return_if(builder_.CreateICmpNE(rc, builder_.getInt32(0)), builder_.getInt32(-1));
    data = builder_.CreateAlignedLoad(ptr, slot, llvm::Align(8), b->name);
  }
  llvm::Value* prev = bind(b->data.get(), data);
  buffer_data_vars_.insert(b->data.get());
  emit_stmt(op->body);
  unbind(b->data.get(), prev);
  if (!on_stack) {
    llvm::FunctionCallee free_fn = module_->getOrInsertFunction(
        "free", llvm::FunctionType::get(builder_.getVoidTy(), {builder_.getPtrTy()}, false));
    builder_.CreateCall(free_fn, {data});
  }
}

void CodeGenLLVM::emit_if(const ir::IfThenElseNode* op) {
  KILN_USER_CHECK(op->condition.dtype().is_scalar())
      << "kernel '" << kernel_name_ << "': if condition of type " << op->condition.dtype().str()
      << " must be a scalar bool (vector conditions must be Selects)";
  llvm::Value* cond = emit(op->condition);
  llvm::Function* f = fs_.function;
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", f);
  auto* end_bb = llvm::BasicBlock::Create(ctx_, "if.end", f);
  auto* else_bb = op->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "if.else", f) : end_bb;
  builder_.CreateCondBr(cond, then_bb, else_bb);
  builder_.SetInsertPoint(then_bb);
  emit_stmt(op->then_case);
  builder_.CreateBr(end_bb);
  if (op->else_case.defined()) {
    builder_.SetInsertPoint(else_bb);
    emit_stmt(op->else_case);
    builder_.CreateBr(end_bb);
  }
  builder_.SetInsertPoint(end_bb);
}

// ---------------------------------------------------------------------------------------------
// Loops

llvm::MDNode* CodeGenLLVM::loop_metadata(bool vectorize, int unroll) {
  if (!vectorize && unroll == 0) return nullptr;
  std::vector<llvm::Metadata*> ops = {nullptr};  // slot 0: the loop id itself
  auto flag = [&](const char* name, llvm::Metadata* value) {
    std::vector<llvm::Metadata*> kv = {llvm::MDString::get(ctx_, name)};
    if (value) kv.push_back(value);
    ops.push_back(llvm::MDNode::get(ctx_, kv));
  };
  if (vectorize) flag("llvm.loop.vectorize.enable", llvm::ConstantAsMetadata::get(builder_.getTrue()));
  if (unroll == -1) flag("llvm.loop.unroll.full", nullptr);
  if (unroll == 1) flag("llvm.loop.unroll.disable", nullptr);
  if (unroll > 1) flag("llvm.loop.unroll.count", llvm::ConstantAsMetadata::get(builder_.getInt32(unroll)));
  llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, ops);
  id->replaceOperandWith(0, id);
  return id;
}

void CodeGenLLVM::emit_loop(llvm::Value* begin, llvm::Value* end, bool is_signed, const std::string& name,
                            llvm::MDNode* loop_md, const std::function<void(llvm::Value*)>& body) {
  llvm::Function* f = fs_.function;
  llvm::BasicBlock* pre = builder_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, name + ".header", f);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, name + ".body", f);
  auto* exit_bb = llvm::BasicBlock::Create(ctx_, name + ".exit", f);
  builder_.CreateBr(header);
  builder_.SetInsertPoint(header);
  llvm::PHINode* iv = builder_.CreatePHI(begin->getType(), 2, name);
  iv->addIncoming(begin, pre);
  llvm::Value* cond = is_signed ? builder_.CreateICmpSLT(iv, end) : builder_.CreateICmpULT(iv, end);
  builder_.CreateCondBr(cond, body_bb, exit_bb);
  builder_.SetInsertPoint(body_bb);
  body(iv);
  // The body may have created blocks: the latch is wherever it ended.
  llvm::Value* next = builder_.CreateAdd(iv, llvm::ConstantInt::get(iv->getType(), 1), name + ".next",
                                         /*HasNUW=*/!is_signed, /*HasNSW=*/is_signed);
  llvm::BranchInst* back = builder_.CreateBr(header);
  if (loop_md) back->setMetadata(llvm::LLVMContext::MD_loop, loop_md);
  iv->addIncoming(next, builder_.GetInsertBlock());
  builder_.SetInsertPoint(exit_bb);
}

void CodeGenLLVM::emit_for(const ir::ForNode* op) {
  const std::string& name = op->loop_var->name;
  LoopHints hints = pending_hints_;
  pending_hints_ = LoopHints();
  switch (op->for_kind) {
    case ir::ForKind::ThreadBinding:
      KILN_THROW() << "kernel '" << kernel_name_ << "': loop '" << name << "' is bound to thread '" << op->thread_tag
                   << "'; thread bindings need the CUDA target, the llvm target cannot run them";
    case ir::ForKind::Parallel:
      if (!fs_.in_parallel) return emit_parallel_for(op);
      break;  // nested parallelism: the outer loop already uses every thread; run serially
    case ir::ForKind::Vectorized: hints.vectorize = true; break;
    case ir::ForKind::Unrolled:
      if (hints.unroll == 0) hints.unroll = -1;
      break;
    case ir::ForKind::Serial: break;
  }
  DataType t = op->loop_var.dtype();
  KILN_USER_CHECK(t.is_integer() && t.is_scalar())
      << "kernel '" << kernel_name_ << "': loop variable '" << name << "' has type " << t.str();
  llvm::Value* begin = emit_cast(op->min.dtype(), t, emit(op->min));
  llvm::Value* extent = emit_cast(op->extent.dtype(), t, emit(op->extent));
  llvm::Value* end = builder_.CreateAdd(begin, extent, name + ".end", !t.is_int(), t.is_int());
  analyzer_.bind(op->loop_var, ir::Range(op->min, op->extent));
  emit_loop(begin, end, t.is_int(), name, loop_metadata(hints.vectorize, hints.unroll), [&](llvm::Value* iv) {
    llvm::Value* prev = bind(op->loop_var.get(), iv);
    emit_stmt(op->body);
    unbind(op->loop_var.get(), prev);
  });
}

}  // namespace kiln::codegen::llvm_backend
