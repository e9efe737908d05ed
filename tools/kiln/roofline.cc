#include "roofline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kiln::cli {

RooflinePoint roofline_point(const RooflineKernel& k, const Ceilings& c) {
  RooflinePoint p;
  p.intensity = k.bytes > 0 ? k.flops / k.bytes : 0;
  p.gflops = k.seconds > 0 ? k.flops / k.seconds * 1e-9 : 0;
  p.gbs = k.seconds > 0 ? k.bytes / k.seconds * 1e-9 : 0;
  p.level = &c.level_for(k.bytes);
  const double bandwidth_roof = p.intensity * p.level->gbs;
  p.memory_bound = bandwidth_roof < c.peak_gflops;
  p.roof_gflops = std::min(c.peak_gflops, bandwidth_roof);
  return p;
}

std::string roofline_table(const std::vector<RooflineKernel>& kernels, const Ceilings& c) {
  std::string s = fmt::format("ceilings on {} thread{} (measured): FMA peak {:.1f} GFLOPS ({}-bit fp32); bandwidth",
                              c.threads, c.threads == 1 ? "" : "s", c.peak_gflops, c.vector_bits);
  for (const MemoryCeiling& m : c.memory) s += fmt::format(" {} {:.1f} GB/s", m.name, m.gbs);
  s += " (stream triad)\nbytes: each argument read or written once (the minimum traffic); roof: min(peak, intensity x "
       "bandwidth of the fastest level holding the bytes:";
  for (const MemoryCeiling& m : c.memory)
    if (m.name != "DRAM") s += fmt::format(" {} {:.2f} MiB", m.name, m.bytes / (1 << 20));
  s += ")\n";
  s += fmt::format("{:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>7} {:>7} {:>5}  {}\n", "#", "ms", "MFLOP", "MB",
                   "intensity", "GFLOPS", "roof", "GB/s", "share", "bound", "level", "kernel");
  int memory = 0, above = 0;
  double memory_s = 0, total_s = 0, lost_s = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const RooflineKernel& k = kernels[i];
    RooflinePoint p = roofline_point(k, c);
    const char* bound = k.flops == 0 ? "data" : p.memory_bound ? "memory" : "compute";
    s += fmt::format("{:>4} {:>9.4f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.2f} {:>9.2f} {:>6.1f} {:>7.3f} {:>7} {:>5}  {} ({})\n", i,
                     k.seconds * 1e3, k.flops * 1e-6, k.bytes * 1e-6, p.intensity, p.gflops, p.roof_gflops, p.gbs,
                     p.share(), bound, p.level->name, k.label, k.kernel);
    total_s += k.seconds;
    if (p.memory_bound) ++memory, memory_s += k.seconds;
    if (p.share() > 1) ++above;
    // Time it would save at its roof: what a kernel leaves on the table.
    if (p.share() < 1) lost_s += k.seconds * (1 - p.share());
  }
  s += "data: no FLOPs; its share is of its level's bandwidth\n";
  s += fmt::format("{} of {} kernels memory-bound ({:.0f}% of kernel time); at their roofs the kernels would take "
                   "{:.3f} ms instead of {:.3f} ms\n",
                   memory, kernels.size(), total_s > 0 ? 100 * memory_s / total_s : 0, (total_s - lost_s) * 1e3,
                   total_s * 1e3);
  if (above)
    s += fmt::format("{} kernel{} above the roof (share > 1): its bytes overcount what it reads (a gather or a slice "
                     "reads part of an argument), its data was left in a faster level by the kernel before, or the "
                     "machine was busier while the ceilings were measured\n",
                     above, above == 1 ? "" : "s");
  return s;
}

namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '<') out += "&lt;";
    else if (ch == '>') out += "&gt;";
    else if (ch == '&') out += "&amp;";
    else if (ch == '"') out += "&quot;";
    else out += ch;
  }
  return out;
}

}  // namespace

