// NDArray: allocation, alignment, typed access and copies.
#include <catch2/catch.hpp>

#include <cstdint>

#include "kiln/runtime/ndarray.h"

using kiln::runtime::NDArray;
namespace rt = kiln::runtime;

TEST_CASE("NDArray::empty is 64-byte aligned, compact and sized by shape and dtype", "[runtime]") {
  NDArray a = NDArray::empty({3, 5, 7}, rt::dtype_f32());
  REQUIRE(a.numel() == 105);
  REQUIRE(a.nbytes() == 420);
  REQUIRE(reinterpret_cast<uintptr_t>(a.raw_data()) % 64 == 0);
  const DLTensor* t = a.dltensor();
  REQUIRE(t->ndim == 3);
  REQUIRE(t->shape[0] == 3);
  REQUIRE(t->shape[2] == 7);
  REQUIRE(t->strides == nullptr);
  REQUIRE(t->byte_offset == 0);
  REQUIRE(t->device.device_type == kDLCPU);
  REQUIRE(rt::dtype_str(t->dtype) == "float32");

  NDArray s = NDArray::empty({}, rt::dtype_i64());  // a scalar has one element
  REQUIRE(s.numel() == 1);
  NDArray z = NDArray::empty({0, 4}, rt::dtype_f32());
  REQUIRE(z.numel() == 0);
  REQUIRE(reinterpret_cast<uintptr_t>(z.raw_data()) % 64 == 0);
  REQUIRE_THROWS_AS(NDArray::empty({2, -1}, rt::dtype_f32()), kiln::Error);
}

TEST_CASE("NDArray typed access, copies share or duplicate storage", "[runtime]") {
  NDArray a = NDArray::from_vector<int32_t>({2, 2}, rt::dtype_i32(), {1, 2, 3, 4});
  REQUIRE(a.to_vector<int32_t>() == std::vector<int32_t>{1, 2, 3, 4});
  REQUIRE_THROWS_AS(a.data<double>(), kiln::Error);  // 8-byte element type on int32

  NDArray shallow = a;
  NDArray deep = a.copy();
  a.data<int32_t>()[0] = 10;
  REQUIRE(shallow.data<int32_t>()[0] == 10);
  REQUIRE(deep.data<int32_t>()[0] == 1);

  NDArray z = NDArray::zeros({2, 2}, rt::dtype_i32());
  REQUIRE(z.to_vector<int32_t>() == std::vector<int32_t>{0, 0, 0, 0});
  z.copy_from(a);
  REQUIRE(z.to_vector<int32_t>() == std::vector<int32_t>{10, 2, 3, 4});
  REQUIRE_THROWS_AS(z.copy_from(NDArray::zeros({4}, rt::dtype_i32())), kiln::Error);
  REQUIRE_THROWS_AS(z.copy_from(NDArray::zeros({2, 2}, rt::dtype_f32())), kiln::Error);
  REQUIRE_THROWS_AS((NDArray::from_vector<int32_t>({3}, rt::dtype_i32(), {1, 2})), kiln::Error);

  std::vector<int32_t> out(4);
  z.copy_to_bytes(out.data(), 16);
  REQUIRE(out[0] == 10);
  REQUIRE_THROWS_AS(z.copy_to_bytes(out.data(), 12), kiln::Error);
}

TEST_CASE("NDArray dtype names", "[runtime]") {
  REQUIRE(rt::dtype_str(rt::dtype_bool()) == "bool");
  REQUIRE(rt::dtype_str(rt::dtype_bf16()) == "bfloat16");
  REQUIRE(rt::dtype_str(rt::make_dtype(kDLFloat, 32, 4)) == "float32x4");
  REQUIRE(rt::dtype_bytes(rt::dtype_bool()) == 1);
  REQUIRE(rt::dtype_bytes(rt::make_dtype(kDLInt, 8, 16)) == 16);
}
