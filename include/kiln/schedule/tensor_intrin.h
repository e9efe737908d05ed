// Tensor intrinsics: a hand-written (or library) routine that computes a small tensor region in
// one call, which Stage::tensorize substitutes for a loop nest.
//
//   // what one call computes: c[j] += sum_k a[k] * b[j, k]  (a gemv)
//   auto a = te::placeholder({16}, f32, "a");  auto b = te::placeholder({8, 16}, f32, "b");
//   auto k = te::reduce_axis(16, "k");
//   auto c = te::compute({8}, [&](Var j) { return te::sum(a(k) * b(j, k), {k}); }, "c");
//   TensorIntrin gemv{"gemv", c,
//     /*body=*/[](auto& in, auto& out) { return ir::evaluate(ir::call_extern(i32, "gemv",
//                  {out[0].address(), in[0].address(), in[1].address(), int(in[1].strides[0])})); }};
//
// At lowering, the loop nest under the tensorized axis must compute exactly the declaration
// (same extents, same expression up to renaming of variables and tensors); otherwise kiln::Error.
// One exception to "same extents": a nest that starts at a multiple of its extent on an axis whose
// extent is a multiple of it lies wholly inside or wholly outside the axis (a block of tiles
// overhanging the tensor), and its call is emitted under `if (start < end)`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/ir/stmt.h"
#include "kiln/te/tensor.h"

namespace kiln::schedule {

// Where one of the intrinsic's tensors lives inside the tensorized region.
struct TensorIntrinBuffer {
  ir::Buffer buffer;             // the whole buffer (function parameter or allocation)
  std::vector<ir::Expr> base;    // index of the region's first element, one per buffer dimension
  std::vector<int64_t> strides;  // row-major strides of `buffer`, in elements
  // The region's first element's address: the pure intrinsic address_of(buffer_load(buffer, base)).
  ir::Expr address() const;
};

struct TensorIntrin {
  using Emit = std::function<ir::Stmt(const std::vector<TensorIntrinBuffer>& inputs,
                                      const std::vector<TensorIntrinBuffer>& outputs)>;
  std::string name;
  // The declaration: a compute over placeholders; its op's input tensors, in order of first
  // appearance, are the intrinsic's inputs.
  te::Tensor decl;
  // Computes the outputs from scratch (a reduction's initialization included).
  Emit body;
  // Accumulates into the outputs: used when some reduce loops stay outside the tensorized nest
  // (their initialization is then emitted as ordinary loops, or by `init`). May be empty.
  Emit update;
  // Sets the outputs to the reduction's identity (inputs: none), in place of the ordinary
  // initialization loops under the tensorized axis when `update` is used: for outputs only the
  // intrinsics may index, e.g. a warp's fragments (ir::lower_warp_buffers). May be empty.
  Emit init;
  // The body stores only inside its outputs' buffers (TensorIntrinBuffer::buffer's shape), so
  // a nest may overhang the region its stage realizes (a stage realized over less than whole
  // tiles: its consumers need less); a tile wholly outside it is skipped. Otherwise such a nest
  // is refused.
  bool clips_outputs = false;
};

}  // namespace kiln::schedule
