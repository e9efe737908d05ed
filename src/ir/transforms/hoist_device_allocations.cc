// hoist_device_allocations: a kernel's shared buffers allocated at its top (transforms.h).
#include "kiln/ir/functor.h"
#include "kiln/ir/transforms.h"

namespace kiln::ir {
namespace {

class SharedHoister : public StmtMutator {
 public:
  std::vector<Buffer> hoisted;

 protected:
  Stmt visit_allocate(const AllocateNode* op, const Stmt& self) override {
    if (op->buffer->scope != "shared") return StmtMutator::visit_allocate(op, self);
    hoisted.push_back(op->buffer);
    return mutate_stmt(op->body);
  }
};

}  // namespace

PrimFunc hoist_device_allocations(const PrimFunc& kernel) {
  SharedHoister h;
  PrimFunc out = kernel;
  out.body = h.mutate_stmt(kernel.body);
  for (auto it = h.hoisted.rbegin(); it != h.hoisted.rend(); ++it) out.body = allocate(*it, out.body);
  return out;
}

}  // namespace kiln::ir
