// The ONNX backend node test suite (../shared/onnx/node): every case whose operators the
// importer claims must import, and its inferred output types must equal those of the expected
// outputs (output_N.pb). Cases using unsupported operators must fail with the one message that
// lists them. Known exceptions are listed below with their reasons.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kiln/relay/error.h"
#include "kiln/relay/frontend/onnx.h"
#include "kiln/support/error.h"
#include "test_shared_dir.h"

using namespace kiln::relay;

namespace {

using kiln::test::shared_dir;
using kiln::test::exists;

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Cases that use only claimed operators but do not import, or import with other types, and why.
const std::map<std::string, std::string> kKnownExceptions = {
};

struct Outcome {
  enum Kind { Ok, Unsupported, Failed } kind;
  std::string detail;
};

Outcome run_case(const std::string& dir) {
  std::string data = dir + "/test_data_set_0";
  OnnxImportOptions opts;
  std::vector<HostTensor> expected;
  try {
    for (int i = 0; exists(data + "/input_" + std::to_string(i) + ".pb"); ++i) {
      NamedTensor t = load_tensor_pb(data + "/input_" + std::to_string(i) + ".pb");
      // The harness gives every input's value at compile time: nodes that need one as a constant
      // (Reshape's shape, Slice's starts, ...) read it; the others stay graph inputs.
      if (!t.name.empty()) opts.input_values[t.name] = t.value;
    }
    for (int i = 0; exists(data + "/output_" + std::to_string(i) + ".pb"); ++i)
      expected.push_back(load_tensor_pb(data + "/output_" + std::to_string(i) + ".pb").value);
  } catch (const kiln::Error& e) {
    // float8, int4 or string tensors, or not tensors at all (sequence and optional values).
    return {Outcome::Unsupported, std::string("test data: ") + e.what()};
  }
  Module m;
  try {
    m = from_onnx(dir + "/model.onnx", opts);
  } catch (const UnsupportedError& e) {
    return {Outcome::Unsupported, e.what()};
  } catch (const kiln::Error& e) {
    return {Outcome::Failed, e.what()};
  } catch (const std::exception& e) {
    return {Outcome::Failed, std::string("internal: ") + e.what()};
  }
  std::vector<Type> types = m.output_types();
  if (types.size() != expected.size())
    return {Outcome::Failed, std::to_string(types.size()) + " outputs, expected " + std::to_string(expected.size())};
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] != expected[i].type())
      return {Outcome::Failed, "output " + std::to_string(i) + " is " + types[i].str() + ", expected " +
                                   expected[i].type().str()};
  }
  return {Outcome::Ok, ""};
}

}  // namespace

TEST_CASE("the ONNX node test suite imports with the expected output types", "[onnx][node_suite]") {
  std::string root = shared_dir() + "/onnx/node";
  std::vector<std::string> cases = list_dir(root);
  REQUIRE(cases.size() > 1000);
  int ok = 0, unsupported = 0, known = 0;
  std::vector<std::string> failures;
  std::set<std::string> stale;  // listed exceptions that no longer fail: the list must shrink with them
  for (const auto& [name, why] : kKnownExceptions) stale.insert(name);
  for (const std::string& c : cases) {
    Outcome o = run_case(root + "/" + c);
    bool listed = kKnownExceptions.count(c) != 0;
    if (o.kind == Outcome::Ok) {
      ++ok;
      continue;
    }
    if (o.kind == Outcome::Unsupported) {
      if (std::getenv("KILN_NODE_SUITE_LOG")) fprintf(stderr, "UNSUPPORTED %s: %s\n", c.c_str(), o.detail.c_str());
      ++unsupported;
      continue;
    }
    if (listed) {
      ++known;
      stale.erase(c);
      continue;
    }
    failures.push_back(c + ": " + o.detail);
  }
  std::string report;
  for (const auto& f : failures) report += f + "\n";
  WARN(cases.size() << " cases: " << ok << " imported with the expected types, " << unsupported
                    << " use unsupported operators or types, " << known << " known exceptions, " << failures.size()
                    << " failures");
  INFO(report);
  CHECK(failures.empty());
  for (const std::string& s : stale) FAIL_CHECK("known exception " << s << " no longer fails: remove it from the list");
  // A floor on what imports, so that losing an operator cannot pass silently as "unsupported".
  CHECK(ok >= 1493);
}

TEST_CASE("the suite's quantization cases: in scope import, out of scope are refused naming node and type",
          "[onnx][node_suite]") {
  // Out of scope (src/relay/frontend/onnx/convert_quantize.cc): each case's name says what,
  // and the refusal names the node's op and that type or attribute.
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"e4m3fn", "FLOAT8E4M3FN"}, {"e5m2", "FLOAT8E5M2"}, {"float4e2m1", "FLOAT4E2M1"}, {"uint4", "UINT4"},
      {"int4", "INT4"},           {"uint2", "UINT2"},     {"int2", "INT2"},             {"blocked", "block_size"}};
  std::string root = shared_dir() + "/onnx/node";
  int imported = 0, unsupported = 0;
  for (const std::string& c : list_dir(root)) {
    if (c.find("quant") == std::string::npos && c.find("integer") == std::string::npos &&
        c.find("qlinear") == std::string::npos)
      continue;
    std::string why;
    for (const auto& [tag, what] : refused)
      if (why.empty() && c.find(tag) != std::string::npos) why = what;
    INFO(c);
    try {
      from_onnx(root + "/" + c + "/model.onnx");
      CHECK(why.empty());
      ++imported;
    } catch (const UnsupportedError& e) {
      std::string msg = e.what();
      CHECK(!why.empty());
      CHECK_THAT(msg, Catch::Contains("ONNX node") && Catch::Contains("Linear)") && Catch::Contains(why));
      ++unsupported;
    }
  }
  CHECK(imported == 26);
  CHECK(unsupported == 19);
}
