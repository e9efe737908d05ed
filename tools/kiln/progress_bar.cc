#include "progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace kiln::cli {

bool is_interactive(std::FILE* stream) {
  const char* term = std::getenv("TERM");
  return isatty(fileno(stream)) && !(term && std::strcmp(term, "dumb") == 0);
}

std::string progress_bar(size_t task, size_t tasks, const std::string& label, const autotune::TuneProgress& p,
                         int width) {
  const int total = std::max(1, p.trials_total);
  const int filled = std::clamp(p.trials_done * width / total, 0, width);
  return fmt::format("[{}/{}] {} |{}{}| {}/{} trials, best {:.1f} GFLOPS, about {:.0f} s left", task, tasks, label,
                     std::string(static_cast<size_t>(filled), '#'), std::string(static_cast<size_t>(width - filled), '-'),
                     p.trials_done, p.trials_total, p.best_gflops, p.eta_s);
}

}  // namespace kiln::cli
