#include "op_util.h"

#include "kiln/support/error.h"

namespace kiln::relay {

const TensorTypeNode& tensor_arg(const std::vector<Type>& args, size_t i, const char* role) {
  KILN_CHECK(i < args.size()) << "argument " << i << " (" << role << ") missing";
  const auto* t = args[i].as<TensorTypeNode>();
  KILN_USER_CHECK(t != nullptr) << role << " must be a tensor, got " << args[i].str();
  return *t;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const char* what) {
  KILN_USER_CHECK(axis >= -rank && axis < rank) << what << " " << axis << " is out of range for rank " << rank;
  return axis < 0 ? axis + rank : axis;
}

void check_axes(const std::vector<int64_t>& axes, int64_t rank, const char* what) {
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    KILN_USER_CHECK(a >= 0 && a < rank) << what << " " << shape_str(axes) << ": " << a << " is out of range for rank "
                                        << rank;
    KILN_USER_CHECK(!seen[a]) << what << " " << shape_str(axes) << " repeat axis " << a;
    seen[a] = true;
  }
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    KILN_USER_CHECK(da == db || da == 1 || db == 1)
        << "shapes " << shape_str(a) << " and " << shape_str(b) << " do not broadcast";
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void check_same_dtype(const TensorTypeNode& a, const TensorTypeNode& b, const char* what) {
  KILN_USER_CHECK(a.dtype == b.dtype) << what << " must have one data type, got " << a.dtype.str() << " and "
                                      << b.dtype.str();
}

void check_floating(const TensorTypeNode& t, const char* role) {
  KILN_USER_CHECK(t.dtype.is_floating()) << role << " must be floating-point, got " << t.dtype.str();
}

int64_t parse_layout(const std::string& s) {
  if (s == "NCHW") return 0;
  KILN_USER_CHECK(s.size() > 5 && s.compare(0, 4, "NCHW") == 0 && s.back() == 'c' &&
                  s.substr(4, s.size() - 5).find_first_not_of("0123456789") == std::string::npos)
      << "layout '" << s << "' is not NCHW or NCHW<x>c";
  int64_t b = std::stoll(s.substr(4, s.size() - 5));
  KILN_USER_CHECK(b >= 1) << "layout '" << s << "' has block 0";
  return b;
}

void check_count(const std::vector<int64_t>& v, size_t n, const char* what) {
  KILN_USER_CHECK(v.size() == n) << what << " " << shape_str(v) << " must have " << n << " entries";
}

}  // namespace kiln::relay
