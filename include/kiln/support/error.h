// Errors in kiln come in two kinds (docs/architecture.md, "Errors"):
//  - kiln::Error: bad user input (a shape mismatch, an unknown axis, a malformed model).
//    It carries enough context to name the culprit; the CLI and C API turn it into a message.
//    kiln::UnsupportedError, a kind of Error, is valid input using something kiln does not
//    implement (an ONNX operator, an element type): tools report it with a distinct status.
//  - kiln::InternalError: a compiler bug, raised by KILN_CHECK with file:line.
// Library code never aborts; both are exceptions.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class UnsupportedError : public Error {
 public:
  using Error::Error;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {
// Collects a streamed message and throws when the full expression ends.
class ThrowOnDestroy {
 public:
  ThrowOnDestroy(const char* file, int line, const char* cond, bool internal)
      : internal_(internal) {
    if (internal_) os_ << "internal error at " << file << ":" << line << ": check failed: " << cond;
  }
  ThrowOnDestroy(const ThrowOnDestroy&) = delete;
  ~ThrowOnDestroy() noexcept(false) {
    if (internal_) throw InternalError(os_.str());
    throw Error(os_.str());
  }
  std::ostream& stream() {
    if (internal_) os_ << ": ";
    return os_;
  }

 private:
  std::ostringstream os_;
  bool internal_;
};
}  // namespace detail

}  // namespace kiln

// Internal invariant: a failure is a kiln bug. Usage: KILN_CHECK(a == b) << "why";
#define KILN_CHECK(cond) \
  if (cond) {            \
  } else                 \
    ::kiln::detail::ThrowOnDestroy(__FILE__, __LINE__, #cond, true).stream()

// User-facing check: a failure is the user's input. Usage: KILN_USER_CHECK(ok) << "what was wrong";
#define KILN_USER_CHECK(cond) \
  if (cond) {                 \
  } else                      \
    ::kiln::detail::ThrowOnDestroy(__FILE__, __LINE__, #cond, false).stream()

#define KILN_THROW() ::kiln::detail::ThrowOnDestroy(__FILE__, __LINE__, "", false).stream()

namespace kiln::detail {
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
}  // namespace kiln::detail

// Valid input kiln does not implement. Usage: KILN_SUPPORTED(attr == 0) << "antialias=1 is not supported";
#define KILN_SUPPORTED(cond) \
  if (cond) {                \
  } else                     \
    ::kiln::detail::ThrowUnsupported().stream()
