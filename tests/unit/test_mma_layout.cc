// The fragment layout of mma.m16n8k16 (schedule/mma_intrin.h) against the PTX ISA, on the host:
// no GPU runs these tests, so a wrong lane -> (row, col) mapping would otherwise only show on
// one. Each lane gathers its registers through kiln's mapping (what the generated code loads);
// a model of the hardware then reads them back as the PTX ISA documents ("Matrix fragments for
// mma.m16n8k16 with floating point type"), multiplies, and hands each lane its part of D, which
// the lane stores through kiln's mapping of C. The result must be the plain product.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <set>
#include <utility>

#include "codegen/source/ldmatrix.h"
#include "ir/arith.h"
#include "kiln/ir/functor.h"
#include "kiln/schedule/mma_intrin.h"
#include "testing/reference.h"

using namespace kiln;
using Catch::Contains;

namespace {

using Element = std::pair<int64_t, int64_t>;  // (row, col) of an operand

// kiln's mapping, evaluated for a constant lane and element.
Element at(schedule::MmaElement (*map)(const ir::Expr&, const ir::Expr&), int lane, int i) {
  schedule::MmaElement e = map(ir::Expr(lane), ir::Expr(i));
  auto row = ir::as_const_int(ir::arith::simplify(e.row)), col = ir::as_const_int(ir::arith::simplify(e.col));
  REQUIRE(row);
  REQUIRE(col);
  return {*row, *col};
}

// The PTX ISA's statement of the layouts, written as it reads (independently of kiln's code).
struct Isa {
  static int group_id(int lane) { return lane >> 2; }
  static int thread_in_group(int lane) { return lane % 4; }
  // A: row = groupID for a0, a1, a4, a5; groupID + 8 for a2, a3, a6, a7.
  //    col = threadID_in_group * 2 + (i & 0x1) for a_i, i < 4; + 8 for i >= 4.
  static Element a(int lane, int i) {
    const int row = (i < 2 || (i >= 4 && i < 6)) ? group_id(lane) : group_id(lane) + 8;
    const int col = thread_in_group(lane) * 2 + (i & 0x1) + (i < 4 ? 0 : 8);
    return {row, col};
  }
  // B: row = threadID_in_group * 2 + (i & 0x1) for b0, b1; + 8 for b2, b3. col = groupID.
  static Element b(int lane, int i) {
    return {thread_in_group(lane) * 2 + (i & 0x1) + (i < 2 ? 0 : 8), group_id(lane)};
  }
  // C, D: row = groupID for c0, c1; groupID + 8 for c2, c3. col = threadID_in_group * 2 + (i & 0x1).
  static Element c(int lane, int i) { return {i < 2 ? group_id(lane) : group_id(lane) + 8, thread_in_group(lane) * 2 + (i & 0x1)}; }
};

// A lane's registers: two 16-bit elements to a 32-bit register of A and B, the lower-numbered
// one in the low half (how kiln's CUDA printer packs them); C and D as 4 floats.
struct Lane {
  std::array<uint32_t, 4> a{};
  std::array<uint32_t, 2> b{};
  std::array<float, 4> c{};
};

// Small integers travel as 16-bit "elements" exactly (the layout is what is tested here, not the
// float16 encoding): element value v is stored as the bits v + 1024.
uint32_t bits(float v) { return static_cast<uint32_t>(static_cast<int>(v) + 1024); }
float value(uint32_t b) { return static_cast<float>(static_cast<int>(b & 0xffff) - 1024); }

}  // namespace

