// Attrs: the typed attributes of a graph IR call (strides=[2,2], mode="constant", ...).
//
// Keys are kept sorted, so printing, equality and hashing do not depend on the order a pass
// added them. Accessors throw kiln::Error naming the attribute and, once the attrs belong to a
// call, the op and its node ("nn.conv2d (node 'Conv_0'): attribute 'strides' is missing").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "kiln/relay/host_tensor.h"

namespace kiln::relay {

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, HostTensor>;

class Attrs {
 public:
  Attrs() = default;

  Attrs& set_int(const std::string& key, int64_t v);
  Attrs& set_float(const std::string& key, double v);
  Attrs& set_str(const std::string& key, std::string v);
  Attrs& set_ints(const std::string& key, std::vector<int64_t> v);
  Attrs& set_floats(const std::string& key, std::vector<double> v);
  Attrs& set_tensor(const std::string& key, HostTensor v);

  bool has(const std::string& key) const { return values_.count(key) != 0; }
  bool empty() const { return values_.empty(); }
  const std::map<std::string, AttrValue>& values() const { return values_; }

  // Required attributes: throw kiln::Error when missing or of another kind.
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;  // an int attribute converts
  const std::string& get_str(const std::string& key) const;
  const std::vector<int64_t>& get_ints(const std::string& key) const;
  std::vector<double> get_floats(const std::string& key) const;  // an int list converts
  const HostTensor& get_tensor(const std::string& key) const;
  // Optional ones: the default when missing, an error when present with another kind.
  int64_t get_int(const std::string& key, int64_t dflt) const;
  double get_float(const std::string& key, double dflt) const;
  std::string get_str(const std::string& key, const std::string& dflt) const;
  std::vector<int64_t> get_ints(const std::string& key, const std::vector<int64_t>& dflt) const;

  // Who owns these attrs, for error messages ("nn.conv2d (node 'Conv_0')"); not compared.
  const std::string& context() const { return context_; }
  Attrs with_context(std::string context) const;

  bool operator==(const Attrs& o) const;
  bool operator!=(const Attrs& o) const { return !(*this == o); }
  size_t hash() const;
  // "groups=1, strides=[2,2], mode=\"constant\"" in key order; tensors print their type.
  std::string str() const;

 private:
  const AttrValue& lookup(const std::string& key) const;
  [[noreturn]] void wrong_kind(const std::string& key, const char* wanted) const;
  std::map<std::string, AttrValue> values_;
  std::string context_;
};

// Text of one value as the printer shows it: 3, 0.5, "same", [1,2], tensor float32[64].
std::string attr_value_str(const AttrValue& v);

}  // namespace kiln::relay
