// The ONNX backend node tests of the nn ops (../shared/onnx/node), run directly: each model is
// imported; its calls of nn ops are lowered by the host's strategy, scheduled with the CPU anchor
// templates, compiled and run; other calls (the Gemm's transposes and scalings, the casts around
// a test) are evaluated by relay::evaluate_call, the plain reference. Outputs are compared with
// output_N.pb at rtol 1e-3, atol 1e-4 (the suite's tolerances). Cases that need an op neither
// path has are counted as skipped. Tag [ops_b_onnx] runs this alone.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/stat.h>

#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <unordered_map>

#include "kiln/relay/error.h"
#include "kiln/relay/evaluate.h"
#include "kiln/relay/frontend/onnx.h"
#include "test_ops_b_util.h"
#include "test_shared_dir.h"

using namespace kiln;
using relay::HostTensor;

namespace {

using kiln::test::shared_dir;
using kiln::test::exists;

std::vector<std::string> cases_matching(const std::string& root, const std::regex& re) {
  std::vector<std::string> names;
  if (DIR* d = opendir(root.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (std::regex_search(n, re)) names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The nn ops (lower/ops_nn.cc): these run as compiled kernels.
bool is_nn_op(const std::string& op) {
  static const std::set<std::string> mine = [] {
    std::set<std::string> s = {"nn.global_avg_pool", "nn.global_max_pool", "nn.dense", "nn.matmul", "einsum",
                               "nn.batch_norm", "nn.layer_norm", "nn.instance_norm", "nn.group_norm", "nn.lrn",
                               "nn.softmax", "nn.log_softmax", "image.resize", "cumsum", "topk", "scatter_elements",
                               "scatter_nd"};
    for (const char* d : {"1d", "2d", "3d"}) {
      for (const char* k : {"nn.conv", "nn.max_pool", "nn.avg_pool", "nn.lp_pool"}) s.insert(std::string(k) + d);
      s.insert(std::string("nn.conv") + d + "_transpose");
    }
    return s;
  }();
  return mine.count(op) != 0;
}

// Compiles and runs one call of an nn op with the host's strategy and CPU templates.
std::vector<HostTensor> run_kernel(const relay::CallNode& call, const std::vector<HostTensor>& args) {
  std::vector<relay::Type> types;
  for (const auto& a : args) types.push_back(a.type());
  opsb_test::Lowered l = opsb_test::lower_call(call.op->name, types, call.attrs);
  schedule::Config cfg;
  return opsb_test::run(l.template_schedule(cfg), l, args);
}

struct Outcome {
  enum Kind { Pass, Fail, Skip } kind;
  std::string detail;
};

Outcome run_case(const std::string& dir) {
  std::string data = dir + "/test_data_set_0";
  relay::OnnxImportOptions opts;
  std::map<std::string, HostTensor> inputs;
  std::vector<HostTensor> expected;
  try {
    for (int i = 0; exists(data + "/input_" + std::to_string(i) + ".pb"); ++i) {
      relay::NamedTensor t = relay::load_tensor_pb(data + "/input_" + std::to_string(i) + ".pb");
      opts.input_values[t.name] = t.value;
      inputs[t.name] = t.value;
    }
    for (int i = 0; exists(data + "/output_" + std::to_string(i) + ".pb"); ++i)
      expected.push_back(relay::load_tensor_pb(data + "/output_" + std::to_string(i) + ".pb").value);
  } catch (const kiln::Error& e) {
    return {Outcome::Skip, std::string("test data: ") + e.what()};
  }
  relay::Module m;
  try {
    m = relay::from_onnx(dir + "/model.onnx", opts);
  } catch (const kiln::Error& e) {
    return {Outcome::Skip, std::string("import: ") + e.what()};
  }
  std::unordered_map<const relay::ExprNode*, std::vector<HostTensor>> values;
  bool ran_kernel = false;
  try {
    for (const relay::Expr& e : relay::post_order(m.outputs())) {
      std::vector<HostTensor>& out = values[e.get()];
      if (const auto* v = e.as<relay::VarNode>()) {
        if (!inputs.count(v->name)) return {Outcome::Skip, "no value for input " + v->name};
        out = {inputs.at(v->name)};
      } else if (const auto* c = e.as<relay::ConstantNode>()) {
        out = {c->value};
      } else if (const auto* t = e.as<relay::TupleNode>()) {
        for (const auto& f : t->fields) out.push_back(values.at(f.get())[0]);
      } else if (const auto* g = e.as<relay::TupleGetItemNode>()) {
        out = {values.at(g->tuple.get()).at(g->index)};
      } else if (const auto* call = e.as<relay::CallNode>()) {
        std::vector<HostTensor> args;
        for (const auto& a : call->args) args.push_back(values.at(a.get())[0]);
        if (is_nn_op(call->op_name())) {
          out = run_kernel(*call, args);
          ran_kernel = true;
        } else if (auto r = relay::evaluate_call(*call, args)) {
          out = {*r};
        } else {
          return {Outcome::Skip, "no reference for " + call->op_name()};
        }
      }
    }
  } catch (const relay::UnsupportedError& e) {
    return {Outcome::Skip, std::string("unsupported: ") + e.what()};
  } catch (const std::exception& e) {
    return {Outcome::Fail, e.what()};
  }
  if (!ran_kernel) return {Outcome::Skip, "no nn op in the graph"};
  std::vector<relay::Expr> outs = m.outputs();
  if (outs.size() != expected.size()) return {Outcome::Fail, "output count"};
  for (size_t i = 0; i < outs.size(); ++i) {
    HostTensor got = values.at(outs[i].get())[0];
    if (got.dtype() != expected[i].dtype()) return {Outcome::Fail, "dtype of output " + std::to_string(i)};
    std::string diff = opsb_test::compare(got, expected[i], 1e-3, 1e-4);
    if (!diff.empty()) return {Outcome::Fail, "output " + std::to_string(i) + ": " + diff};
  }
  return {Outcome::Pass, ""};
}

// Cases that fail, and why (keep short and honest).
const std::map<std::string, std::string> kKnownFailures = {};

}  // namespace

TEST_CASE("ONNX node tests of the nn ops compute the expected outputs", "[ops_b_onnx]") {
  std::string root = shared_dir() + "/onnx/node";
  std::regex re(
      "^test_(conv|convtranspose|maxpool|averagepool|globalaveragepool|globalmaxpool|gemm|matmul|einsum|batchnorm|"
      "layer_normalization|instancenorm|group_normalization|lrn|softmax|logsoftmax|resize|upsample|cumsum|top_k|"
      "scatter|lppool|basic_conv|basic_convinteger)");
  std::vector<std::string> cases = cases_matching(root, re);
  REQUIRE(cases.size() > 100);
  int pass = 0, skip = 0;
  std::vector<std::string> failures;
  for (const std::string& c : cases) {
    Outcome o = run_case(root + "/" + c);
    if (std::getenv("KILN_OPSB_LOG")) fprintf(stderr, "%s %s %s\n", o.kind == Outcome::Pass ? "PASS" : o.kind == Outcome::Skip ? "SKIP" : "FAIL", c.c_str(), o.detail.c_str());
    if (o.kind == Outcome::Pass) ++pass;
    else if (o.kind == Outcome::Skip) ++skip;
    else if (!kKnownFailures.count(c)) failures.push_back(c + ": " + o.detail);
  }
  std::string report;
  for (const auto& f : failures) report += f + "\n";
  WARN(cases.size() << " nn node tests: " << pass << " pass, " << failures.size() << " fail, " << skip
                    << " skipped (no nn op, or an op without a reference here), " << kKnownFailures.size()
                    << " known failures");
  INFO(report);
  CHECK(failures.empty());
  CHECK(pass >= 150);
}
