// Writes the hostile ONNX models of issue 11 into the folder given as argv[1], for the
// hostile.* CLI tests (tests/CMakeLists.txt): each must make `kiln compile` fail with a message
// naming the culprit, in bounded time and memory, never crash it.
//
// They are written at test time rather than committed: the deep chain is megabytes, and the
// external-data cases need files and a symlink next to (and outside) the model's folder.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "test_onnx_builder.h"

using namespace onnx_builder;
namespace fs = std::filesystem;

namespace {

fs::path out_dir;

void write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f) != 0) {
    std::cerr << "make_hostile_models: cannot write " << path << "\n";
    std::exit(1);
  }
}

// y = op(x) on one float input x of `shape`, with `inits`.
std::string one_node(const Pb& n, const std::vector<int64_t>& shape, const std::vector<Pb>& inits = {}) {
  return model(13, {n}, {value("x", FLOAT, shape)}, {value("y", FLOAT, {})}, inits);
}

// A float initializer 'w' [4] whose bytes live in the external file `location`.
Pb external_w(const std::string& location, const std::vector<int64_t>& dims = {4}) {
  Pb t;
  for (int64_t d : dims) t.i(1, d);
  return t.i(2, FLOAT).str(8, "w").msg(13, Pb().str(1, "location").str(2, location)).i(14, 1);
}
std::string add_w(const Pb& w) {
  return model(13, {node("Add", {"x", "w"}, {"y"}, "add_w")}, {value("x", FLOAT, {4})}, {value("y", FLOAT, {})}, {w});
}

void huge_tensors() {
  // 1e12 elements: 4 TB of float32. The declaration alone must be refused, not allocated.
  const int64_t M = 1000000;
  write(out_dir / "huge_input.onnx", one_node(node("Relu", {"x"}, {"y"}, "relu1"), {M, M}));
  write(out_dir / "huge_initializer.onnx",
        model(13, {node("Add", {"x", "w"}, {"y"}, "add1")}, {value("x", FLOAT, {1})}, {value("y", FLOAT, {})},
              {tensor_raw("w", FLOAT, {M, M}, std::string(16, '\0'))}));
  // 3e9 elements (12 GB) are within that limit, but kernels loop with int32 indices.
  write(out_dir / "huge_dim.onnx", one_node(node("Relu", {"x"}, {"y"}, "relu1"), {3000000000}));
  // Ops whose inferred output is 1e12 elements from tiny inputs.
  write(out_dir / "huge_expand.onnx",
        one_node(node("Expand", {"x", "shape"}, {"y"}, "expand1"), {1}, {tensor_i64("shape", {2}, {M, M})}));
  write(out_dir / "huge_constant_of_shape.onnx",
        model(13, {node("ConstantOfShape", {"shape"}, {"y"}, "fill1", {attr_t("value", tensor_f32("v", {1}, {1}))})},
              {}, {value("y", FLOAT, {})}, {tensor_i64("shape", {2}, {M, M})}));
  write(out_dir / "huge_tile.onnx",
        one_node(node("Tile", {"x", "reps"}, {"y"}, "tile1"), {1000, 1000}, {tensor_i64("reps", {2}, {1000, 1000})}));
  // External data for a 1e10-element initializer (40 GB: within kiln's limit for one tensor) in
  // a 16-byte file: the file's size must refuse it before 40 GB are allocated to read into.
  write(out_dir / "huge_external/weights.bin", std::string(16, '\0'));
  write(out_dir / "huge_external/model.onnx", add_w(external_w("weights.bin", {100000, 100000})));
}

