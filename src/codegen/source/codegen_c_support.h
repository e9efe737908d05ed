// The parts of the C printer that are text around kernels (codegen_c_support.cc).
#pragma once

#include <set>
#include <string>

#include "codegen_c.h"

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

}  // namespace kiln::codegen::source
