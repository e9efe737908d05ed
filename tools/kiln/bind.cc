#include "bind.h"

#include <cctype>

#include "relay/batch_separable.h"
#include "kiln/support/error.h"
#include "tensor_file.h"

namespace kiln::cli {
namespace {

// "1,3,224,224" to a shape: decimal dims >= 0 (an empty input is valid ONNX), no blanks;
// nullopt for anything else, so that a typo never turns into a plausible shape.
std::optional<relay::Shape> parse_dims(const std::string& text) {
  relay::Shape shape;
  size_t pos = 0;
  while (true) {
    size_t end = text.find(',', pos);
    std::string dim = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (dim.empty() || dim.size() > 12) return std::nullopt;  // 12 digits: no int64 overflow
    for (char ch : dim)
      if (!std::isdigit(static_cast<unsigned char>(ch))) return std::nullopt;
    shape.push_back(std::stoll(dim));
    if (end == std::string::npos) return shape;
    pos = end + 1;
  }
}

// "MIN..MAX" to the batch range: decimal bounds, 1 <= MIN <= MAX <= kMaxBatch; nullopt for
// anything that is not a range at all, kiln::Error for a range that is wrong.
constexpr int64_t kMaxBatch = int64_t{1} << 20;  // what the runtime accepts (plan_problem)
std::optional<std::pair<int64_t, int64_t>> parse_range(const std::string& dim, const std::string& spec) {
  size_t dots = dim.find("..");
  if (dots == std::string::npos) return std::nullopt;
  std::string lo = dim.substr(0, dots), hi = dim.substr(dots + 2);
  auto number = [](const std::string& t) {
    if (t.empty() || t.size() > 12) return false;
    for (char ch : t)
      if (!std::isdigit(static_cast<unsigned char>(ch))) return false;
    return true;
  };
  KILN_USER_CHECK(number(lo) && number(hi)) << "--input-shape '" << spec << "': a batch range is MIN..MAX (e.g. 1..32)";
  int64_t a = std::stoll(lo), b = std::stoll(hi);
  KILN_USER_CHECK(a >= 1) << "--input-shape '" << spec << "': the smallest batch must be at least 1, got " << a;
  KILN_USER_CHECK(a <= b) << "--input-shape '" << spec << "': the batch range " << a << ".." << b << " is empty";
  KILN_USER_CHECK(b <= kMaxBatch) << "--input-shape '" << spec << "': the largest batch may be at most " << kMaxBatch;
  return std::make_pair(a, b);
}

// The dims of a spec whose first dim may be a batch range: the range goes to *range (nullopt
// when there is none) and the first dim becomes one sample's, 1. nullopt for a malformed spec.
std::optional<relay::Shape> parse_dims_with_range(const std::string& dims, const std::string& spec,
                                                  std::optional<std::pair<int64_t, int64_t>>* range) {
  size_t comma = dims.find(',');
  std::string first = dims.substr(0, comma);
  *range = parse_range(first, spec);
  if (!*range) {
    KILN_USER_CHECK(dims.find("..") == std::string::npos)
        << "--input-shape '" << spec << "': only the first (batch) dim may be a range MIN..MAX";
    return parse_dims(dims);
  }
  if (comma == std::string::npos) return relay::Shape{1};
  std::optional<relay::Shape> rest = parse_dims(dims.substr(comma + 1));
  KILN_USER_CHECK(rest) << "--input-shape '" << spec << "': only the first (batch) dim may be a range MIN..MAX";
  rest->insert(rest->begin(), 1);
  return rest;
}

// A CLI11 check of NAME=VALUE whose VALUE `value_ok` accepts; `form` is shown in the message.
CLI::Validator name_equals(const std::string& form, const std::function<bool(const std::string&)>& value_ok) {
  return CLI::Validator(
      [form, value_ok](std::string& spec) -> std::string {
        auto kv = split_spec(spec);
        if (!kv || !value_ok(kv->second)) return "expects " + form + ", got '" + spec + "'";
        return "";
      },
      form);
}

// NAME=VALUE specs to values by name; `flag` names the option in messages.
template <class T>
std::map<std::string, T> read_specs(const std::string& flag, const std::string& form,
                                    const std::vector<std::string>& specs,
                                    const std::function<T(const std::string&, const std::string&)>& parse) {
  std::map<std::string, T> values;
  for (const std::string& spec : specs) {
    auto kv = split_spec(spec);  // validated at parse time; this guards other callers
    KILN_USER_CHECK(kv) << flag << " expects " << form << ", got '" << spec << "'";
    KILN_USER_CHECK(!values.count(kv->first)) << flag << " gives '" << kv->first << "' twice";
    values.emplace(kv->first, parse(spec, kv->second));
  }
  return values;
}

}  // namespace

std::optional<std::pair<std::string, std::string>> split_spec(const std::string& spec) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) return std::nullopt;
  return std::make_pair(spec.substr(0, eq), spec.substr(eq + 1));
}

