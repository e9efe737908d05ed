// Graph-level passes: each a pure Module -> Module function in its own file under
// src/relay/transforms/, named after its verb.
#pragma once

#include "kiln/relay/module.h"

namespace kiln::relay {

// Re-derives the type of every node from its op's type relation, bottom-up, and returns the
// module with nodes whose stored type differed rebuilt (the same module, node for node, when all
// types were already right). Errors are kiln::Error naming the node, op and input shapes.
Module infer_types(const Module& m);

}  // namespace kiln::relay

namespace kiln::relay {

// Evaluates every call whose arguments are all constants and whose op the constant evaluator
// knows (evaluate.h), replacing it by its value: weight transposes, casts of constants, shape
// arithmetic. A call whose result would be much bigger than its inputs (a broadcast or fill of
// a scalar into a big tensor) stays a call, so weights do not balloon.
Module fold_constants(const Module& m);

// Local rewrites that remove work without changing any value: identity and dropout (inference)
// disappear, reshape chains collapse into one reshape, transpose pairs compose (and vanish when
// they cancel), casts/reshapes/broadcasts/slices that change nothing, x + 0 and x * 1 with a
// constant 0 or 1 that does not broadcast x, single-input concatenates, and get-items of tuples.
Module simplify(const Module& m);

// Merges calls with the same op, the same argument nodes and equal attributes, and constants
// with equal bytes, so each distinct computation appears once (bottom-up, so chains merge).
Module eliminate_common_subexpr(const Module& m);

// Folds inference batch normalization, and constant per-channel scales and shifts, into the
// preceding convolution's weights and bias when that convolution has constant weights and no
// other user; a batch norm that follows no such convolution becomes x * scale + shift with
// per-channel constants (broadcast ops that fuse with their neighbours).
Module fold_batch_norm(const Module& m);

// A float conv2d / dense / matmul (constant 2-D B) computing on dequantized int8 operands (per
// tensor data, symmetric int8 weights per tensor or per output) becomes the integer op on the
// int8 values (nn.conv2d_integer, nn.dense_integer) followed by one dequantize of its int32 sums:
// quantized models' QDQ pattern (dequantize -> conv -> quantize) then runs as an int8 kernel
// whose requantization fuses into its tail.
Module realize_integer_ops(const Module& m);

// The model computed in float16 storage with float32 accumulation: float32 inputs cast to
// float16 where they enter, float32 constants and casts/fills to float32 made float16, float16
// outputs cast back (the interface stays float32). kiln::Error for quantized models.
Module convert_to_float16(const Module& m);

// A constant int8 weight as nn.conv2d_integer / nn.dense_integer take it: the weight with its
// outputs first (a matmul's B [K, N], output_axis 1, transposed to [N, K]; otherwise as given)
// and each output's sum of weights (int32). realize_integer_ops and the ONNX importer's
// MatMulInteger share it.
struct IntegerWeight {
  HostTensor weight, sums;
};
IntegerWeight integer_weight(const HostTensor& w, int64_t output_axis);

}  // namespace kiln::relay

// ---- The graph compiler's passes: dead code, layouts, fusion, memory (issue 3) ---------------

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kiln/relay/op.h"
#include "kiln/relay/printer.h"

