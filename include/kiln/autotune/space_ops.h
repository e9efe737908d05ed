// Operations on a ConfigSpace that search needs: points, random sampling, mutation, enumeration,
// crossover and distance. A point is one candidate index per knob, in the space's knob order; it
// is the tuner's identity of a configuration (the mixed-radix index of ConfigSpace::encode
// saturates on large spaces, a point never does).
//
// Every random operation draws from the caller's std::mt19937_64 through the helpers below (not
// std::uniform_*_distribution, whose algorithms differ between standard libraries), so a seed
// gives the same points everywhere.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kiln/schedule/config.h"

namespace kiln::autotune {

using schedule::Config;
using schedule::ConfigSpace;
using schedule::Knob;

using Point = std::vector<size_t>;

// Uniform integer in [0, n) (n >= 1) and uniform double in [0, 1).
size_t uniform_index(std::mt19937_64& rng, size_t n);
double uniform_real(std::mt19937_64& rng);

// A uniformly random point.
Point sample_point(const ConfigSpace& space, std::mt19937_64& rng);

// Changes one knob (chosen uniformly among knobs with more than one candidate): with probability
// p_neighbour to a neighbouring candidate (Choice: the adjacent index; Split: a factorization
// nearest in log-factor distance), else to a uniformly random other candidate. Returns p itself
// when no knob has a choice.
Point mutate_point(const ConfigSpace& space, const Point& p, std::mt19937_64& rng, double p_neighbour = 0.5);

// Each knob taken from a or b with equal probability.
Point crossover(const ConfigSpace& space, const Point& a, const Point& b, std::mt19937_64& rng);

// Every point, in index order. Throws kiln::Error when the space has more than `limit` points.
std::vector<Point> enumerate_space(const ConfigSpace& space, uint64_t limit = 1u << 20);

// Number of knobs on which a and b differ.
size_t point_distance(const Point& a, const Point& b);

// The Config that answers p, and back: the point of a knob-name -> candidate-index map (knobs
// missing from the map take their default). Both throw kiln::Error naming a bad knob or index.
Config point_to_config(const ConfigSpace& space, const Point& p);
std::map<std::string, size_t> point_to_choices(const ConfigSpace& space, const Point& p);
Point choices_to_point(const ConfigSpace& space, const std::map<std::string, size_t>& choices);

// "tile_i=[8,4,32] unroll=1": readable, deterministic.
std::string point_str(const ConfigSpace& space, const Point& p);

}  // namespace kiln::autotune
