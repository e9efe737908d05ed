#include "device_regions.h"

namespace kiln::ir::detail {
namespace {

void collect(const Stmt& s, DeviceRegions* out) {
  if (!s.defined()) return;
  if (const auto* a = s.as<AllocateNode>(); a && a->buffer->scope == "global") {
    out->workspace.push_back(a->buffer);
    collect(a->body, out);
  } else if (const auto* q = s.as<SeqStmtNode>()) {
    for (const Stmt& x : q->seq) collect(x, out);
  } else {
    out->kernels.push_back(s);
  }
}

}  // namespace

DeviceRegions device_regions(const Stmt& body) {
  DeviceRegions r;
  collect(body, &r);
  return r;
}

}  // namespace kiln::ir::detail
