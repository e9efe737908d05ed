// Named knobs of schedule templates, and the space they span.
//
// A schedule template is one function that both declares its knobs and reads them:
//
//   void schedule_dense(Schedule& s, Config& cfg, ...) {
//     auto ti = cfg.define_split("tile_i", M, 3, /*preferred=*/{8, 4, 32});
//     int64_t unroll = cfg.define_knob("unroll_k", {0, 1}, 1);
//     ...
//   }
//
// Run with a recording Config once and the ConfigSpace it filled is the template's search space
// (the autotuner enumerates, samples and mutates it); run with a Config holding chosen indices
// and the template builds that schedule. A knob not chosen takes its default, so a template
// always builds a good default schedule.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::schedule {

struct Knob {
  enum class Kind { Split, Choice };
  std::string name;
  Kind kind = Kind::Choice;
  // Split: each candidate lists the factors, outermost first, whose product is the extent (or,
  // for an overhanging candidate, the smallest product over it: define_split).
  // Choice: each candidate holds a single value.
  std::vector<std::vector<int64_t>> candidates;
  size_t default_index = 0;
};

class ConfigSpace {
 public:
  const std::vector<Knob>& knobs() const { return knobs_; }
  const Knob* find(const std::string& name) const;
  // Number of points (product of candidate counts), saturating at UINT64_MAX.
  uint64_t size() const;
  // Mixed-radix index <-> one candidate index per knob (in knob order).
  std::vector<size_t> decode(uint64_t index) const;
  uint64_t encode(const std::vector<size_t>& choice) const;
  // Records a knob; a second definition with the same name must be identical.
  void add(Knob k);

 private:
  std::vector<Knob> knobs_;
};

class Config {
 public:
  // A config that records every knob it sees into `record` (may be null) and answers defaults.
  explicit Config(ConfigSpace* record = nullptr) : record_(record) {}
  // A config that answers the given candidate index per knob name (others: defaults).
  static Config with_choices(std::map<std::string, size_t> choices);
  // The point `index` of `space`.
  static Config from_index(const ConfigSpace& space, uint64_t index);

  // Splits `extent` into `parts` factors (outermost first) with product `extent`. Candidates are
  // every ordered factorization whose innermost factor is <= max_inner (0: no limit); the default
  // is `preferred` when it is a candidate, else the first candidate. Returns the chosen factors.
  // `overhanging` adds two-part candidates [ceil(extent / f), f] for inner factors f that do
  // not divide the extent (parts must be 2): the last outer iteration overhangs, and the loop
  // nest guards it (a tile shape worth some wasted work, e.g. a vectorizable width).
  std::vector<int64_t> define_split(const std::string& name, int64_t extent, int parts,
                                    const std::vector<int64_t>& preferred = {}, int64_t max_inner = 0,
                                    const std::vector<int64_t>& overhanging = {});
  // One of `candidates`; the default is `preferred` (which must be among them).
  int64_t define_knob(const std::string& name, const std::vector<int64_t>& candidates, int64_t preferred);

  // What was answered, by knob name: e.g. "tile_i=[8,4,32] unroll_k=1". Deterministic.
  std::string str() const;
  const std::map<std::string, std::vector<int64_t>>& answers() const { return answers_; }

 private:
  size_t pick(const Knob& k);

  ConfigSpace* record_ = nullptr;
  std::map<std::string, size_t> choices_;
  std::map<std::string, std::vector<int64_t>> answers_;
};

// Every ordered factorization of n into `parts` positive factors, innermost <= max_inner (0: any).
std::vector<std::vector<int64_t>> factorizations(int64_t n, int parts, int64_t max_inner = 0);

}  // namespace kiln::schedule
