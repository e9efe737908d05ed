// libFuzzer target: a tuning log's bytes through the reader (tuning_log_target.h), which takes
// a path: each input is written to a file in the scratch folder first.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_guard.h"
#include "scratch_dir.h"
#include "tuning_log_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = kiln::fuzz::scratch_dir() + "/log.json";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) std::abort();
  kiln::fuzz::guarded([&] { kiln::fuzz::read_tuning_log(path); });
  std::remove(path.c_str());
  return 0;
}
