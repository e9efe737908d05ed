// `kiln compile --dump-dot STAGE FILE [--dot-profile PROFILE.json]`: Graphviz pictures of the
// graph after graph passes (relay/dot.h). After fuse_ops each kernel is a cluster labelled with
// the name the compiled module gives it, and with a profile written by `kiln bench --profile-json`
// each cluster shows its share of the time.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kiln/relay/module.h"
#include "kiln/relay/transforms.h"

namespace kiln::cli {

class GraphPictures {
 public:
  // `requests`: (stage, file) pairs; each stage must be one of kiln::graph_stages() (kiln::Error
  // naming the valid ones). `profile`: a --profile-json file or "" (it needs a fuse_ops picture).
  // `model` names the pictures.
  GraphPictures(std::vector<std::pair<std::string, std::string>> requests, const std::string& profile,
                std::string model);
  // CompileOptions::on_graph: writes the pictures of `stage` (kiln::Error when a file cannot be
  // written).
  void operator()(const std::string& stage, const relay::Module& m, const relay::FusedModule* fused);
  // kiln::Error naming a requested stage that did not run for this model and these options.
  void check_all_written() const;

 private:
  std::vector<std::pair<std::string, std::string>> requests_;
  std::vector<bool> written_;
  std::string profile_path_, model_;
  std::map<std::string, double> kernel_ms_;  // the profile: median ms per kernel
};

// `kiln bench --profile-json FILE`: per-kernel median times of a profiled run (what
// --dot-profile reads). `kernels`: (kernel, label, median ms) per plan node, in plan order.
struct KernelTime {
  std::string kernel, label;
  double median_ms = 0;
};
void write_profile_json(const std::string& path, const std::string& module, int threads, int runs,
                        const std::vector<KernelTime>& kernels);

// Writes `text` to `path`; kiln::Error headed by `what` (the option) when it cannot.
void write_text(const std::string& path, const std::string& text, const std::string& what);

}  // namespace kiln::cli
