// UnsupportedError: valid input that uses something kiln does not implement (an ONNX operator,
// an element type, a training-only mode). It is a kiln::Error, a message for the user, with its
// own type so that tools can tell "unsupported" apart from "wrong" (kiln check's exit status).
#pragma once

#include <sstream>

#include "kiln/support/error.h"

namespace kiln::relay {

class UnsupportedError : public Error {
 public:
  using Error::Error;
};

namespace detail {
// Collects a streamed message and throws UnsupportedError when the full expression ends.
class ThrowUnsupported {
 public:
  ThrowUnsupported() = default;
  ThrowUnsupported(const ThrowUnsupported&) = delete;
  ~ThrowUnsupported() noexcept(false) { throw UnsupportedError(os_.str()); }
  std::ostream& stream() { return os_; }

 private:
  std::ostringstream os_;
};
}  // namespace detail

}  // namespace kiln::relay

// Usage: KILN_SUPPORTED(attr == 0) << "antialias=1 is not supported";
#define KILN_SUPPORTED(cond) \
  if (cond) {                \
  } else                     \
    ::kiln::relay::detail::ThrowUnsupported().stream()