TEST_CASE("mma m16n8k16 fragment layout: kiln's mapping computes a tile through the PTX ISA's", "[mma]") {
  // Operands of small integers: every product and sum is exact in float.
  std::vector<float> a(16 * 16), b(16 * 8), c(16 * 8);
  const auto ra = ref::random_floats(a.size(), 1, -8.f, 8.f), rb = ref::random_floats(b.size(), 2, -8.f, 8.f),
             rc = ref::random_floats(c.size(), 3, -64.f, 64.f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::round(ra[i]);
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::round(rb[i]);
  for (size_t i = 0; i < c.size(); ++i) c[i] = std::round(rc[i]);

  // Each lane loads its fragments through kiln's mapping.
  std::array<Lane, 32> lanes;
  for (int l = 0; l < 32; ++l) {
    for (int r = 0; r < 4; ++r) {
      const auto [r0, c0] = at(schedule::mma_a_element, l, 2 * r);
      const auto [r1, c1] = at(schedule::mma_a_element, l, 2 * r + 1);
      lanes[l].a[r] = bits(a[r0 * 16 + c0]) | (bits(a[r1 * 16 + c1]) << 16);
    }
    for (int r = 0; r < 2; ++r) {
      const auto [k0, n0] = at(schedule::mma_b_element, l, 2 * r);
      const auto [k1, n1] = at(schedule::mma_b_element, l, 2 * r + 1);
      lanes[l].b[r] = bits(b[k0 * 8 + n0]) | (bits(b[k1 * 8 + n1]) << 16);
    }
    for (int i = 0; i < 4; ++i) {
      const auto [row, col] = at(schedule::mma_c_element, l, i);
      lanes[l].c[i] = c[row * 8 + col];
    }
  }

  // The hardware: operands assembled from the lanes' registers as the ISA lays them out.
  std::vector<float> ha(16 * 16), hb(16 * 8), hc(16 * 8), hd(16 * 8);
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < 8; ++i) {
      const auto [row, col] = Isa::a(l, i);
      ha[row * 16 + col] = value(lanes[l].a[i / 2] >> (16 * (i % 2)));
    }
    for (int i = 0; i < 4; ++i) {
      const auto [k, n] = Isa::b(l, i);
      hb[k * 8 + n] = value(lanes[l].b[i / 2] >> (16 * (i % 2)));
    }
    for (int i = 0; i < 4; ++i) {
      const auto [row, col] = Isa::c(l, i);
      hc[row * 8 + col] = lanes[l].c[i];
    }
  }
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      float acc = hc[i * 8 + j];
      for (int k = 0; k < 16; ++k) acc += ha[i * 16 + k] * hb[k * 8 + j];
      hd[i * 8 + j] = acc;
    }
  // D goes back to the lanes as the ISA lays it out; each lane stores it through kiln's mapping.
  std::vector<float> d(16 * 8, std::nanf(""));
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) {
      const auto [hrow, hcol] = Isa::c(l, i);
      const auto [row, col] = at(schedule::mma_c_element, l, i);
      d[row * 8 + col] = hd[hrow * 8 + hcol];
    }

  int64_t wrong = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      float want = c[i * 8 + j];
      for (int k = 0; k < 16; ++k) want += a[i * 16 + k] * b[k * 8 + j];
      wrong += !(d[i * 8 + j] == want);
    }
  CHECK(wrong == 0);
}

TEST_CASE("mma m16n8k16 fragment layout: every element of each operand has one lane", "[mma]") {
  // A permutation of the lanes' elements would pass the product above only if it matched the
  // ISA; this states the coverage directly too.
  struct Operand {
    schedule::MmaElement (*map)(const ir::Expr&, const ir::Expr&);
    int elements, rows, cols;
  };
  for (const Operand& op : {Operand{schedule::mma_a_element, 8, 16, 16}, Operand{schedule::mma_b_element, 4, 16, 8},
                            Operand{schedule::mma_c_element, 4, 16, 8}}) {
    std::set<Element> seen;
    for (int l = 0; l < 32; ++l)
      for (int i = 0; i < op.elements; ++i) {
        const Element e = at(op.map, l, i);
        CHECK(e.first >= 0);
        CHECK(e.first < op.rows);
        CHECK(e.second >= 0);
        CHECK(e.second < op.cols);
        seen.insert(e);
      }
    CHECK(seen.size() == size_t(op.rows * op.cols));
  }
  // Spot values from the ISA's figures: lane 5 (groupID 1, threadID_in_group 1).
  CHECK(at(schedule::mma_a_element, 5, 0) == Element{1, 2});
  CHECK(at(schedule::mma_a_element, 5, 3) == Element{9, 3});
  CHECK(at(schedule::mma_a_element, 5, 6) == Element{9, 10});
  CHECK(at(schedule::mma_b_element, 5, 3) == Element{11, 1});
  CHECK(at(schedule::mma_c_element, 5, 2) == Element{9, 2});
}

namespace {

// ldmatrix.sync.aligned.m8n8.x{tiles}[.trans].shared.b16 as the PTX ISA describes it ("Warp-level
// matrix load instruction: ldmatrix"), on a shared memory of 16-bit elements: lane 8 t + r gives
// the address of row r of tile t; lane l receives, in register t, the two elements at (row l / 4,
// columns 2 (l % 4) + h) of tile t, or with .trans at (rows 2 (l % 4) + h, column l / 4).
std::array<std::array<int64_t, 8>, 32> isa_ldmatrix(const std::vector<int64_t>& mem, int tiles, bool trans,
                                                    const std::array<int64_t, 32>& provided) {
  std::array<std::array<int64_t, 8>, 32> regs{};
  for (int l = 0; l < 32; ++l)
    for (int t = 0; t < tiles; ++t)
      for (int h = 0; h < 2; ++h) {
        const int row = trans ? 2 * (l % 4) + h : l / 4, col = trans ? l / 4 : 2 * (l % 4) + h;
        regs[l][2 * t + h] = mem.at(provided[8 * t + row] + col);
      }
  return regs;
}

int64_t evaluated(const ir::Expr& e, const ir::VarMap<ir::Expr>& values) {
  auto v = ir::as_const_int(ir::arith::simplify(ir::substitute(e, values)));
  REQUIRE(v);
  return *v;
}

// A warp's fragment of an mma operand in a padded shared tile: the flat index of each element a
// lane loads, through kiln's layout (mma_a_element / mma_b_element), at block offsets `w` (rows)
// and `ko` (16-element K steps).
struct SharedFragment {
  ir::Var lane{"lane"}, w{"w"}, ko{"ko"};
  std::vector<ir::Expr> elements;
  // A (16 x 16, row-major, rows `stride` apart).
  static SharedFragment a(int64_t stride) {
    SharedFragment f;
    for (int i = 0; i < 8; ++i) {
      schedule::MmaElement x = schedule::mma_a_element(f.lane, ir::Expr(i));
      f.elements.push_back((f.w * 16 + x.row) * ir::Expr(stride) + f.ko * 16 + x.col);
    }
    return f;
  }
  // B as K x N (kn) or N x K, rows `stride` apart.
  static SharedFragment b(int64_t stride, bool kn) {
    SharedFragment f;
    for (int i = 0; i < 4; ++i) {
      schedule::MmaElement x = schedule::mma_b_element(f.lane, ir::Expr(i));  // row: k, col: n
      f.elements.push_back(kn ? (f.ko * 16 + x.row) * ir::Expr(stride) + f.w * 8 + x.col
                              : (f.w * 8 + x.col) * ir::Expr(stride) + f.ko * 16 + x.row);
    }
    return f;
  }
};

}  // namespace