void deep_graph() {
  // 100000 nodes in one chain, alternating Relu and Add, the last Add also reading the first
  // node (a skip connection around the whole chain): recursive passes, and a recursive walk
  // along the paths from the first node to the last, would overflow the stack; quadratic ones
  // would not end.
  const int n = 100000;
  std::vector<Pb> nodes;
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    std::string out = i + 1 == n ? "y" : "t" + std::to_string(i);
    if (i % 2) {
      nodes.push_back(node("Add", {prev, i + 1 == n ? "t0" : "one"}, {out}, "add" + std::to_string(i)));
    } else {
      nodes.push_back(node("Relu", {prev}, {out}, "relu" + std::to_string(i)));
    }
    prev = out;
  }
  write(out_dir / "deep_chain.onnx",
        model(13, nodes, {value("x", FLOAT, {4})}, {value("y", FLOAT, {})}, {tensor_f32("one", {}, {1})}));
  // Each node reads the previous one twice: 2^400 paths through 400 nodes, so a pass (or a
  // kernel's inlined expression) that follows paths instead of nodes never ends.
  nodes.clear();
  prev = "x";
  for (int i = 0; i < 400; ++i) {
    std::string out = i + 1 == 400 ? "y" : "t" + std::to_string(i);
    nodes.push_back(node(i % 2 ? "Add" : "Mul", {prev, prev}, {out}, "n" + std::to_string(i)));
    prev = out;
  }
  write(out_dir / "deep_diamond.onnx", model(13, nodes, {value("x", FLOAT, {4})}, {value("y", FLOAT, {})}));
}

void cycles() {
  write(out_dir / "cycle_self.onnx",
        model(13, {node("Relu", {"a"}, {"a"}, "self_loop")}, {value("x", FLOAT, {4})}, {value("a", FLOAT, {})}));
  write(out_dir / "cycle_two.onnx",
        model(13, {node("Relu", {"b"}, {"a"}, "first"), node("Relu", {"a"}, {"b"}, "second")},
              {value("x", FLOAT, {4})}, {value("b", FLOAT, {})}));
}

void wrong_initializer_sizes() {
  auto add = [](const Pb& w) {
    return model(13, {node("Add", {"x", "w"}, {"y"}, "add1")}, {value("x", FLOAT, {2, 2})}, {value("y", FLOAT, {})},
                 {w});
  };
  write(out_dir / "init_raw_short.onnx", add(tensor_raw("w", FLOAT, {2, 2}, std::string(12, '\0'))));
  write(out_dir / "init_float_data_count.onnx", add(tensor_f32("w", {2, 2}, {1, 2, 3})));
}

void external_data_escapes() {
  // A file outside every model folder that the escapes point at (it must exist, so that only
  // the containment rule can refuse it).
  write(out_dir / "outside.bin", std::string(16, '\0'));
  write(out_dir / "ext_parent/model.onnx", add_w(external_w("../../../../../../../../etc/passwd")));
  write(out_dir / "ext_parent_sibling/model.onnx", add_w(external_w("../outside.bin")));
  write(out_dir / "ext_absolute/model.onnx", add_w(external_w("/etc/passwd")));
  write(out_dir / "ext_symlink/model.onnx", add_w(external_w("weights.bin")));
  fs::path link = out_dir / "ext_symlink/weights.bin";
  std::error_code ec;
  fs::remove(link, ec);
  fs::create_symlink("../outside.bin", link);
  write(out_dir / "ext_directory/sub/placeholder", "");
  write(out_dir / "ext_directory/model.onnx", add_w(external_w("sub")));
}

void inconsistent_shapes() {
  write(out_dir / "shape_add.onnx",
        model(13, {node("Add", {"a", "b"}, {"y"}, "add1")}, {value("a", FLOAT, {2, 3}), value("b", FLOAT, {4, 5})},
              {value("y", FLOAT, {})}));
  write(out_dir / "shape_matmul.onnx",
        model(13, {node("MatMul", {"a", "b"}, {"y"}, "matmul1")}, {value("a", FLOAT, {2, 3}), value("b", FLOAT, {4, 5})},
              {value("y", FLOAT, {})}));
  write(out_dir / "shape_reshape.onnx",
        one_node(node("Reshape", {"x", "shape"}, {"y"}, "reshape1"), {2, 3}, {tensor_i64("shape", {1}, {7})}));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_hostile_models OUT_DIR\n";
    return 2;
  }
  out_dir = argv[1];
  huge_tensors();
  deep_graph();
  cycles();
  wrong_initializer_sizes();
  external_data_escapes();
  inconsistent_shapes();
  std::cout << "hostile models written to " << out_dir.string() << "\n";
  return 0;
}
