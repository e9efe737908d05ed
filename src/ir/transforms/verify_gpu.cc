// verify_gpu: thread binding and GPU limits of a lowered GPU function (transforms.h).
//
// A kernel without any bound loop runs on one thread (a 0-d stage, a reduction to a scalar,
// before a cross-thread reduction is scheduled); in a kernel with bound loops, a store outside
// them would run once per thread: refused.
// Global allocations inside a kernel (a stage computed at a loop without a shared or local
// scope) would be a heap allocation per thread: refused, naming the buffer.
#include <map>
#include <string>

#include "device_regions.h"
#include "kiln/ir/functor.h"
#include "ir/shared_storage.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"

namespace kiln::ir {
namespace {

bool is_block_tag(const std::string& tag) { return tag.rfind("blockIdx.", 0) == 0; }

bool has_thread_binding(const Stmt& s) {
  struct Scan : StmtVisitor {
    bool found = false;
    void visit_for(const ForNode* op) override {
      found |= op->for_kind == ForKind::ThreadBinding;
      StmtVisitor::visit_for(op);
    }
  } scan;
  scan.visit_stmt(s);
  return scan.found;
}

class KernelChecker : public StmtVisitor {
 public:
  KernelChecker(const std::string& func, int index, bool single_thread)
      : where_("function '" + func + "', kernel " + std::to_string(index)), single_thread_(single_thread) {}

  std::map<std::string, int64_t> extents;  // thread tag -> launch extent

  const std::string& where() const { return where_; }

 protected:
  void visit_for(const ForNode* op) override {
    if (op->for_kind != ForKind::ThreadBinding) {
      StmtVisitor::visit_for(op);
      return;
    }
    const std::string& tag = op->thread_tag;
    KILN_USER_CHECK(tag != "vthread") << where_ << ": loop '" << op->loop_var.name()
                                      << "' is bound to vthread, which GPU code generation does not lower yet";
    auto ext = as_const_int(op->extent);
    KILN_USER_CHECK(ext && *ext >= 1) << where_ << ": loop '" << op->loop_var.name() << "' bound to " << tag
                                      << " needs a constant extent";
    KILN_USER_CHECK(!is_block_tag(tag) || thread_depth_ == 0)
        << where_ << ": loop '" << op->loop_var.name() << "' bound to " << tag
        << " sits inside a threadIdx loop (block axes must be outside thread axes)";
    // A loop bound to a tag inside another bound to it (a cooperative fetch computed at a
    // thread loop) reads the same hardware index: no new launch dimension.
    int64_t& e = extents[tag];
    e = std::max(e, *ext);
    ++bound_[tag];
    thread_depth_ += is_block_tag(tag) ? 0 : 1;
    StmtVisitor::visit_for(op);
    thread_depth_ -= is_block_tag(tag) ? 0 : 1;
    if (--bound_[tag] == 0) bound_.erase(tag);
  }

  void visit_allocate(const AllocateNode* op) override {
    const Buffer& b = op->buffer;
    KILN_USER_CHECK(b->scope == "shared" || b->scope == "local")
        << where_ << ": buffer '" << b->name << "' is allocated in " << b->scope
        << " memory inside the kernel (a stage computed at a GPU loop needs scope shared or local)";
    StmtVisitor::visit_allocate(op);
  }

  void visit_buffer_store(const BufferStoreNode* op) override {
    KILN_USER_CHECK(single_thread_ || !bound_.empty()) << where_ << ": buffer '" << op->buffer->name
                                     << "' is written outside any thread-bound loop (bind its loops to "
                                        "blockIdx/threadIdx)";
    StmtVisitor::visit_buffer_store(op);
  }

 private:
  std::string where_;
  bool single_thread_;
  std::map<std::string, int> bound_;  // tag -> enclosing loops bound to it
  int thread_depth_ = 0;
};

}  // namespace

void verify_gpu(const PrimFunc& f, const GpuLimits& limits) {
  detail::DeviceRegions regions = detail::device_regions(f.body);
  for (size_t k = 0; k < regions.kernels.size(); ++k) {
    KernelChecker c(f.name, static_cast<int>(k), !has_thread_binding(regions.kernels[k]));
    c.visit_stmt(regions.kernels[k]);
    auto ext = [&](const char* tag) { return c.extents.count(tag) ? c.extents.at(tag) : int64_t{1}; };
    const int64_t threads = ext("threadIdx.x") * ext("threadIdx.y") * ext("threadIdx.z");
    KILN_USER_CHECK(threads <= limits.max_threads_per_block)
        << c.where() << ": " << threads << " threads per block, more than the target's " << limits.max_threads_per_block;
    KILN_USER_CHECK(ext("threadIdx.x") <= limits.max_block_xy && ext("threadIdx.y") <= limits.max_block_xy &&
                    ext("threadIdx.z") <= limits.max_block_z)
        << c.where() << ": block of " << ext("threadIdx.x") << " x " << ext("threadIdx.y") << " x " << ext("threadIdx.z")
        << " threads exceeds the per-dimension limits (" << limits.max_block_xy << ", " << limits.max_block_xy << ", "
        << limits.max_block_z << ")";
    KILN_USER_CHECK(ext("blockIdx.x") <= limits.max_grid_x && ext("blockIdx.y") <= limits.max_grid_yz &&
                    ext("blockIdx.z") <= limits.max_grid_yz)
        << c.where() << ": grid of " << ext("blockIdx.x") << " x " << ext("blockIdx.y") << " x " << ext("blockIdx.z")
        << " blocks exceeds the limits (" << limits.max_grid_x << ", " << limits.max_grid_yz << ", "
        << limits.max_grid_yz << ")";
    // Buffers live apart share bytes (plan_shared_storage); the double buffers
    // inject_double_buffer makes later are build_gpu's to check.
    const int64_t shared_bytes = plan_shared_storage(regions.kernels[k]).bytes;
    KILN_USER_CHECK(shared_bytes <= limits.max_shared_bytes)
        << c.where() << ": " << shared_bytes << " bytes of shared memory per block, more than the target's "
        << limits.max_shared_bytes;
  }
}

}  // namespace kiln::ir