TEST_CASE("ldmatrix: the rows kiln's lanes provide hand each lane its mma fragment, as the PTX ISA loads them", "[mma]") {
  struct Case {
    const char* name;
    SharedFragment f;
    int tiles;
    bool trans;
  };
  const std::vector<Case> cases = {{"A, rows of 40", SharedFragment::a(40), 4, false},
                                   {"A, rows of 72", SharedFragment::a(72), 4, false},
                                   {"B as N x K, rows of 40", SharedFragment::b(40, false), 2, false},
                                   {"B as K x N, rows of 72", SharedFragment::b(72, true), 2, true},
                                   {"B as K x N, rows of 136", SharedFragment::b(136, true), 2, true}};
  std::vector<int64_t> mem(64 * 256);
  for (size_t i = 0; i < mem.size(); ++i) mem[i] = static_cast<int64_t>(i * 7 + 3);  // distinct values
  for (const Case& c : cases) {
    INFO(c.name);
    std::string why;
    const std::optional<codegen::LdmatrixLoad> ld = codegen::ldmatrix_load(c.f.elements, c.f.lane, ir::arith::Analyzer(), &why);
    INFO(why);
    REQUIRE(ld);
    CHECK(ld->tiles == c.tiles);
    CHECK(ld->trans == c.trans);
    for (auto [w, ko] : {std::pair<int, int>{0, 0}, {1, 2}, {3, 1}}) {
      std::array<int64_t, 32> provided{};
      for (int p = 0; p < 32; ++p)
        provided[p] = evaluated(ld->row, {{c.f.lane.get(), ir::Expr(p)}, {c.f.w.get(), ir::Expr(w)}, {c.f.ko.get(), ir::Expr(ko)}});
      const auto regs = isa_ldmatrix(mem, ld->tiles, ld->trans, provided);
      int wrong = 0;
      for (int l = 0; l < 32; ++l)
        for (size_t i = 0; i < c.f.elements.size(); ++i) {
          const int64_t own = evaluated(c.f.elements[i], {{c.f.lane.get(), ir::Expr(l)}, {c.f.w.get(), ir::Expr(w)}, {c.f.ko.get(), ir::Expr(ko)}});
          wrong += regs[l][i] != mem.at(own);
        }
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("ldmatrix: fragments it cannot load are refused, saying why", "[mma]") {
  auto refusal = [](const SharedFragment& f) {
    std::string why;
    CHECK_FALSE(codegen::ldmatrix_load(f.elements, f.lane, ir::arith::Analyzer(), &why));
    return why;
  };
  // Rows 36 elements (72 bytes) apart: not 16-byte aligned.
  CHECK_THAT(refusal(SharedFragment::a(36)), Contains("16 bytes"));
  // A register of two rows' elements (A's elements 1 and 3 swapped): no ldmatrix loads that.
  // (Whole registers swapped would be tiles in another order, which ldmatrix loads alike.)
  SharedFragment swapped = SharedFragment::a(40);
  std::swap(swapped.elements[1], swapped.elements[3]);
  CHECK_THAT(refusal(swapped), Contains("not in ldmatrix's layout"));
  // A K offset of any element count: the first row is not proved aligned.
  SharedFragment unaligned = SharedFragment::a(40);
  ir::Var k("k");
  for (ir::Expr& e : unaligned.elements) e = e + k;
  CHECK_THAT(refusal(unaligned), Contains("not proved 16-byte aligned"));
  // Three registers.
  SharedFragment three = SharedFragment::a(40);
  three.elements.resize(6);
  CHECK_THAT(refusal(three), Contains("2 or 4 registers"));
}
