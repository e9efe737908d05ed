// Which stores of a double-buffered tile's producer become cp.async (ir::kAsyncCopy), for
// inject_double_buffer.
#pragma once

#include "ir/arith.h"
#include "kiln/ir/stmt.h"

namespace kiln::ir::detail {

// `producer` with each store that cp.async can do wrapped in kAsyncCopy (transforms.h: a copy of
// a global element, or select(c, element, 0), of the stored type into shared memory, of 4, 8 or
// 16 bytes, vectors in aligned blocks); `converted` counts them. A vector store under a lane
// mask that is one condition for all its lanes (an aligned block against a bound that is a
// multiple of the lanes, as a tile's guard on a padded tensor) becomes that condition's `if`
// around the copy. Other stores stay plain: they are correct in the asynchronous layout too,
// only not overlapped. `ana` knows the lets around the producer (for alignment proofs).
Stmt make_async_copies(const Stmt& producer, const arith::Analyzer& ana, int* converted);

}  // namespace kiln::ir::detail
