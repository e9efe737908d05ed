// .npy reading and writing (npy.h). The header is a Python dict literal; NumPy writes exactly
// three keys, so a small scanner for them is enough (no general Python literal parser).
#include "npy.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace kiln::npy {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "npy: the data is read in place as little-endian");

const char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw Error("'" + path + "': " + why);
}

struct TypeName {
  const char* descr;  // without the byte-order character
  DLDataType dtype;
  const char* name;
};
const TypeName kTypes[] = {
    {"f4", {kDLFloat, 32, 1}, "float32"}, {"f8", {kDLFloat, 64, 1}, "float64"}, {"f2", {kDLFloat, 16, 1}, "float16"},
    {"i1", {kDLInt, 8, 1}, "int8"},       {"i2", {kDLInt, 16, 1}, "int16"},     {"i4", {kDLInt, 32, 1}, "int32"},
    {"i8", {kDLInt, 64, 1}, "int64"},     {"u1", {kDLUInt, 8, 1}, "uint8"},     {"u2", {kDLUInt, 16, 1}, "uint16"},
    {"u4", {kDLUInt, 32, 1}, "uint32"},   {"u8", {kDLUInt, 64, 1}, "uint64"},   {"b1", {kDLUInt, 1, 1}, "bool"},
};

bool same(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }

// The value after `'key':` in the header dict, up to the next top-level ',' or '}'; "" if absent.
std::string dict_value(const std::string& header, const std::string& key) {
  for (char q : {'\'', '"'}) {
    std::string k = std::string(1, q) + key + q;
    size_t pos = header.find(k);
    if (pos == std::string::npos) continue;
    pos = header.find(':', pos + k.size());
    if (pos == std::string::npos) return "";
    ++pos;
    while (pos < header.size() && header[pos] == ' ') ++pos;
    int depth = 0;
    size_t end = pos;
    for (; end < header.size(); ++end) {
      char c = header[end];
      if (c == '(' || c == '[') ++depth;
      else if (c == ')' || c == ']') --depth;
      else if ((c == ',' || c == '}') && depth == 0) break;
    }
    std::string v = header.substr(pos, end - pos);
    while (!v.empty() && v.back() == ' ') v.pop_back();
    return v;
  }
  return "";
}

DLDataType parse_descr(const std::string& path, const std::string& quoted) {
  if (quoted.size() < 2 || (quoted[0] != '\'' && quoted[0] != '"') || quoted.back() != quoted[0])
    fail(path, "unsupported dtype " + quoted + " (kiln reads plain numeric and bool arrays, not structured ones)");
  std::string d = quoted.substr(1, quoted.size() - 2);
  char order = d.empty() ? '?' : d[0];
  std::string body = (order == '<' || order == '>' || order == '|' || order == '=') ? d.substr(1) : d;
  for (const TypeName& t : kTypes) {
    if (body != t.descr) continue;
    if (order == '>' && Array::element_bytes(t.dtype) > 1)
      fail(path, "dtype '" + d + "' is big-endian; kiln reads little-endian arrays (numpy: a.astype('<" + body + "'))");
    return t.dtype;
  }
  fail(path, "unsupported dtype '" + d + "' (kiln reads float16/32/64, int8-64, uint8-64 and bool)");
}

std::vector<int64_t> parse_shape(const std::string& path, const std::string& v) {
  if (v.size() < 2 || v.front() != '(' || v.back() != ')') fail(path, "malformed shape '" + v + "' in the header");
  std::vector<int64_t> shape;
  std::string inner = v.substr(1, v.size() - 2);
  std::istringstream is(inner);
  std::string item;
  while (std::getline(is, item, ',')) {
    size_t b = item.find_first_not_of(' '), e = item.find_last_not_of(' ');
    if (b == std::string::npos) continue;  // the trailing comma of "(5,)"
    item = item.substr(b, e - b + 1);
    if (!item.empty() && item.back() == 'L') item.pop_back();  // Python 2's long literals
    char* end = nullptr;
    errno = 0;
    long long d = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno != 0 || d < 0) fail(path, "malformed shape '" + v + "' in the header");
    shape.push_back(d);
  }
  return shape;
}

}  // namespace

