#include "kiln/autotune/space_ops.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "kiln/support/error.h"

namespace kiln::autotune {

size_t uniform_index(std::mt19937_64& rng, size_t n) {
  KILN_CHECK(n >= 1) << "uniform_index over an empty range";
  // Rejection sampling keeps the draw exactly uniform and portable.
  const uint64_t range = static_cast<uint64_t>(n);
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % range;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return static_cast<size_t>(x % range);
}

double uniform_real(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

namespace {

void check_point(const ConfigSpace& space, const Point& p) {
  KILN_USER_CHECK(p.size() == space.knobs().size())
      << "config point has " << p.size() << " choices for " << space.knobs().size() << " knobs";
  for (size_t i = 0; i < p.size(); ++i) {
    KILN_USER_CHECK(p[i] < space.knobs()[i].candidates.size())
        << "knob '" << space.knobs()[i].name << "' has no candidate " << p[i];
  }
}

// Distance between two split candidates: how far the factors moved, in powers of two.
double split_distance(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    d += std::fabs(std::log2(static_cast<double>(a[i])) - std::log2(static_cast<double>(b[i])));
  }
  return d;
}

size_t neighbour(const Knob& k, size_t cur, std::mt19937_64& rng) {
  const size_t n = k.candidates.size();
  if (k.kind == Knob::Kind::Choice) {
    // Choice candidates are listed in the template's order (usually increasing): step one way.
    if (cur == 0) return 1;
    if (cur + 1 == n) return cur - 1;
    return uniform_index(rng, 2) ? cur + 1 : cur - 1;
  }
  // Split: the nearest other factorizations (moving one prime factor between two parts).
  double best = std::numeric_limits<double>::infinity();
  std::vector<size_t> nearest;
  for (size_t i = 0; i < n; ++i) {
    if (i == cur) continue;
    double d = split_distance(k.candidates[cur], k.candidates[i]);
    if (d < best - 1e-9) {
      best = d;
      nearest.assign(1, i);
    } else if (d < best + 1e-9) {
      nearest.push_back(i);
    }
  }
  return nearest[uniform_index(rng, nearest.size())];
}

}  // namespace

Point sample_point(const ConfigSpace& space, std::mt19937_64& rng) {
  Point p;
  p.reserve(space.knobs().size());
  for (const Knob& k : space.knobs()) {
    KILN_USER_CHECK(!k.candidates.empty()) << "knob '" << k.name << "' has no candidates";
    p.push_back(uniform_index(rng, k.candidates.size()));
  }
  return p;
}

Point mutate_point(const ConfigSpace& space, const Point& p, std::mt19937_64& rng, double p_neighbour) {
  check_point(space, p);
  std::vector<size_t> free;
  for (size_t i = 0; i < space.knobs().size(); ++i) {
    if (space.knobs()[i].candidates.size() > 1) free.push_back(i);
  }
  if (free.empty()) return p;
  const size_t ki = free[uniform_index(rng, free.size())];
  const Knob& k = space.knobs()[ki];
  Point out = p;
  if (uniform_real(rng) < p_neighbour) {
    out[ki] = neighbour(k, p[ki], rng);
  } else {
    // A uniformly random candidate other than the current one.
    size_t r = uniform_index(rng, k.candidates.size() - 1);
    out[ki] = r >= p[ki] ? r + 1 : r;
  }
  return out;
}

Point crossover(const ConfigSpace& space, const Point& a, const Point& b, std::mt19937_64& rng) {
  check_point(space, a);
  check_point(space, b);
  Point out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = uniform_index(rng, 2) ? b[i] : a[i];
  return out;
}

std::vector<Point> enumerate_space(const ConfigSpace& space, uint64_t limit) {
  const uint64_t n = space.size();
  KILN_USER_CHECK(n <= limit) << "config space of " << n << " points is too large to enumerate (limit " << limit << ")";
  std::vector<Point> out;
  out.reserve(n);
  for (uint64_t i = 0; i < n; ++i) out.push_back(space.decode(i));
  return out;
}

size_t point_distance(const Point& a, const Point& b) {
  KILN_CHECK(a.size() == b.size()) << "points of different spaces";
  size_t d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += a[i] != b[i];
  return d;
}

std::map<std::string, size_t> point_to_choices(const ConfigSpace& space, const Point& p) {
  check_point(space, p);
  std::map<std::string, size_t> out;
  for (size_t i = 0; i < p.size(); ++i) out[space.knobs()[i].name] = p[i];
  return out;
}

Config point_to_config(const ConfigSpace& space, const Point& p) { return Config::with_choices(point_to_choices(space, p)); }

Point choices_to_point(const ConfigSpace& space, const std::map<std::string, size_t>& choices) {
  for (const auto& [name, idx] : choices) {
    const Knob* k = space.find(name);
    KILN_USER_CHECK(k) << "config names knob '" << name << "', which the space does not have";
    KILN_USER_CHECK(idx < k->candidates.size())
        << "knob '" << name << "' has " << k->candidates.size() << " candidates; index " << idx << " is out of range";
  }
  Point p;
  for (const Knob& k : space.knobs()) {
    auto it = choices.find(k.name);
    p.push_back(it == choices.end() ? k.default_index : it->second);
  }
  return p;
}

std::string point_str(const ConfigSpace& space, const Point& p) {
  check_point(space, p);
  std::ostringstream os;
  for (size_t i = 0; i < p.size(); ++i) {
    const auto& v = space.knobs()[i].candidates[p[i]];
    os << (i ? " " : "") << space.knobs()[i].name << "=";
    if (space.knobs()[i].kind == Knob::Kind::Choice && v.size() == 1) {
      os << v[0];
    } else {
      os << "[";
      for (size_t j = 0; j < v.size(); ++j) os << (j ? "," : "") << v[j];
      os << "]";
    }
  }
  return os.str();
}

}  // namespace kiln::autotune
