// Where the unit tests find the repository and ../shared (the ONNX node suite, the models):
// KILN_SHARED_DIR when set, else beside the repository this file is in (its path as compiled).
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <string>

namespace kiln::test {

inline std::string repo_dir() {
  std::string file = __FILE__;  // <repo>/tests/unit/test_shared_dir.h
  return file.substr(0, file.rfind("/tests/unit/"));
}

inline std::string shared_dir() {
  if (const char* env = std::getenv("KILN_SHARED_DIR")) return env;
  return repo_dir() + "/../shared";
}

inline bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

}  // namespace kiln::test
