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
#include <set>
#include <utility>

#include "kiln/ir/arith.h"
#include "kiln/schedule/mma_intrin.h"
#include "kiln/testing/reference.h"

using namespace kiln;

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
