// The parts of the C printer that are text around kernels, and the IR helpers of its vector
// accesses (codegen_c_support.cc).
#pragma once

#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "codegen_c.h"
#include "ir/arith.h"

namespace kiln::codegen::source {

// Whether a kernel variable may not take this name: a keyword or type of C, CUDA or OpenCL, a
// function kernels call (a buffer named `erf` would hide erf()), or a builtin's or kiln
// helper's prefix.
bool reserved_name(const std::string& name);

// The preamble's helper functions for the keys the printer used, "<op>_<dtype>" (floordiv_int32,
// max_float32, rcload_float32, ...): each operand evaluated once.
std::string print_helpers(const std::set<std::string>& keys, const Dialect& d);

// Conversions between float and the bits of float16 / bfloat16 (kiln_f16_to_f32,
// kiln_f32_to_f16, kiln_bf16_to_f32, kiln_f32_to_bf16, kiln_round_f16, kiln_round_bf16), in
// integer arithmetic: no CUDA header or OpenCL extension needed (PoCL has no cl_khr_fp16).
std::string float16_helpers(const Dialect& d);

// The race-checking build's functions shared by every kernel of a module.
extern const char* const kRaceCheckFunctions;

// ---- vector IR (ir::vectorize_loops' ramps and broadcasts) in a kernel ----

// The lanes of one vector access the dialects print for a contiguous access of `lanes`
// elements of t: 4 or 2 dividing `lanes`, at most 16 bytes (float4, ushort4, double2; CUDA has
// no 8-lane types), or 1 when neither fits (the access is printed lane by lane).
int vector_access_lanes(ir::DataType t, int lanes);

// The base of `index` when it is a ramp of stride 1 whose base the analyzer proves a multiple
// of `lanes`; undefined otherwise.
ir::Expr aligned_ramp_base(const ir::Expr& index, int lanes, const ir::arith::Analyzer& analyzer);

// `e` without its let expressions; `lets` receives their bindings in the order they must be
// evaluated (each before its first use). The printer hoists lets before a statement anyway;
// doing it before splitting lanes keeps one binding per let instead of one per lane.
ir::Expr lift_lets(const ir::Expr& e, std::vector<std::pair<ir::Var, ir::Expr>>& lets);

// What lane_of reads a vector's lanes through.
struct LaneMap {
  ir::VarMap<std::vector<ir::Var>> vars;  // a vector var -> a scalar var per lane
  // A vector load read into registers -> the buffer standing for those registers (lane i is
  // its element i).
  std::unordered_map<const ir::BufferLoadNode*, ir::Buffer> loads;
};

// Lane `i` of `e` as scalar IR: a ramp or broadcast evaluated at the lane, any other vector node
// applied lane by lane. A scalar `e` is its own every lane. Needs `e` without lets (lift_lets).
ir::Expr lane_of(const ir::Expr& e, int i, const LaneMap& m);

}  // namespace kiln::codegen::source