namespace kiln::relay {

// Removes computations whose results nobody reads. The graph is a DAG built from the outputs,
// so whole unused nodes cannot exist; what can be dead are fields of multi-output ops: a split
// with unread parts becomes strided_slices of the parts that are read (a split nobody reads
// whole disappears). Params stay, even unused ones: they are the model's interface.
Module remove_dead(const Module& m);

// Convs of one input whose outputs are only added together (RepVGG / ACNet branches) become
// one conv with the weights (a smaller kernel zero-padded into the larger window, where the
// paddings say it reads that window) and the biases summed. Same strides, dilation and groups.
Module sum_parallel_convs(const Module& m);

// Parallel branches that read one input become one wider op, sliced back into the branches
// (TVM's CombineParallelConv2D/Dense): 2-d convs (groups 1), dense and matmul by a constant 2-d
// weight, in groups of at least `min_branches` calls of one op with the same data, equal
// attributes and weights that differ only in output channels, with the epilogue ops every branch
// shares (bias_add, per-channel add/multiply, unary elementwise). `groups` counts the groups
// combined (0: the module is returned unchanged).
struct CombineResult {
  Module module;
  int groups = 0;
};
CombineResult combine_parallel(const Module& m, int min_branches);

struct AlterLayoutOptions {
  // Largest channel block (x in NCHW[x]c); each tensor gets the largest divisor of its channel
  // count that is at most this.
  int64_t max_block = 16;
  // Convolutions this says to leave in NCHW (the target computes them better there, as
  // Winograd); none when empty.
  std::function<bool(const CallNode&)> keep_plain;
};

// Rewrites 2-d convolutions (groups == 1, constant weight) from NCHW to blocked NCHW[x]c as
// nn.conv2d_NCHWc on data [N, C/x, H, W, x] and a weight pre-packed to [O/y, C/x, KH, KW, x, y],
// and depthwise ones (groups == C == OC) as nn.depthwise_conv2d_NCHWc with a weight [C/x, KH,
// KW, x] (x the producer's block when it divides C). Integer convs (nn.conv2d_integer, of one
// group or depthwise) become nn.conv2d_integer_NCHWc with their weights as they are (the CPU
// strategy packs them), reading NCHW data as it is; per-tensor quantize/dequantize keep the
// blocks, and the per-channel dequantize of their sums becomes cast * blocked scales.
// Elementwise ops, and broadcast ops whose other operands are per-channel or scalar constants
// (repacked) or blocked alike, stay in the blocked layout; everything else gets NCHW back through
// layout_transform. Transforms are made only where a consumer needs another layout, so adjacent
// blocked ops exchange blocked tensors directly (no transform pairs to clean up). The two ops are
// registered with all others (src/relay/op/layout.cc; attrs: see their attrs_doc).
Module alter_layout(const Module& m, const AlterLayoutOptions& options = AlterLayoutOptions());

// Elements written by a module's layout_transform calls and by its blocked convolutions (what
// the compiler weighs to keep a blocked layout).
struct LayoutTraffic {
  int64_t transformed = 0, blocked = 0;
  int64_t integer = 0;  // of `blocked`, what integer convs write
};
LayoutTraffic layout_traffic(const Module& m);

// A value crossing kernel boundaries: (node, field). Get-items resolve to the field of their
// tuple-typed producer, so two get-items of one field are one value.
using ValueKey = std::pair<const ExprNode*, int>;
inline ValueKey value_key(const Expr& e) {
  if (const auto* g = e.as<TupleGetItemNode>()) return {g->tuple.get(), g->index};
  return {e.get(), 0};
}

// A kernel of the fused graph: calls that one generated function computes (fuse_ops).
struct FusedGroup {
  std::vector<Expr> calls;   // members, in post order; only CallNodes
  Expr root;                 // the member whose value leaves the group (the last in `calls`)
  Expr anchor;               // the member of the strongest pattern (its schedule leads)
  OpPattern pattern = OpPattern::Elementwise;  // the strongest member pattern
  // Values read from outside, in order of first use: Vars, non-scalar Constants, roots of earlier
  // groups, or get-items of a tuple-typed root. Scalar constants are compiled into the kernel.
  std::vector<Expr> inputs;
  // "nn.conv2d+add+nn.relu"
  std::string label() const;
};

// The module with its calls partitioned into kernels, in execution order. Every call belongs to
// exactly one group; only the root of a group is read outside it (by later groups, get-items,
// the output tuple). Tuples and get-items are not computations and belong to no group.
struct FusedModule {
  Module module;
  std::vector<FusedGroup> groups;
  std::unordered_map<const ExprNode*, int> group_of;  // member call -> group index
};

// Whether a constant is compiled into kernels as an immediate (scalars) rather than read from the
// weights blob.
bool is_inlined_constant(const Expr& e);

// Partitions a module's calls into kernels by pattern kind with a post-dominator analysis (TVM's
// FuseOps): an out-elementwise-fusable anchor (conv, dense, pooling) takes the elementwise and
// broadcast ops that follow it when every path to their post-dominator is elementwise or
// broadcast (conv + bias + add + relu is one kernel); elementwise and broadcast ops fuse into the
// injective, reduction or anchor group that post-dominates them; injective chains fuse together;
// opaque ops (softmax, layer_norm, tuple-typed ops) stand alone; a value read by a module output
// is always the root of its group.
FusedModule fuse_ops(const Module& m);

// Text of a fused module: each kernel is one line listing its ops,
//   %1 = fused(nn.conv2d, add, nn.relu)(%x, meta[0], meta[1]) : float32[1,8,8,8]
// followed by the outputs and meta lines as in printer.h.
std::string to_string(const FusedModule& m, const PrintOptions& opts = {});

// A static storage plan of a fused module (plan_memory). Each tensor value that crosses a kernel
// boundary is an entry: a param (input), a constant (in the weights), a group's output (one
// entry per field of a tuple-typed root). Intermediates share storages when their lifetimes do
// not overlap; inputs and outputs get storages of their own.
struct MemoryPlan {
  struct Entry {
    Expr value;        // the Var, Constant or group root
    int field = 0;     // the field of a tuple-typed root
    DataType dtype;
    Shape shape;
    int storage = -1;  // -1 for constants
    int64_t offset = 0;
    enum class Kind : uint8_t { Input, Output, Constant, Intermediate } kind = Kind::Intermediate;
    int64_t bytes() const;
  };
  std::vector<Entry> entries;
  std::vector<int64_t> storage_bytes;
  // Entry of a value: (node, field); get-items resolve to their tuple's field.
  int entry_of(const Expr& value) const;
  std::unordered_map<const ExprNode*, std::vector<int>> entries_of;  // node -> entry per field
  // Bytes of intermediate entries without reuse, and of the storages holding them with reuse.
  int64_t intermediate_bytes_unshared = 0;
  int64_t intermediate_bytes_shared = 0;
  std::string note() const;  // "plan_memory: 12 intermediate tensors, 3.1 MiB without reuse -> ..."
  // One line per entry: "e3 = %1 : float32[1,8,8,8]  intermediate  storage 2 +0", then storages.
  std::string str() const;
};

// Plans storage for a fused module, greedily in execution order (TVM's graph memory planner): a
// group's outputs take the free storage closest in size (growing it if smaller) among those whose
// last reader has run, else a new one; a group's inputs are released only after it ran, so a
// kernel never writes over what it reads.
MemoryPlan plan_memory(const FusedModule& m);

}  // namespace kiln::relay
