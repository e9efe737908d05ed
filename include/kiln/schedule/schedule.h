// Schedules of te programs, in the style of TVM's te schedules: a Schedule holds one Stage per
// operation (post-DFS order from the outputs, producers first); each Stage records how its loop
// nest is to be built (splits, fusions, loop order, loop kinds, where it is computed) without
// changing what is computed. schedule::loop_nest (loop_nest.h) turns a Schedule into an ir::PrimFunc.
//
//   auto s = schedule::create({C});
//   auto [io, ii] = s[C].split(s[C].op_axis(0), 32);
//   s[C].reorder({io, s[C].reduce_axis(0), ii});
//   s[B].compute_at(s[C], io);
//
// Every primitive validates its arguments and throws kiln::Error naming the stage and the axis.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kiln/ir/stmt.h"
#include "kiln/schedule/tensor_intrin.h"
#include "kiln/te/operation.h"

namespace kiln::schedule {

struct ScheduleNode;
struct StageNode;

// How a stage's loops derive from its root axes. Split: parent = outer * factor + inner (factor
// fixed, or nparts fixed and the factor derived from the extent at lowering). Fuse: fused =
// outer * extent(inner) + inner.
struct IterVarRelation {
  enum class Kind { Split, Fuse };
  Kind kind = Kind::Split;
  ir::IterVar parent, outer, inner, fused;
  int64_t factor = 0;  // Split by factor
  int64_t nparts = 0;  // Split by number of outer parts
};

// Annotations of one loop.
struct IterVarAttr {
  ir::ForKind for_kind = ir::ForKind::Serial;
  std::string thread_tag;                                 // for ForKind::ThreadBinding
  std::vector<std::pair<std::string, ir::Expr>> pragmas;  // lowered to AttrStmt "pragma_<key>"
  std::shared_ptr<const TensorIntrin> tensor_intrin;      // tensorize the nest under this loop
  bool partial_sum = false;                               // see Stage::partial_sums
};

enum class AttachKind : uint8_t { Root, Inline, At };

struct StageNode {
  te::Operation op;         // what the stage computes now (cache_read/write may replace it)
  te::Operation origin_op;  // the operation the stage was created for
  std::vector<ir::IterVar> all_iter_vars;   // root axes first, then every axis a relation made
  std::vector<ir::IterVar> leaf_iter_vars;  // the loop nest, outermost first
  std::vector<IterVarRelation> relations;
  std::unordered_map<const ir::IterVarNode*, IterVarAttr> attrs;
  AttachKind attach = AttachKind::Root;
  std::shared_ptr<StageNode> attach_stage;  // for AttachKind::At
  ir::IterVar attach_ivar;                  // a leaf of attach_stage
  std::string scope = "global";             // storage scope of the stage's buffer
  int double_buffer = 0;                    // buffers of the tile (0: not buffered); see Stage::double_buffer
  int64_t row_pad = 0;                      // see Stage::pad_rows
  ir::TileLayout tile_layout = ir::TileLayout::kRows;  // see Stage::core_matrix_layout, swizzle_128b_layout
  bool is_output = false;
  std::weak_ptr<ScheduleNode> schedule;
};

class Stage {
 public:
  Stage() = default;
  explicit Stage(std::shared_ptr<StageNode> n) : node_(std::move(n)) {}
  bool defined() const { return node_ != nullptr; }
  StageNode* get() const { return node_.get(); }
  StageNode* operator->() const { return node_.get(); }
  const std::shared_ptr<StageNode>& node() const { return node_; }
  bool same_as(const Stage& o) const { return node_ == o.node_; }
  const std::string& name() const { return node_->origin_op.name(); }

  // Root data-parallel axes (one per output dimension) and reduce axes of the stage's op.
  ir::IterVar op_axis(int i) const;
  std::vector<ir::IterVar> op_axis() const;
  ir::IterVar reduce_axis(int i) const;
  std::vector<ir::IterVar> reduce_axis() const;
  // The loop nest in its current order, outermost first.
  const std::vector<ir::IterVar>& leaf_axes() const { return node_->leaf_iter_vars; }

