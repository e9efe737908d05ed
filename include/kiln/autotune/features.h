// Features of a candidate program for the cost model: a fixed-length float vector extracted
// from its lowered loop program (the flattened, vectorized, unrolled ir::PrimFunc that code
// generation takes), never from knob values, so that one model ranks candidates of any task.
//
// Per innermost statement (each BufferStore) we walk up its loop nest and record loop kinds and
// extents, vector lanes, arithmetic counts, and per buffer it touches the bytes touched within
// the innermost loops, the reuse (extents of enclosing loops the access does not depend on) and
// the access stride along the innermost loop or vector lane. The statements are then aggregated
// weighted by how often each runs, and every entry is log2(1 + x) scaled.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir/stmt.h"

namespace kiln::autotune {

// How an access moves along the innermost loop (or the vector lanes when the store is a vector).
enum class StrideKind : uint8_t { Broadcast, Contiguous, Strided };

// One buffer touched by a statement (loads of the same buffer are merged).
struct AccessFeatures {
  std::string buffer;
  bool is_store = false;
  int64_t elem_bytes = 0;
  // Distinct bytes touched while the innermost 1, 2 and 3 enclosing loops (and the vector lanes)
  // run; fewer loops than that: all of them.
  double bytes_inner[3] = {0, 0, 0};
  // Product of the extents of enclosing loops (and vector lanes) the access does not depend on.
  double reuse = 1;
  StrideKind stride_kind = StrideKind::Broadcast;
  // |element stride| along the innermost loop or lane; 0 for a broadcast, -1 when not affine.
  int64_t stride = 0;
  // A global buffer accessed inside a threadIdx.x loop: the 32-byte sectors a warp's access
  // touches (1 when the warp reads one element, 4 for 32 coalesced floats, 32 for a gather).
  double warp_sectors = 0;
};

// Raw (unscaled) features of one BufferStore; what extract_features aggregates.
struct StmtFeatures {
  std::string buffer;   // the stored buffer
  double count = 1;     // how often the store runs: product of enclosing loop extents
  int loops = 0, serial = 0, parallel = 0, vectorized = 0, unrolled = 0, thread_bound = 0;
  double prod_serial = 1, prod_parallel = 1, prod_vectorized = 1, prod_unrolled = 1;
  double innermost_extent = 1;  // extent of the innermost enclosing loop (1 with none)
  int lanes = 1;                // vector lanes of the stored value
  int block_size = 1;           // stores in the same straight-line block (unrolled copies)
  // Instruction counts of the stored value and indices (a vector op counts once).
  int float_addsub = 0, float_mul = 0, float_fma = 0, float_div = 0, float_other = 0;
  int int_arith = 0, int_divmod = 0, intrinsic_calls = 0, extern_calls = 0;
  double flops = 0;  // floating-point operations per run: lanes per vector op, an fma counts 2
  double load_bytes = 0, store_bytes = 0;  // bytes moved per run (all loads; the store)
  double warp_sectors = 0;  // per warp-wide run: the store's and every load's (AccessFeatures)
  AccessFeatures store;
  std::vector<AccessFeatures> loads;  // one per distinct buffer loaded, by bytes_inner[0] descending
};

std::vector<StmtFeatures> extract_stmt_features(const ir::PrimFunc& f);

// The fixed-length feature vector (feature_names().size() entries, log2(1 + x) scaled).
// What ptxas reported for a candidate's CUDA kernels (codegen::GpuModule::max_registers,
// max_spill_bytes): features gpu_registers and gpu_spill_bytes, 0 without it.
struct PtxasReport {
  int registers = 0;
  int spill_bytes = 0;
};

std::vector<float> extract_features(const ir::PrimFunc& f, const PtxasReport* ptxas = nullptr);
const std::vector<std::string>& feature_names();
// Position of a named feature; throws kiln::Error for an unknown name.
size_t feature_index(const std::string& name);

}  // namespace kiln::autotune
