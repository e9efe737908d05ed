// The inputs kiln's fuzzers found crashes with (tests/fuzz_regressions/FUZZER/NAME), replayed
// through the very code the fuzzer runs (fuzz/FUZZER_target.h): each must now be rejected with
// a user error (kiln::Error; npy::Error for .npy) whose message contains the text of NAME.expect
// beside it, or be accepted where NAME.expect says "accepted". An InternalError or any other
// exception fails the test, as it made the fuzzer crash. fuzz/run.sh saves a crashing input
// under build-fuzz/fuzz-artifacts/; the fix adds it here with its .expect.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>

#include "npy_target.h"
#include "onnx_import_target.h"
#include "scratch_dir.h"
#include "tensor_pb_target.h"
#include "tuning_log_target.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
// An .expect file's text, without its line end.
std::string read_expect(const fs::path& p) {
  std::string s = read_file(p);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// Runs one input; "accepted", or the message of the wanted rejection (anything else propagates).
using Replay = std::function<std::string(const fs::path&)>;
template <class WantedError>
std::string outcome(const std::function<void()>& body) {
  try {
    body();
  } catch (const WantedError& e) {
    return e.what();
  }
  return "accepted";
}

const std::map<std::string, Replay>& replays() {
  static const std::map<std::string, Replay> r = {
      {"onnx_import",
       [](const fs::path& p) {
         return outcome<kiln::Error>(
             [&] { kiln::fuzz::import_through_graph_passes(read_file(p), kiln::fuzz::scratch_dir()); });
       }},
      {"tensor_pb",
       [](const fs::path& p) {
         return outcome<kiln::Error>([&] { kiln::fuzz::read_tensor_pb(read_file(p), kiln::fuzz::scratch_dir()); });
       }},
      {"npy", [](const fs::path& p) { return outcome<kiln::npy::Error>([&] { kiln::fuzz::read_npy(read_file(p)); }); }},
      {"tuning_log",
       [](const fs::path& p) { return outcome<kiln::Error>([&] { kiln::fuzz::read_tuning_log(p.string()); }); }},
  };
  return r;
}

}  // namespace

TEST_CASE("fuzz regressions: every input a fuzzer crashed on is now a user error naming its culprit", "[fuzz]") {
  int cases = 0;
  for (const auto& dir : fs::directory_iterator(KILN_FUZZ_REGRESSIONS)) {
    if (!dir.is_directory()) continue;
    const std::string fuzzer = dir.path().filename().string();
    INFO("fuzzer " << fuzzer);
    REQUIRE(replays().count(fuzzer));  // a folder per fuzzer with a replay above
    for (const auto& f : fs::directory_iterator(dir.path())) {
      if (f.path().extension() == ".expect") continue;
      INFO("input " << f.path().string());
      fs::path expect_file = f.path().string() + ".expect";
      REQUIRE(fs::exists(expect_file));
      std::string expect = read_expect(expect_file);
      REQUIRE(!expect.empty());
      std::string got = replays().at(fuzzer)(f.path());
      if (expect == "accepted") {
        CHECK(got == "accepted");
      } else {
        CHECK_THAT(got, Contains(expect));
      }
      ++cases;
    }
  }
  CHECK(cases >= 2);
}