  // iv -> (outer, inner) with inner of extent `factor`; a guard handles a non-dividing factor.
  std::pair<ir::IterVar, ir::IterVar> split(const ir::IterVar& iv, int64_t factor);
  // iv -> (outer, inner) with outer of extent `nparts`.
  std::pair<ir::IterVar, ir::IterVar> split_nparts(const ir::IterVar& iv, int64_t nparts);
  // Splits x and y and orders the four loops xo, yo, xi, yi. Returns {xo, yo, xi, yi}.
  std::vector<ir::IterVar> tile(const ir::IterVar& x, const ir::IterVar& y, int64_t x_factor, int64_t y_factor);
  // Fuses two adjacent leaves (outer immediately followed by inner) into one loop.
  ir::IterVar fuse(const ir::IterVar& outer, const ir::IterVar& inner);
  // Puts the given leaves in this order, in the positions they occupy now.
  void reorder(const std::vector<ir::IterVar>& order);

  void vectorize(const ir::IterVar& iv);
  void unroll(const ir::IterVar& iv);
  void parallel(const ir::IterVar& iv);
  // Binds a loop to a GPU thread index: "blockIdx.x", "threadIdx.y", ...
  void bind(const ir::IterVar& iv, const std::string& thread_tag);
  // Each iteration of loop iv (inside the stage's outermost reduce loop) sums its share of the
  // reduction in a fresh local accumulator shaped like the data-parallel loops inside iv, added
  // to the stage's buffer at the end of the iteration. Blocked summation: in float, one running
  // sum of n terms gathers rounding error as n, chunks of k as k + n/k.
  void partial_sums(const ir::IterVar& iv);
  // Wraps the loop in AttrStmt "pragma_<key>" = value.
  void pragma(const ir::IterVar& iv, const std::string& key, ir::Expr value = ir::Expr(1));
  // Replaces the loop nest under iv (iv and the loops inside it) by a call of `intrin`.
  void tensorize(const ir::IterVar& iv, const TensorIntrin& intrin);

  // Computes this stage inside `parent`'s loop `iv`, just the region that iteration needs.
  void compute_at(const Stage& parent, const ir::IterVar& iv);
  // Substitutes the stage's expression into its consumers; it gets no loops or storage.
  void compute_inline();
  // Computes the whole stage at the top level (the default).
  void compute_root();
  // Storage scope of the stage's buffer: "global", "local", "shared", or "warp": held by the
  // 32 lanes of a warp (threadIdx.x 0..31) together, each lane 1/32 of it in registers, laid
  // out by the tensor intrinsics that alone may read and write it (ir::lower_warp_buffers).
  void set_scope(const std::string& scope);
  // Two halves of the stage's shared buffer, so that the serial loop it is computed at loads
  // iteration i+1 into one half while iteration i computes on the other: lowered, AttrStmt
  // ir::kDoubleBufferScope around the stage's producer, which ir::inject_double_buffer rewrites.
  // Only for a "shared" stage (a register or global buffer gains nothing from it). With
  // `buffers` > 2, a pipeline of that many: iteration i loads iteration i + buffers - 1.
  void double_buffer(int buffers = 2);
  // Pads each row of the stage's shared buffer by `elements` unused elements (the innermost
  // axis's extent + elements becomes the row stride, TVM's storage_align with a fixed offset),
  // so that a warp reading down a column meets other shared-memory banks: a 64-byte row puts
  // every second row in the same bank, 16 bytes more spreads eight rows over all 32. Keep
  // `elements` * the dtype's bytes a multiple of 16 where rows are filled by 16-byte copies.
  void pad_rows(int64_t elements);
  // Stores the stage's shared buffer as 8 x 8 core matrices (ir::TileLayout), the layout
  // Hopper's wgmma reads its shared operands in without a swizzle: each 8 x 8 block of the
  // tile's last two dimensions 128 contiguous bytes of 16-bit elements. Its rows and columns
  // must be multiples of 8, its rows unpadded.
  void core_matrix_layout();
  // Stores the stage's shared buffer as 128-byte rows with their 16-byte chunks permuted by the
  // row (ir::TileLayout), the layout wgmma reads with its 128-byte swizzle: rows of whole 128-byte
  // panels (64 16-bit elements; lowering checks), a multiple of 8 of them, unpadded. A row wider
  // than a panel is stored panel after panel (an N-major K x N operand: wgmma's leading offset
  // steps from one panel to the next).
  void swizzle_128b_layout();

