// .npy reading and writing (tools/runner/npy.h): round trips of every dtype and rank, the layout
// NumPy expects (data 64-byte aligned, header ending in '\n'), and errors naming the file.
#define CATCH_CONFIG_MAIN  // this file is the whole test program
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <iterator>

#include "npy.h"

using kiln::npy::Array;

namespace {

std::string scratch(const std::string& name) { return std::string(KILN_NPY_SCRATCH) + "/" + name; }
std::string fixture(const std::string& name) { return std::string(KILN_NPY_FIXTURES) + "/" + name; }

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Array make(DLDataType t, std::vector<int64_t> shape) {
  Array a;
  a.dtype = t;
  a.shape = std::move(shape);
  a.data.resize(static_cast<size_t>(a.num_elements()) * Array::element_bytes(t));
  for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<uint8_t>(i * 37 + 1);
  if (t.bits == 1)
    for (uint8_t& b : a.data) b &= 1;
  return a;
}

bool same_type(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }

}  // namespace

TEST_CASE("npy: every dtype and rank round-trips", "[npy]") {
  const DLDataType types[] = {{kDLFloat, 32, 1}, {kDLFloat, 64, 1}, {kDLFloat, 16, 1}, {kDLInt, 8, 1},
                              {kDLInt, 16, 1},   {kDLInt, 32, 1},   {kDLInt, 64, 1},   {kDLUInt, 8, 1},
                              {kDLUInt, 16, 1},  {kDLUInt, 32, 1},  {kDLUInt, 64, 1},  {kDLUInt, 1, 1}};
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {2, 3}, {1, 3, 4, 4}, {0, 3}};
  for (DLDataType t : types) {
    for (const auto& shape : shapes) {
      Array a = make(t, shape);
      std::string path = scratch("roundtrip.npy");
      kiln::npy::write(path, a);
      Array b = kiln::npy::read(path);
      INFO(kiln::npy::dtype_name(t) << " rank " << shape.size());
      CHECK(same_type(b.dtype, a.dtype));
      CHECK(b.shape == a.shape);
      CHECK(b.data == a.data);
      std::string raw = bytes_of(path);
      size_t data_at = raw.size() - a.data.size();
      CHECK(data_at % 64 == 0);
      CHECK(raw[data_at - 1] == '\n');
    }
  }
}

TEST_CASE("npy: the header is NumPy's", "[npy]") {
  kiln::npy::write(scratch("header.npy"), make({kDLFloat, 32, 1}, {5}));
  std::string raw = bytes_of(scratch("header.npy"));
  CHECK(raw.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  CHECK(raw.find("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }") == 10);
  kiln::npy::write(scratch("bool.npy"), make({kDLUInt, 1, 1}, {}));
  CHECK(bytes_of(scratch("bool.npy")).find("{'descr': '|b1', 'fortran_order': False, 'shape': (), }") == 10);
  CHECK(kiln::npy::descr_of({kDLInt, 8, 1}) == "|i1");
  CHECK(kiln::npy::descr_of({kDLBfloat, 16, 1}) == "");
}

TEST_CASE("npy: fixtures written like NumPy read back", "[npy]") {
  Array v1 = kiln::npy::read(fixture("x_3x4x5.npy"));
  Array v2 = kiln::npy::read(fixture("x_3x4x5_v2.npy"));
  CHECK(v1.shape == std::vector<int64_t>{3, 4, 5});
  CHECK(v2.data == v1.data);
  float first = 0;
  std::memcpy(&first, v1.data.data(), 4);
  CHECK(first == -3.75f);
}

TEST_CASE("npy: errors name the file and what is wrong", "[npy][errors]") {
  auto error_of = [](const std::string& path) {
    try {
      kiln::npy::read(path);
    } catch (const kiln::npy::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error_of(fixture("x_big_endian.npy")), Catch::Contains("x_big_endian.npy': dtype '>f4' is big-endian"));
  CHECK_THAT(error_of(fixture("x_fortran.npy")), Catch::Contains("x_fortran.npy': the array is in Fortran order"));
  CHECK_THAT(error_of(fixture("x_truncated.npy")), Catch::Contains("needs 240 bytes of data, the file has 100"));
  CHECK_THAT(error_of(fixture("x_structured.npy")), Catch::Contains("unsupported dtype [('a', '<f4'), ('b', '<f4')]"));
  CHECK_THAT(error_of(fixture("make_fixtures.py")), Catch::Contains("make_fixtures.py': not a NumPy .npy file"));
  CHECK_THAT(error_of(fixture("no_such.npy")), Catch::Contains("no_such.npy': cannot open"));
  Array bf = make({kDLBfloat, 16, 1}, {2});
  CHECK_THROWS_WITH(kiln::npy::write(scratch("bf16.npy"), bf), Catch::Contains("NumPy has no dtype for bfloat16"));
}
