// `kiln tune`'s progress on a terminal: one line redrawn in place (carriage return, erase to
// the end of the line) after each batch of measurements, cleared before each task's own line.
// Elsewhere (a pipe, a file, CI logs) kiln tune prints the task lines alone.
#pragma once

#include <cstdio>
#include <string>

#include "kiln/autotune/tuner.h"

namespace kiln::cli {

// Whether `stream` is a terminal that can redraw a line (not TERM=dumb).
bool is_interactive(std::FILE* stream);

// The bar for task `task` of `tasks` (1-based) named `label`:
// "[2/5] conv2d |##########----------| 16/32 trials, best 123.4 GFLOPS, about 12 s left".
std::string progress_bar(size_t task, size_t tasks, const std::string& label, const autotune::TuneProgress& p,
                         int width = 24);

}  // namespace kiln::cli