 private:
  std::shared_ptr<StageNode> node_;
};

struct ScheduleNode {
  std::vector<te::Tensor> outputs;
  std::vector<Stage> stages;  // producers before consumers
  // Every operation a stage ever had (its origin, and ops cache_read/write swapped in) -> stage;
  // consumers keep reading the tensors they were built with, so lookups go through this.
  std::unordered_map<const te::OperationNode*, Stage> stage_of_op;
  std::vector<te::Operation> keep_alive;  // owners of the keys above
};

class Schedule {
 public:
  Schedule() = default;
  explicit Schedule(std::shared_ptr<ScheduleNode> n) : node_(std::move(n)) {}
  const std::shared_ptr<ScheduleNode>& node() const { return node_; }
  ScheduleNode* operator->() const { return node_.get(); }

  // The stage of a tensor's operation (kiln::Error if the tensor is not part of the schedule).
  Stage operator[](const te::Tensor& t) const;
  Stage operator[](const te::Operation& op) const;
  const std::vector<Stage>& stages() const { return node_->stages; }
  const std::vector<te::Tensor>& outputs() const { return node_->outputs; }

  // A stage "<T>.<scope>" that copies `t` into storage of `scope`; the given readers (tensors
  // whose operations read t) read the copy instead. Returns the copy.
  te::Tensor cache_read(const te::Tensor& t, const std::string& scope, const std::vector<te::Tensor>& readers);
  // The same copy in another layout, e.g. B [K, N] as column panels [N/nr, K, nr], so that a
  // reader streaming nr columns finds them contiguous: shape is the copy's, source(v) the index
  // of t whose value copy element v holds, place(i) where t's element i lies in the copy (the
  // readers' loads are rewritten through it). The copy must hold every element of t.
  struct Layout {
    std::vector<int64_t> shape;
    std::function<std::vector<ir::Expr>(const std::vector<ir::Var>&)> source;
    std::function<std::vector<ir::Expr>(const std::vector<ir::Expr>&)> place;
  };
  te::Tensor cache_read(const te::Tensor& t, const std::string& scope, const std::vector<te::Tensor>& readers,
                        const Layout& layout);
  // A stage "<T>.<scope>" that computes t (its reduction moves there) into storage of `scope`;
  // t's own stage becomes a copy of it. Must come before t's stage is split/fused/reordered.
  te::Tensor cache_write(const te::Tensor& t, const std::string& scope);
  // Splits the reduction of t (over all its reduce axes, taken as one flattened index k) into
  // `factor` partial reductions: returns the stage "<T>.rf" of shape t.shape + [factor] whose
  // element [..., j] reduces the points with k % factor == j (TVM's rfactor over a split of the
  // flattened axis); t's stage now reduces those partials over its one new reduce axis. A GPU
  // schedule binds j to threads: a cross-thread reduction in two stages. Must come before t's
  // stage is split, fused or reordered.
  te::Tensor rfactor(const te::Tensor& t, int64_t factor);

 private:
  std::shared_ptr<ScheduleNode> node_;
};

// One stage per operation reachable from `outputs`, in post-DFS order.
Schedule create(const std::vector<te::Tensor>& outputs);

}  // namespace kiln::schedule
