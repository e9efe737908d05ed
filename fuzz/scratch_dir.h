// An empty folder per fuzz process, for the readers that resolve files relative to a folder
// (ONNX external data, tuning logs read from a path): fuzz inputs that name files find nothing
// there (and paths that leave it are refused), so no run depends on the working directory.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace kiln::fuzz {

class ScratchDir {
 public:
  ScratchDir() {
    char tmpl[] = "/tmp/kiln_fuzz_XXXXXX";
    if (!mkdtemp(tmpl)) std::abort();
    path_ = tmpl;
  }
  ~ScratchDir() { rmdir(path_.c_str()); }  // empty again by then; a crash leaves it behind
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline const std::string& scratch_dir() {
  static const ScratchDir dir;
  return dir.path();
}

}  // namespace kiln::fuzz
