// split_host_device: a verified GPU function -> kernels with launch records (transforms.h).
#include <algorithm>
#include <unordered_set>

#include "device_regions.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"

namespace kiln::ir {
namespace {

// The launch extents and the data vars of the buffers a kernel touches.
class KernelScan : public StmtVisitor {
 public:
  KernelLaunch launch;
  std::unordered_set<const VarNode*> used;

 protected:
  void visit_for(const ForNode* op) override {
    if (op->for_kind == ForKind::ThreadBinding) {
      const std::string& tag = op->thread_tag;
      int axis = tag.back() - 'x';
      int64_t ext = as_const_int(op->extent).value_or(1);
      auto& dims = tag.rfind("blockIdx.", 0) == 0 ? launch.grid : launch.block;
      dims[axis] = std::max(dims[axis], ext);
    }
    StmtVisitor::visit_for(op);
  }
  void visit_buffer_load(const BufferLoadNode* op) override {
    used.insert(op->buffer->data.get());
    StmtVisitor::visit_buffer_load(op);
  }
  void visit_buffer_store(const BufferStoreNode* op) override {
    used.insert(op->buffer->data.get());
    StmtVisitor::visit_buffer_store(op);
  }
};

}  // namespace

DeviceProgram split_host_device(const PrimFunc& f) {
  detail::DeviceRegions regions = detail::device_regions(f.body);
  DeviceProgram p;
  p.name = f.name;
  p.params = f.params;
  p.workspace = regions.workspace;
  std::vector<Buffer> all = p.params;
  all.insert(all.end(), p.workspace.begin(), p.workspace.end());
  for (size_t k = 0; k < regions.kernels.size(); ++k) {
    KernelScan scan;
    scan.visit_stmt(regions.kernels[k]);
    PrimFunc kernel;
    kernel.name = regions.kernels.size() == 1 ? f.name : f.name + "_k" + std::to_string(k);
    kernel.body = regions.kernels[k];
    KernelLaunch launch = scan.launch;
    launch.kernel = kernel.name;
    for (size_t i = 0; i < all.size(); ++i) {
      if (!scan.used.count(all[i]->data.get())) continue;
      kernel.params.push_back(all[i]);
      launch.args.push_back(static_cast<int>(i));
    }
    p.kernels.push_back(std::move(kernel));
    p.launches.push_back(std::move(launch));
  }
  return p;
}

}  // namespace kiln::ir
