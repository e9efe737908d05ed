// The op library's registration: each part of the library fills the lowering slots of its ops.
#include <mutex>

#include "kiln/te/ops/lowering.h"
#include "kiln/te/ops/register_a.h"

namespace kiln::te::ops {

void register_lowerings() {
  static std::once_flag once;
  std::call_once(once, [] { register_lowerings_a(); });
}

}  // namespace kiln::te::ops
