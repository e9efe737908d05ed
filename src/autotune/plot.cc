// Tuning curves as SVG (see plot.h).
#include "kiln/autotune/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "kiln/support/error.h"

namespace kiln::autotune {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// A round axis maximum (1, 2 or 5 times a power of ten) at or above v.
double nice_ceiling(double v) {
  if (!(v > 0)) return 1;
  double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= v) return m * p;
  return 10 * p;
}

}  // namespace

std::string tuning_curves_svg(const std::vector<PlotSeries>& series, const std::string& title) {
  static const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                 "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  const double W = 760, H = 420, left = 60, right = 20, top = 40, bottom = 50;
  const double legend_h = 16.0 * static_cast<double>(series.size());
  const double plot_w = W - left - right, plot_h = H - top - bottom;
  size_t max_n = 1;
  double max_v = 0;
  for (const PlotSeries& s : series) {
    max_n = std::max(max_n, s.values.size());
    for (double v : s.values) max_v = std::isfinite(v) ? std::max(max_v, v) : max_v;
  }
  max_v = nice_ceiling(max_v);
  auto x = [&](size_t i) { return left + plot_w * (max_n <= 1 ? 0.0 : double(i) / double(max_n - 1)); };
  auto y = [&](double v) { return top + plot_h * (1 - v / max_v); };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"22\" font-size=\"15\">{3}</text>\n",
      W, H + legend_h, left, escape(title));
  // Axes, ticks and grid: five steps on each.
  for (int t = 0; t <= 5; ++t) {
    double v = max_v * t / 5, yy = y(v);
    svg += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", left, yy, W - right, yy);
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n", left - 6, yy + 4, v);
    size_t trial = static_cast<size_t>(std::lround(double(max_n - 1) * t / 5.0));
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x(trial), top + plot_h + 18,
                       trial + 1);
  }
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n", left, top,
                     plot_w, plot_h);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">trials</text>\n", left + plot_w / 2, H - 10);
  svg += fmt::format("<text transform=\"translate(16,{:.1f}) rotate(-90)\" text-anchor=\"middle\">best GFLOPS so far</text>\n",
                     top + plot_h / 2);
  for (size_t k = 0; k < series.size(); ++k) {
    const PlotSeries& s = series[k];
    const char* color = colors[k % (sizeof colors / sizeof *colors)];
    std::string pts;
    for (size_t i = 0; i < s.values.size(); ++i) {
      double v = std::isfinite(s.values[i]) ? s.values[i] : 0;
      pts += fmt::format("{}{:.1f},{:.1f}", pts.empty() ? "" : " ", x(i), y(v));
    }
    if (!pts.empty())
      svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", color, pts);
    const double ly = H + 16.0 * static_cast<double>(k) - 4;
    svg += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"3\"/>\n", left,
                       ly - 4, left + 20, ly - 4, color);
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\">{}</text>\n", left + 26, ly, escape(s.name));
  }
  return svg + "</svg>\n";
}

void write_tuning_curves_svg(const std::string& path, const std::vector<PlotSeries>& series, const std::string& title) {
  std::ofstream f(path);
  KILN_USER_CHECK(f) << "cannot write plot '" << path << "'";
  f << tuning_curves_svg(series, title);
  KILN_USER_CHECK(f.good()) << "writing plot '" << path << "' failed";
}

}  // namespace kiln::autotune
