#include "kiln/schedule/config.h"

#include <functional>
#include <limits>
#include <sstream>

#include "kiln/support/error.h"

namespace kiln::schedule {

std::vector<std::vector<int64_t>> factorizations(int64_t n, int parts, int64_t max_inner) {
  KILN_USER_CHECK(n >= 1 && parts >= 1) << "cannot split extent " << n << " into " << parts << " parts";
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t> cur;
  // Recursive enumeration from the outermost factor inwards; the last factor takes the rest.
  std::function<void(int64_t)> rec = [&](int64_t rest) {
    if (static_cast<int>(cur.size()) == parts - 1) {
      if (max_inner > 0 && rest > max_inner) return;
      cur.push_back(rest);
      out.push_back(cur);
      cur.pop_back();
      return;
    }
    for (int64_t f = 1; f <= rest; ++f) {
      if (rest % f) continue;
      cur.push_back(f);
      rec(rest / f);
      cur.pop_back();
    }
  };
  rec(n);
  return out;
}

const Knob* ConfigSpace::find(const std::string& name) const {
  for (const Knob& k : knobs_) if (k.name == name) return &k;
  return nullptr;
}

uint64_t ConfigSpace::size() const {
  uint64_t n = 1;
  for (const Knob& k : knobs_) {
    uint64_t c = k.candidates.size();
    if (c && n > std::numeric_limits<uint64_t>::max() / c) return std::numeric_limits<uint64_t>::max();
    n *= c;
  }
  return n;
}

std::vector<size_t> ConfigSpace::decode(uint64_t index) const {
  KILN_USER_CHECK(index < size()) << "config index " << index << " is outside the space of " << size();
  std::vector<size_t> out;
  for (const Knob& k : knobs_) {
    out.push_back(index % k.candidates.size());
    index /= k.candidates.size();
  }
  return out;
}

uint64_t ConfigSpace::encode(const std::vector<size_t>& choice) const {
  KILN_USER_CHECK(choice.size() == knobs_.size()) << "config has " << choice.size() << " choices for "
                                                  << knobs_.size() << " knobs";
  uint64_t index = 0, radix = 1;
  for (size_t i = 0; i < knobs_.size(); ++i) {
    KILN_USER_CHECK(choice[i] < knobs_[i].candidates.size()) << "knob '" << knobs_[i].name << "' has no candidate " << choice[i];
    index += choice[i] * radix;
    radix *= knobs_[i].candidates.size();
  }
  return index;
}

void ConfigSpace::add(Knob k) {
  if (const Knob* old = find(k.name)) {
    KILN_CHECK(old->candidates == k.candidates) << "knob '" << k.name << "' defined twice with different candidates";
    return;
  }
  knobs_.push_back(std::move(k));
}

Config Config::with_choices(std::map<std::string, size_t> choices) {
  Config c;
  c.choices_ = std::move(choices);
  return c;
}

Config Config::from_index(const ConfigSpace& space, uint64_t index) {
  std::vector<size_t> idx = space.decode(index);
  std::map<std::string, size_t> choices;
  for (size_t i = 0; i < idx.size(); ++i) choices[space.knobs()[i].name] = idx[i];
  return with_choices(std::move(choices));
}

size_t Config::pick(const Knob& k) {
  if (record_) record_->add(k);
  auto it = choices_.find(k.name);
  size_t i = it == choices_.end() ? k.default_index : it->second;
  KILN_USER_CHECK(i < k.candidates.size()) << "knob '" << k.name << "' has " << k.candidates.size()
                                           << " candidates; index " << i << " is out of range";
  answers_[k.name] = k.candidates[i];
  return i;
}

std::vector<int64_t> Config::define_split(const std::string& name, int64_t extent, int parts,
                                          const std::vector<int64_t>& preferred, int64_t max_inner,
                                          const std::vector<int64_t>& overhanging) {
  Knob k{name, Knob::Kind::Split, factorizations(extent, parts, max_inner), 0};
  KILN_CHECK(overhanging.empty() || parts == 2) << "split knob '" << name << "': overhanging factors need 2 parts";
  for (int64_t f : overhanging) {
    if (f > 1 && extent % f != 0 && (max_inner <= 0 || f <= max_inner)) k.candidates.push_back({(extent + f - 1) / f, f});
  }
  KILN_USER_CHECK(!k.candidates.empty()) << "split knob '" << name << "' has no candidate for extent " << extent;
  for (size_t i = 0; i < k.candidates.size(); ++i) {
    if (k.candidates[i] == preferred) k.default_index = i;
  }
  return k.candidates[pick(k)];
}

int64_t Config::define_knob(const std::string& name, const std::vector<int64_t>& candidates, int64_t preferred) {
  Knob k{name, Knob::Kind::Choice, {}, 0};
  bool found = false;
  for (size_t i = 0; i < candidates.size(); ++i) {
    k.candidates.push_back({candidates[i]});
    if (candidates[i] == preferred) { k.default_index = i; found = true; }
  }
  KILN_CHECK(found) << "knob '" << name << "': preferred value " << preferred << " is not a candidate";
  return k.candidates[pick(k)][0];
}

std::string Config::str() const {
  std::ostringstream os;
  bool first = true;
  for (const auto& [name, v] : answers_) {
    if (!first) os << " ";
    first = false;
    os << name << "=";
    if (v.size() == 1) {
      os << v[0];
    } else {
      os << "[";
      for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
      os << "]";
    }
  }
  return os.str();
}

}  // namespace kiln::schedule