CLI::Validator name_equals_file() {
  return name_equals("NAME=FILE.pb or NAME=FILE.npy", [](const std::string&) { return true; });
}

std::map<std::string, relay::HostTensor> read_bind_specs(const std::vector<std::string>& specs) {
  return read_specs<relay::HostTensor>("--bind", "NAME=FILE", specs, [](const std::string&, const std::string& file) {
    return load_tensor_file(file);
  });
}

void add_input_shape_option(CLI::App* cmd, std::vector<std::string>* specs, bool batch_range) {
  std::string help = "NAME=D0,D1,...: the shape of graph input NAME, for its symbolic dims (\"batch\"); repeatable";
  if (batch_range)
    help += ". D0 may be a batch range MIN..MAX (input=1..32,3,224,224): one module that runs any batch in it";
  // A range is checked when the specs are read: its errors say what is wrong with it (and
  // commands without batch_range say that they take none).
  cmd->add_option("--input-shape", *specs, help)
      ->check(name_equals("NAME=D0,D1,... (e.g. input=1,3,224,224)", [](const std::string& v) {
        return parse_dims(v).has_value() || v.find("..") != std::string::npos;
      }));
}

std::map<std::string, relay::Shape> read_shape_specs(const std::vector<std::string>& specs, BatchRange* batch) {
  return read_specs<relay::Shape>(
      "--input-shape", "NAME=D0,D1,...", specs, [batch](const std::string& spec, const std::string& dims) {
        std::optional<std::pair<int64_t, int64_t>> range;
        std::optional<relay::Shape> s = parse_dims_with_range(dims, spec, &range);
        KILN_USER_CHECK(s) << "--input-shape expects NAME=D0,D1,..., got '" << spec << "'";
        if (!range) return *s;
        KILN_USER_CHECK(batch != nullptr) << "--input-shape '" << spec
                                          << "': a batch range (dynamic batch) is not taken here";
        KILN_USER_CHECK(batch->inputs.empty() || (batch->min == range->first && batch->max == range->second))
            << "--input-shape '" << spec << "': every input's batch range must be the same (another input has "
            << batch->min << ".." << batch->max << ")";
        batch->min = range->first;
        batch->max = range->second;
        batch->inputs.push_back(split_spec(spec)->first);
        return *s;
      });
}

relay::Module import_binding(const std::string& model, relay::OnnxImportOptions& opts,
                             const std::function<std::optional<relay::HostTensor>(const std::string&)>& lookup) {
  // Each round binds what one node asked for; binding makes that node fold, so a later node may
  // ask next. A graph has finitely many inputs, so the rounds end.
  while (true) {
    try {
      return relay::from_onnx(model, opts);
    } catch (const relay::CompileTimeInputError& e) {
      bool progress = false;
      for (const std::string& name : e.inputs()) {
        if (opts.bind.count(name)) continue;
        std::optional<relay::HostTensor> v = lookup(name);
        if (!v) throw;
        opts.bind[name] = *v;
        progress = true;
      }
      if (!progress) throw;  // bound and still not constant (too big to fold): nothing to add
    }
  }
}

void check_batch_range(const std::string& model, const relay::OnnxImportOptions& opts, const relay::Module& one,
                       const BatchRange& range) {
  relay::OnnxImportOptions two_opts = opts;
  for (const std::string& name : range.inputs) two_opts.input_shapes.at(name)[0] *= 2;
  relay::Module two;
  try {
    two = relay::from_onnx(model, two_opts);
  } catch (const UnsupportedError&) {
    throw;
  } catch (const relay::CompileTimeInputError&) {
    throw;
  } catch (const Error& e) {
    KILN_SUPPORTED(false) << "dynamic batch: the model does not import at batch 2 (" << e.what()
                          << "); is its batch dim fixed in the graph? Compile for a fixed batch (--input-shape NAME=N,...)";
  }
  relay::check_batch_separable(one, two);
}

relay::Module import_for_compile(const std::string& model, const std::vector<std::string>& bind_specs,
                                 const std::vector<std::string>& shape_specs, BatchRange* batch) {
  relay::OnnxImportOptions opts;
  opts.bind = read_bind_specs(bind_specs);
  BatchRange range;
  opts.input_shapes = read_shape_specs(shape_specs, batch ? &range : nullptr);
  if (batch) *batch = range;
  try {
    relay::Module one = relay::from_onnx(model, opts);
    if (!range.inputs.empty()) check_batch_range(model, opts, one, range);
    return one;
  } catch (const relay::CompileTimeInputError& e) {
    std::string hint;
    for (const std::string& name : e.inputs())
      if (!opts.bind.count(name)) hint += " --bind " + name + "=FILE.pb";
    throw relay::CompileTimeInputError(std::string(e.what()) + " (kiln compile ..." + hint + ")", e.inputs());
  }
}

}  // namespace kiln::cli
