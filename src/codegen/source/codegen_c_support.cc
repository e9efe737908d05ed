// What the C printer (codegen_c.cc) prints around kernels: the names kernels must not take,
// the preamble's helper functions, and the race-checking build's shared functions; and how it
// takes vector IR apart into lanes and vector accesses.
#include "codegen_c_support.h"

#include <fmt/format.h>

#include "kiln/ir/functor.h"
#include "kiln/support/error.h"

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
    // Values of 16-bit floats are floats; the race check's accessor takes the stored bits.
    const bool stored = op == "rcload";
    std::string ty = t.is_floating() && t.bits == 16 && !stored ? "float" : d.type_name(t), fn = "kiln_" + key;
    std::string prefix = d.language() == Language::kCUDA ? "static __device__ __forceinline__ " : "static inline ";
    if (op == "wgmmadesc")
      // A wgmma shared-memory descriptor (PTX ISA, "Matrix Descriptor Format"): the operand's
      // address, the byte strides of its core matrices along the leading and the stride
      // dimension, each in 16-byte units; the layout type in bits 62-63 (0 none, 1 the 128-byte
      // swizzle); base offset 0 (a swizzled tile starts 1024-byte aligned).
      out += fmt::format("{}{} {}(const void* p, unsigned lbo, unsigned sbo, unsigned layout) {{ const unsigned a = "
                         "(unsigned)__cvta_generic_to_shared(p); return (unsigned long long)((a & 0x3FFFF) >> 4) | "
                         "((unsigned long long)((lbo & 0x3FFFF) >> 4) << 16) | ((unsigned long long)((sbo & 0x3FFFF) >> 4) << 32) | "
                         "((unsigned long long)(layout & 3) << 62); }}\n",
                         prefix, "unsigned long long", fn);
    else if (op == "floordiv")
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
  }
  return out;
}

std::string float16_helpers(const Dialect& d) {
  const bool cuda = d.language() == Language::kCUDA;
  const std::string pre = cuda ? "static __device__ __forceinline__ " : "static inline ";
  const std::string u16 = cuda ? "unsigned short" : "ushort", u32 = cuda ? "unsigned int" : "uint";
  const std::string as_uint = cuda ? "__float_as_uint" : "as_uint", as_float = cuda ? "__uint_as_float" : "as_float";
  // CUDA converts float16 with the hardware's cvt (sm_53 and newer; a NaN becomes the canonical
  // 0x7fff). OpenCL C without cl_khr_fp16 in software: round to nearest even, as LLVM's
  // conversions on the CPU path, subnormals, overflow to infinity (from 65520 up) and NaN kept
  // quiet. bfloat16 in software on both (cvt to bf16 needs sm_80).
  const std::string cuda_f16 = R"(static __device__ __forceinline__ float kiln_f16_to_f32(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
static __device__ __forceinline__ unsigned short kiln_f32_to_f16(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
)";
  const std::string software_f16 = fmt::format(R"({0}float kiln_f16_to_f32({1} h) {{
  {2} sign = ({2})(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0x1f) return {4}(sign | 0x7f800000 | (m << 13));
  if (e == 0) return {4}(sign | {3}((float)m * 5.9604644775390625e-8f));
  return {4}(sign | ((e + 112) << 23) | (m << 13));
}}
{0}{1} kiln_f32_to_f16(float f) {{
  {2} x = {3}(f), sign = (x >> 16) & 0x8000, a = x & 0x7fffffff;
  if (a > 0x7f800000) return ({1})(sign | 0x7e00);
  if (a >= 0x477ff000) return ({1})(sign | 0x7c00);
  if (a < 0x33000000) return ({1})sign;
  {2} kq, krest, ktie;
  if (a < 0x38800000) {{
    {2} shift = 126 - (a >> 23), m = (a & 0x7fffff) | 0x800000;
    kq = m >> shift; krest = m & ((1u << shift) - 1); ktie = 1u << (shift - 1);
  }} else {{
    {2} b = a - 0x38000000;
    kq = b >> 13; krest = b & 0x1fff; ktie = 0x1000;
  }}
  if (krest > ktie || (krest == ktie && (kq & 1))) ++kq;
  return ({1})(sign | kq);
}}
)",
                                               pre, u16, u32, as_uint, as_float);
  std::string t = "// 16-bit floats are stored as their bits and computed in float, rounded after each operation.\n" +
                  (cuda ? cuda_f16 : software_f16) + fmt::format(R"({0}float kiln_bf16_to_f32({1} h) {{ return {4}((({2})h) << 16); }}
{0}{1} kiln_f32_to_bf16(float f) {{
  {2} x = {3}(f);
  if ((x & 0x7fffffff) > 0x7f800000) return ({1})((x >> 16) | 0x40);
  return ({1})((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}}
{0}float kiln_round_f16(float f) {{ return kiln_f16_to_f32(kiln_f32_to_f16(f)); }}
{0}float kiln_round_bf16(float f) {{ return kiln_bf16_to_f32(kiln_f32_to_bf16(f)); }}
)",
                                pre, u16, u32, as_uint, as_float);
  return t;
}

