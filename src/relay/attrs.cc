#include "kiln/relay/attrs.h"

#include <fmt/format.h>

#include "kiln/support/error.h"

namespace kiln::relay {

namespace {
const char* kind_of(const AttrValue& v) {
  switch (v.index()) {
    case 0: return "an int";
    case 1: return "a float";
    case 2: return "a string";
    case 3: return "an int list";
    case 4: return "a float list";
    default: return "a tensor";
  }
}

std::string float_str(double v) {
  // ONNX float attributes arrive as float32: print the shortest text that round-trips the float
  // (1e-05, not 9.999999747378752e-06).
  float f = static_cast<float>(v);
  std::string s = static_cast<double>(f) == v ? fmt::format("{}", f) : fmt::format("{}", v);
  // Keep floats recognisable next to ints: 1 -> 1.0 (but not 1e-05 or inf).
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}
}  // namespace

std::string attr_value_str(const AttrValue& v) {
  switch (v.index()) {
    case 0: return std::to_string(std::get<int64_t>(v));
    case 1: return float_str(std::get<double>(v));
    case 2: return "\"" + std::get<std::string>(v) + "\"";
    case 3: {
      std::string s = "[";
      for (auto x : std::get<std::vector<int64_t>>(v)) s += (s.size() > 1 ? "," : "") + std::to_string(x);
      return s + "]";
    }
    case 4: {
      std::string s = "[";
      for (auto x : std::get<std::vector<double>>(v)) s += (s.size() > 1 ? "," : "") + float_str(x);
      return s + "]";
    }
    default: return "tensor " + std::get<HostTensor>(v).str(8);
  }
}

Attrs& Attrs::set_int(const std::string& key, int64_t v) { values_[key] = v; return *this; }
Attrs& Attrs::set_float(const std::string& key, double v) { values_[key] = v; return *this; }
Attrs& Attrs::set_str(const std::string& key, std::string v) { values_[key] = std::move(v); return *this; }
Attrs& Attrs::set_ints(const std::string& key, std::vector<int64_t> v) { values_[key] = std::move(v); return *this; }
Attrs& Attrs::set_floats(const std::string& key, std::vector<double> v) { values_[key] = std::move(v); return *this; }
Attrs& Attrs::set_tensor(const std::string& key, HostTensor v) { values_[key] = std::move(v); return *this; }

const AttrValue& Attrs::lookup(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) {
    KILN_THROW() << (context_.empty() ? "" : context_ + ": ") << "attribute '" << key << "' is missing";
  }
  return it->second;
}

void Attrs::wrong_kind(const std::string& key, const char* wanted) const {
  throw Error((context_.empty() ? "" : context_ + ": ") + "attribute '" + key + "' is " + kind_of(values_.at(key)) +
              ", expected " + wanted);
}

int64_t Attrs::get_int(const std::string& key) const {
  const AttrValue& v = lookup(key);
  if (auto* p = std::get_if<int64_t>(&v)) return *p;
  wrong_kind(key, "an int");
}

double Attrs::get_float(const std::string& key) const {
  const AttrValue& v = lookup(key);
  if (auto* p = std::get_if<double>(&v)) return *p;
  if (auto* p = std::get_if<int64_t>(&v)) return static_cast<double>(*p);
  wrong_kind(key, "a float");
}

const std::string& Attrs::get_str(const std::string& key) const {
  const AttrValue& v = lookup(key);
  if (auto* p = std::get_if<std::string>(&v)) return *p;
  wrong_kind(key, "a string");
}

const std::vector<int64_t>& Attrs::get_ints(const std::string& key) const {
  const AttrValue& v = lookup(key);
  if (auto* p = std::get_if<std::vector<int64_t>>(&v)) return *p;
  wrong_kind(key, "an int list");
}

std::vector<double> Attrs::get_floats(const std::string& key) const {
  const AttrValue& v = lookup(key);
  if (auto* p = std::get_if<std::vector<double>>(&v)) return *p;
  if (auto* p = std::get_if<std::vector<int64_t>>(&v)) return std::vector<double>(p->begin(), p->end());
  wrong_kind(key, "a float list");
}

const HostTensor& Attrs::get_tensor(const std::string& key) const {
  const AttrValue& v = lookup(key);
  if (auto* p = std::get_if<HostTensor>(&v)) return *p;
  wrong_kind(key, "a tensor");
}

int64_t Attrs::get_int(const std::string& key, int64_t dflt) const { return has(key) ? get_int(key) : dflt; }
double Attrs::get_float(const std::string& key, double dflt) const { return has(key) ? get_float(key) : dflt; }
std::string Attrs::get_str(const std::string& key, const std::string& dflt) const {
  return has(key) ? get_str(key) : dflt;
}
std::vector<int64_t> Attrs::get_ints(const std::string& key, const std::vector<int64_t>& dflt) const {
  return has(key) ? get_ints(key) : dflt;
}

Attrs Attrs::with_context(std::string context) const {
  Attrs a = *this;
  a.context_ = std::move(context);
  return a;
}

bool Attrs::operator==(const Attrs& o) const {
  if (values_.size() != o.values_.size()) return false;
  for (auto a = values_.begin(), b = o.values_.begin(); a != values_.end(); ++a, ++b) {
    if (a->first != b->first || a->second.index() != b->second.index()) return false;
    const AttrValue &x = a->second, &y = b->second;
    bool same = false;
    switch (x.index()) {
      case 0: same = std::get<0>(x) == std::get<0>(y); break;
      case 1: same = std::get<1>(x) == std::get<1>(y); break;
      case 2: same = std::get<2>(x) == std::get<2>(y); break;
      case 3: same = std::get<3>(x) == std::get<3>(y); break;
      case 4: same = std::get<4>(x) == std::get<4>(y); break;
      default: same = std::get<5>(x).bitwise_equal(std::get<5>(y)); break;
    }
    if (!same) return false;
  }
  return true;
}

size_t Attrs::hash() const {
  size_t h = 0;
  auto mix = [&](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  for (const auto& [k, v] : values_) {
    mix(std::hash<std::string>()(k));
    if (auto* t = std::get_if<HostTensor>(&v)) {
      mix(t->hash());
    } else {
      mix(std::hash<std::string>()(attr_value_str(v)));
    }
  }
  return h;
}

std::string Attrs::str() const {
  std::string s;
  for (const auto& [k, v] : values_) s += (s.empty() ? "" : ", ") + k + "=" + attr_value_str(v);
  return s;
}

}  // namespace kiln::relay