std::string roofline_svg(const std::vector<RooflineKernel>& kernels, const Ceilings& c, const std::string& title) {
  constexpr double W = 900, H = 600, L = 70, R = 30, T = 40, B = 60;  // size and margins
  // Axis ranges in decades around every point and the ridge points.
  double xmin = c.peak_gflops / c.memory.front().gbs, xmax = c.peak_gflops / c.memory.back().gbs;
  double ymin = c.peak_gflops, ymax = c.peak_gflops;
  std::vector<RooflinePoint> points;
  for (const RooflineKernel& k : kernels) {
    points.push_back(roofline_point(k, c));
    if (!points.back().drawable()) continue;
    xmin = std::min(xmin, points.back().intensity), xmax = std::max(xmax, points.back().intensity);
    ymin = std::min(ymin, points.back().gflops), ymax = std::max(ymax, points.back().gflops);
  }
  xmin = std::pow(10, std::floor(std::log10(xmin))), xmax = std::pow(10, std::ceil(std::log10(xmax)));
  ymin = std::pow(10, std::floor(std::log10(ymin))), ymax = std::pow(10, std::ceil(std::log10(ymax * 1.01)));
  auto X = [&](double v) { return L + (W - L - R) * std::log10(v / xmin) / std::log10(xmax / xmin); };
  auto Y = [&](double v) { return H - B - (H - T - B) * std::log10(v / ymin) / std::log10(ymax / ymin); };

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"22\" font-size=\"14\">{}</text>\n",
      W, H, L, xml_escape(title));
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n", L, T,
                   W - L - R, H - T - B);
  for (double v = xmin; v <= xmax * 1.001; v *= 10)
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:g}</text>\n", X(v), H - B + 16, v);
  for (double v = ymin; v <= ymax * 1.001; v *= 10)
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n", L - 6, Y(v) + 4, v);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">intensity (FLOP/byte)</text>\n", (L + W - R) / 2,
                   H - 20);
  s += fmt::format("<text transform=\"translate(18,{}) rotate(-90)\" text-anchor=\"middle\">GFLOPS</text>\n",
                   (T + H - B) / 2);
  // A roof: bandwidth x intensity up to its ridge, then the peak.
  auto roof = [&](double gbs, const char* colour, const std::string& name) {
    const double ridge = c.peak_gflops / gbs, x0 = std::max(xmin, ymin / gbs);
    s += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\"/>\n",
        colour, X(x0), Y(x0 * gbs), X(ridge), Y(c.peak_gflops), X(xmax), Y(c.peak_gflops));
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\">{}</text>\n", X(x0) + 4, Y(x0 * gbs) - 6, colour,
                     xml_escape(name));
  };
  const char* colours[] = {"#27ae60", "#2471a3", "#8e44ad", "#c0392b"};  // L1, L2, L3, DRAM
  auto colour_of = [&](const MemoryCeiling* m) { return colours[std::min<size_t>(m - c.memory.data(), 3)]; };
  for (const MemoryCeiling& m : c.memory) roof(m.gbs, colour_of(&m), fmt::format("{} {:.1f} GB/s", m.name, m.gbs));
  s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">peak {:.1f} GFLOPS, {} thread{}</text>\n",
                   W - R - 4, Y(c.peak_gflops) - 6, c.peak_gflops, c.threads, c.threads == 1 ? "" : "s");
  int undrawn = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const RooflinePoint& p = points[i];
    if (!p.drawable()) {
      ++undrawn;
      continue;
    }
    s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"><title>{}</title></circle>\n",
                     X(p.intensity), Y(p.gflops), colour_of(p.level),
                     xml_escape(kernels[i].kernel));
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"9\">{} {}</text>\n", X(p.intensity) + 6,
                     Y(p.gflops) + 3, i, xml_escape(kernels[i].label));
  }
  if (undrawn)
    s += fmt::format("<text x=\"{}\" y=\"{}\">{} kernel{} without FLOPs (data movement) not drawn</text>\n", L + 6,
                     T + 16, undrawn, undrawn == 1 ? "" : "s");
  return s + "</svg>\n";
}

}  // namespace kiln::cli
