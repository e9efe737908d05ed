// What fuzz_onnx_import does with one input, shared with the test that replays the inputs it
// found (tests/unit/test_fuzz_regressions.cc): what `kiln compile` does to a model file before
// lowering. Parse the ModelProto, import it (type relations run as each call is built; the
// importer verifies the module), then the graph passes of kiln::compile in its order, up to the
// memory plan. Lowering and LLVM code generation are left out: they would cost far more per
// input than they add in coverage of malformed input, which these stages reject.
#pragma once

#include <string>

#include "kiln/relay/frontend/onnx.h"
#include "kiln/relay/transforms.h"
#include "kiln/relay/verify.h"

namespace kiln::fuzz {

inline void import_through_graph_passes(const std::string& bytes, const std::string& model_dir) {
  using namespace kiln::relay;  // NOLINT(google-build-using-namespace)
  Module m = from_onnx_bytes(bytes, "fuzz input", {}, model_dir);
  m = infer_types(m);
  m = fold_constants(m);
  m = fold_batch_norm(m);
  m = simplify(m);
  m = eliminate_common_subexpr(m);
  m = remove_dead(m);
  verify(m);
  AlterLayoutOptions lo;
  lo.max_block = 8;  // an AVX2 target's float lanes
  Module blocked = alter_layout(m, lo);
  verify(blocked);
  plan_memory(fuse_ops(blocked));
}

}  // namespace kiln::fuzz
