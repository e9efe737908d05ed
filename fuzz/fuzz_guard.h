// What a fuzz target accepts as the outcome of one input: success, or a kiln::Error (a user
// error, UnsupportedError included: the input was rejected with a message). Anything else is a
// finding, and aborts so that libFuzzer saves the input: an InternalError (a kiln bug by
// definition), and any other exception (std::bad_alloc, std::out_of_range, ...: a malformed file
// must be an error naming its culprit, not whatever the standard library throws).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "kiln/support/error.h"

namespace kiln::fuzz {

template <class Body>
int guarded(Body body) {
  try {
    body();
  } catch (const Error&) {
    // Rejected with a message: the behaviour wanted for malformed input.
  } catch (const InternalError& e) {
    std::fprintf(stderr, "fuzz: internal error (a kiln bug): %s\n", e.what());
    std::abort();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: an exception that is not a kiln::Error: %s\n", e.what());
    std::abort();
  }
  return 0;
}

}  // namespace kiln::fuzz
