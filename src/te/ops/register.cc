// The op library's registration: each part of the library fills the lowering slots of its ops.
#include <mutex>

#include "kiln/te/ops/lowering.h"
#include "kiln/te/ops/register_a.h"
#include "kiln/te/ops/register_b.h"

namespace kiln::te::ops {

void register_lowerings() {
  static std::once_flag once;
  std::call_once(once, [] { register_lowerings_b(); });  // nn: conv, pool, dense, norms, softmax, ...
  // Elementwise, broadcast, injective, reductions: on every call, since it only fills empty
  // slots and so also picks up ops registered late (alter_layout's layout_transform).
  register_lowerings_a();
}

}  // namespace kiln::te::ops