size_t Array::element_bytes(DLDataType t) { return t.bits == 1 ? 1 : static_cast<size_t>(t.bits / 8) * t.lanes; }

int64_t Array::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string descr_of(DLDataType t) {
  for (const TypeName& n : kTypes)
    if (same(n.dtype, t)) return std::string(Array::element_bytes(t) == 1 ? "|" : "<") + n.descr;
  return "";
}

std::string dtype_name(DLDataType t) {
  for (const TypeName& n : kTypes)
    if (same(n.dtype, t)) return n.name;
  if (t.code == kDLBfloat && t.bits == 16) return t.lanes == 1 ? "bfloat16" : "bfloat16x" + std::to_string(t.lanes);
  return "type(code " + std::to_string(t.code) + ", " + std::to_string(t.bits) + " bits, " +
         std::to_string(t.lanes) + " lanes)";
}

Array read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse(bytes, path);
}

Array parse(const std::string& bytes, const std::string& path) {
  if (bytes.size() < kMagicLen + 4 || bytes.compare(0, kMagicLen, kMagic, kMagicLen) != 0)
    fail(path, "not a NumPy .npy file (no \\x93NUMPY magic)");
  int major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8;
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail(path, "truncated header");
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    header_at = 12;
  } else {
    fail(path, "unsupported .npy format version " + std::to_string(major) + " (kiln reads 1.0 to 3.0)");
  }
  if (bytes.size() < header_at + header_len) fail(path, "truncated header");
  std::string header = bytes.substr(header_at, header_len);

  Array a;
  std::string descr = dict_value(header, "descr"), fortran = dict_value(header, "fortran_order"),
              shape = dict_value(header, "shape");
  if (descr.empty() || fortran.empty() || shape.empty())
    fail(path, "malformed header (needs 'descr', 'fortran_order' and 'shape'): " + header);
  a.dtype = parse_descr(path, descr);
  if (fortran != "False")
    fail(path, "the array is in Fortran order; kiln reads C-order arrays (numpy: np.ascontiguousarray(a))");
  a.shape = parse_shape(path, shape);
  // The bytes the shape needs, without overflow (dims of a hostile header multiply past int64,
  // and a wrapped count could even match the file): Array::num_elements() is then safe to call.
  size_t want = Array::element_bytes(a.dtype);
  for (int64_t d : a.shape)
    if (__builtin_mul_overflow(want, static_cast<size_t>(d), &want) || want > size_t{INT64_MAX})
      fail(path, "the header's shape " + shape + " is too large: its byte count overflows");
  size_t have = bytes.size() - header_at - header_len;
  if (have != want)
    fail(path, "the header's shape " + shape + " of " + dtype_name(a.dtype) + " needs " + std::to_string(want) +
                   " bytes of data, the file has " + std::to_string(have));
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header_at + header_len), bytes.end());
  return a;
}

void write(const std::string& path, const Array& a) {
  std::string descr = descr_of(a.dtype);
  if (descr.empty()) fail(path, "NumPy has no dtype for " + dtype_name(a.dtype) + ", so it cannot be written as .npy");
  size_t want = static_cast<size_t>(a.num_elements()) * Array::element_bytes(a.dtype);
  if (a.data.size() != want)
    throw std::logic_error("npy::write: " + std::to_string(a.data.size()) + " bytes for " + std::to_string(want));
  std::string shape = "(";
  for (size_t i = 0; i < a.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(a.shape[i]);
  shape += a.shape.size() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic, version and length take 10 bytes; the header ends with '\n' and pads the data's
  // start to a multiple of 64, as NumPy does.
  size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header += '\n';
  std::string head(kMagic, kMagicLen);
  head += '\x01';
  head += '\x00';
  head += static_cast<char>(header.size() & 0xff);
  head += static_cast<char>(header.size() >> 8);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, std::string("cannot write: ") + std::strerror(errno));
  out << head << header;
  out.write(reinterpret_cast<const char*>(a.data.data()), static_cast<std::streamsize>(a.data.size()));
  out.close();
  if (!out) fail(path, std::string("cannot write: ") + std::strerror(errno));
}

}  // namespace kiln::npy
