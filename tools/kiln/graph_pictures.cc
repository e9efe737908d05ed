#include "graph_pictures.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kiln/compiler.h"
#include "kiln/lower/schedule_group.h"
#include "relay/dot.h"
#include "kiln/support/error.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

// Median ms per kernel name; the nodes of one kernel (GPU launches) add up.
std::map<std::string, double> read_profile(const std::string& path) {
  std::ifstream in(path);
  KILN_USER_CHECK(in) << "--dot-profile: cannot open '" << path << "'";
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    KILN_THROW() << "--dot-profile: '" << path << "' is not JSON: " << e.what();
  }
  KILN_USER_CHECK(j.is_object() && j.contains("kernels") && j["kernels"].is_array())
      << "--dot-profile: '" << path << "' has no \"kernels\" list (write one with kiln bench MODEL.so --profile-json FILE)";
  std::map<std::string, double> ms;
  for (const json& k : j["kernels"]) {
    KILN_USER_CHECK(k.is_object() && k.contains("kernel") && k["kernel"].is_string() && k.contains("median_ms") &&
                    k["median_ms"].is_number())
        << "--dot-profile: '" << path << "': a kernel entry without \"kernel\" and \"median_ms\": " << k.dump();
    ms[k["kernel"].get<std::string>()] += k["median_ms"].get<double>();
  }
  return ms;
}

}  // namespace

GraphPictures::GraphPictures(std::vector<std::pair<std::string, std::string>> requests, const std::string& profile,
                             std::string model)
    : requests_(std::move(requests)), written_(requests_.size(), false), profile_path_(profile), model_(std::move(model)) {
  std::vector<std::string> stages = graph_stages();
  bool fuse_ops = false;
  for (const auto& [stage, file] : requests_) {
    if (std::find(stages.begin(), stages.end(), stage) == stages.end()) {
      std::string list;
      for (const std::string& s : stages) list += (list.empty() ? "" : ", ") + s;
      KILN_THROW() << "--dump-dot: unknown stage '" << stage << "'; graph stages: " << list;
    }
    fuse_ops = fuse_ops || stage == "fuse_ops";
  }
  if (!profile.empty()) {
    KILN_USER_CHECK(fuse_ops) << "--dot-profile needs --dump-dot fuse_ops FILE: its times belong to the fused kernels";
    kernel_ms_ = read_profile(profile);
  }
}

void GraphPictures::operator()(const std::string& stage, const relay::Module& m, const relay::FusedModule* fused) {
  for (size_t r = 0; r < requests_.size(); ++r) {
    if (requests_[r].first != stage) continue;
    const std::string& file = requests_[r].second;
    relay::DotOptions opts;
    opts.title = model_ + " after " + stage;
    std::string dot;
    if (fused) {
      for (size_t g = 0; g < fused->groups.size(); ++g)
        opts.group_names.push_back(lower::kernel_name(fused->groups[g], static_cast<int>(g)));
      if (!kernel_ms_.empty()) {
        double total = 0;
        for (const auto& [kernel, ms] : kernel_ms_) {
          KILN_USER_CHECK(std::count(opts.group_names.begin(), opts.group_names.end(), kernel))
              << "--dot-profile '" << profile_path_ << "': kernel '" << kernel
              << "' is not one of this model's kernels (a profile of another model, or of other compile options?)";
          total += ms;
        }
        for (const std::string& name : opts.group_names) {
          auto it = kernel_ms_.find(name);
          KILN_USER_CHECK(it != kernel_ms_.end())
              << "--dot-profile '" << profile_path_ << "' has no time for kernel '" << name << "'";
          opts.group_shares.push_back(total > 0 ? it->second / total : 0.0);
        }
      }
      dot = relay::to_dot(*fused, opts);
    } else {
      dot = relay::to_dot(m, opts);
    }
    write_text(file, dot, "--dump-dot " + stage);
    written_[r] = true;
  }
}

void GraphPictures::check_all_written() const {
  for (size_t r = 0; r < requests_.size(); ++r)
    KILN_USER_CHECK(written_[r]) << "--dump-dot " << requests_[r].first << ": that stage did not run for this model "
                                 << "with these options, so '" << requests_[r].second << "' was not written";
}

void write_profile_json(const std::string& path, const std::string& module, int threads, int runs,
                        const std::vector<KernelTime>& kernels) {
  json list = json::array();
  double total = 0;
  for (const KernelTime& k : kernels) {
    list.push_back({{"kernel", k.kernel}, {"label", k.label}, {"median_ms", k.median_ms}});
    total += k.median_ms;
  }
  json j = {{"module", module}, {"threads", threads}, {"runs", runs}, {"total_ms", total}, {"kernels", list}};
  write_text(path, j.dump(1) + "\n", "--profile-json");
}

void write_text(const std::string& path, const std::string& text, const std::string& what) {
  std::ofstream out(path, std::ios::trunc);
  KILN_USER_CHECK(out) << what << ": cannot write '" << path << "': " << std::strerror(errno);
  out << text;
  out.close();
  KILN_USER_CHECK(out) << what << ": cannot write '" << path << "'";
}

}  // namespace kiln::cli