int vector_access_lanes(DataType t, int lanes) {
  for (int w : {4, 2})
    if (lanes % w == 0 && w * t.bytes() <= 16) return w;
  return 1;
}

ir::Expr aligned_ramp_base(const ir::Expr& index, int lanes, const ir::arith::Analyzer& analyzer) {
  const auto* r = index.as<ir::RampNode>();
  if (!r || !ir::is_one(r->stride)) return ir::Expr();
  const ir::Expr rem = ir::floormod(r->base, ir::make_int(r->base.dtype(), lanes));
  return analyzer.can_prove(ir::eq(rem, ir::make_zero(r->base.dtype()))) ? r->base : ir::Expr();
}

ir::Expr lift_lets(const ir::Expr& e, std::vector<std::pair<ir::Var, ir::Expr>>& lets) {
  struct Lift : ir::ExprMutator {
    std::vector<std::pair<ir::Var, ir::Expr>>& out;
    explicit Lift(std::vector<std::pair<ir::Var, ir::Expr>>& o) : out(o) {}
    ir::Expr visit_let(const ir::LetNode* op, const ir::Expr&) override {
      out.emplace_back(op->var, mutate(op->value));
      return mutate(op->body);
    }
  } lift(lets);
  return lift.mutate(e);
}

ir::Expr lane_of(const ir::Expr& e, int i, const LaneMap& m) {
  if (e.dtype().is_scalar()) return e;
  const DataType t = e.dtype().element_of();
  switch (e.kind()) {
    case ir::ExprKind::Ramp: {
      const auto* r = e.as<ir::RampNode>();
      if (i == 0) return r->base;
      if (auto c = ir::as_const_int(r->stride)) return ir::add(r->base, ir::make_int(t, *c * i));
      return ir::add(r->base, ir::mul(r->stride, ir::make_int(t, i)));
    }
    case ir::ExprKind::Broadcast: return e.as<ir::BroadcastNode>()->value;
    case ir::ExprKind::Var: {
      auto it = m.vars.find(e.as<ir::VarNode>());
      KILN_CHECK(it != m.vars.end()) << "vector var '" << e.as<ir::VarNode>()->name << "' used before its lanes";
      return it->second[i];
    }
    case ir::ExprKind::Not: return ir::logical_not(lane_of(e.as<ir::NotNode>()->a, i, m));
    case ir::ExprKind::Select: {
      const auto* s = e.as<ir::SelectNode>();
      return ir::select(lane_of(s->condition, i, m), lane_of(s->true_value, i, m), lane_of(s->false_value, i, m));
    }
    case ir::ExprKind::Cast: return ir::cast(t, lane_of(e.as<ir::CastNode>()->value, i, m));
    case ir::ExprKind::Call: {
      const auto* c = e.as<ir::CallNode>();
      std::vector<ir::Expr> args;
      for (const ir::Expr& a : c->args) args.push_back(lane_of(a, i, m));
      return ir::Expr(std::make_shared<ir::CallNode>(t, c->name, std::move(args), c->call_kind));
    }
    case ir::ExprKind::BufferLoad: {
      const auto* l = e.as<ir::BufferLoadNode>();
      if (auto it = m.loads.find(l); it != m.loads.end())
        return ir::buffer_load(it->second, {ir::make_int(DataType::i32(), i)});
      KILN_CHECK(l->indices.size() == 1) << "load of '" << l->buffer->name << "' is not flattened";
      return ir::buffer_load(l->buffer, {lane_of(l->indices[0], i, m)});
    }
    default: break;
  }
  const auto* b = e.as<ir::BinaryNode>();
  KILN_CHECK(b) << "vector " << ir::kind_name(e.kind()) << " in a GPU kernel";
  return ir::make_binary(b->kind, lane_of(b->a, i, m), lane_of(b->b, i, m));
}

}  // namespace kiln::codegen::source
