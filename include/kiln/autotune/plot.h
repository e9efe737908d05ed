// The tuning curve as a picture: best-so-far GFLOPS against trials, one line per task, written
// as a self-contained SVG by hand (no plotting dependency).
#pragma once

#include <string>
#include <vector>

namespace kiln::autotune {

struct PlotSeries {
  std::string name;           // legend text (a task)
  std::vector<double> values; // best-so-far after trial 1, 2, ...
};

// The SVG text; an empty series list or all-empty series still give a valid (empty) chart.
std::string tuning_curves_svg(const std::vector<PlotSeries>& series, const std::string& title);
// Writes it to `path`; kiln::Error when the file cannot be written.
void write_tuning_curves_svg(const std::string& path, const std::vector<PlotSeries>& series, const std::string& title);

}  // namespace kiln::autotune
