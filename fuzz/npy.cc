// libFuzzer target: .npy bytes through the reader (npy_target.h).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "npy_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    kiln::fuzz::read_npy(bytes);
  } catch (const kiln::npy::Error&) {
    // Rejected with a message naming the file: the behaviour wanted.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: an exception that is not an npy::Error: %s\n", e.what());
    std::abort();
  }
  return 0;
}
