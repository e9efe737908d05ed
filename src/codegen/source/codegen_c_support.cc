// What the C printer (codegen_c.cc) prints around kernels: the names kernels must not take,
// the preamble's helper functions, and the race-checking build's shared functions.
#include "codegen_c_support.h"

#include <fmt/format.h>

namespace kiln::codegen::source {

using ir::DataType;

// Names a kernel's variables must not take: keywords and types of C, CUDA and OpenCL, and the
// functions the kernels call (a buffer named `erf` would hide erf()). Names with the prefixes
// of builtins and of kiln's helpers are renamed too.
bool reserved_name(const std::string& n) {
  static const std::set<std::string> kWords = {
      "auto", "bool", "break", "case", "char", "const", "constant", "continue", "default", "do", "double", "else",
      "enum", "extern", "float", "for", "global", "goto", "half", "if", "inline", "int", "kernel", "local", "long",
      "private", "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch",
      "typedef", "uchar", "uint", "ulong", "union", "unsigned", "ushort", "void", "volatile", "while", "size_t",
      "true", "false", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "barrier", "select", "clamp",
      "mix", "sign", "dot", "min", "max", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "fabs", "floor",
      "ceil", "trunc", "rint", "round", "sin", "cos", "tan", "tanh", "erf", "pow", "fma", "fmod", "isnan", "isinf",
      "expf", "logf", "sqrtf", "fabsf", "floorf", "ceilf", "truncf", "rintf", "sinf", "cosf", "tanhf", "erff", "powf",
      "fmaf", "fmodf", "INFINITY", "NAN", "this", "new", "delete", "class", "template", "namespace", "operator"};
  for (const char* p : {"get_", "atomic", "__", "kiln_", "cl_", "CL_"})
    if (n.rfind(p, 0) == 0) return true;
  return kWords.count(n) > 0;
}

// The race-checking build's shared functions. The shadow `sh` of a shared buffer of n elements
// holds [0, n) the last writer (a flat local id), [n, 2n) the epoch of that write, [2n, 3n) the
// last reader (-2: several work-items), [3n, 4n) the epoch of that read. The shadow itself is
// updated without atomics: work-items that touch one element in one epoch race on it, which at
// worst loses a reader (PoCL interleaves work-items only at barriers or in lockstep vectors).
// Write after write is not reported (a te stage writes each element one value).
const char* const kRaceCheckFunctions = R"(// Race checking: see kiln's GpuBuildOptions::race_check.
static void kiln_rc_report(__global int* races, int id, int i, int kind) {
  if (kind == 2) atomic_inc(&races[1]);
  if (atomic_inc(&races[0]) == 0) { races[2] = id; races[3] = i; races[4] = kind; }
}
static inline void kiln_rc_read(__local int* sh, int n, int i, int tid, int epoch, __global int* races, int id) {
  if (sh[n + i] == epoch && sh[i] != tid) kiln_rc_report(races, id, i, 1);
  sh[2 * n + i] = (sh[3 * n + i] == epoch && sh[2 * n + i] != tid) ? -2 : tid;
  sh[3 * n + i] = epoch;
}
static inline void kiln_rc_write(__local int* sh, int n, int i, int tid, int epoch, __global int* races, int id) {
  if (sh[3 * n + i] == epoch && sh[2 * n + i] != tid) kiln_rc_report(races, id, i, 2);
  sh[i] = tid;
  sh[n + i] = epoch;
}
)";

// The preamble's helper functions for the keys KernelPrinter::helper made ("floordiv_int32").
std::string print_helpers(const std::set<std::string>& keys, const Dialect& d) {
  std::string out;
  for (const std::string& key : keys) {
    size_t us = key.find('_');
    std::string op = key.substr(0, us);
    DataType t = DataType::parse(key.substr(us + 1));
    std::string ty = d.type_name(t), fn = "kiln_" + key;
    std::string prefix = d.language() == Language::kCUDA ? "static __device__ __forceinline__ " : "static inline ";
    if (op == "floordiv")
      out += fmt::format("{}{} {}({} a, {} b) {{ {} q = a / b; return q - (((a % b) != 0) && (((a % b) ^ b) < 0)); }}\n",
                         prefix, ty, fn, ty, ty, ty);
    else if (op == "floormod")
      out += fmt::format("{}{} {}({} a, {} b) {{ {} r = a % b; return ((r != 0) && ((r ^ b) < 0)) ? r + b : r; }}\n",
                         prefix, ty, fn, ty, ty, ty);
    else if (op == "min")
      out += fmt::format("{}{} {}({} a, {} b) {{ return a < b ? a : b; }}\n", prefix, ty, fn, ty, ty);
    else if (op == "max")
      out += fmt::format("{}{} {}({} a, {} b) {{ return a > b ? a : b; }}\n", prefix, ty, fn, ty, ty);
    else if (op == "abs")
      out += fmt::format("{}{} {}({} a) {{ return a < 0 ? -a : a; }}\n", prefix, ty, fn, ty);
    else if (op == "rcload")
      out += fmt::format("{}{} {}(__local const {}* s, __local int* sh, int n, int i, int tid, int epoch, "
                         "__global int* races, int id) {{ kiln_rc_read(sh, n, i, tid, epoch, races, id); return s[i]; }}\n",
                         prefix, ty, fn, ty);
    else if (op == "rcstore")
      out += fmt::format("{}void {}(__local {}* s, __local int* sh, int n, int i, int tid, int epoch, __global int* races, "
                         "int id, {} v) {{ kiln_rc_write(sh, n, i, tid, epoch, races, id); s[i] = v; }}\n",
                         prefix, fn, ty, ty);
  }
  return out;
}

}  // namespace kiln::codegen::source
