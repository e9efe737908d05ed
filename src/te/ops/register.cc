// The op library's registration: each part of the library fills the lowering slots of its ops.
#include <mutex>

#include "kiln/te/ops/lowering.h"
#include "kiln/te/ops/register_a.h"
#include "kiln/te/ops/register_b.h"

namespace kiln::te::ops {

void register_lowerings() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_lowerings_a();  // elementwise, broadcast, injective, shape and reduction ops
    register_lowerings_b();  // nn ops: conv, pooling, dense/matmul, normalizations, softmax, ...
  });
}

}  // namespace kiln::te::ops
