#include "bind.h"

#include <cctype>

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

void add_input_shape_option(CLI::App* cmd, std::vector<std::string>* specs) {
  cmd->add_option("--input-shape", *specs,
                  "NAME=D0,D1,...: the shape of graph input NAME, for its symbolic dims (\"batch\"); repeatable")
      ->check(name_equals("NAME=D0,D1,... (e.g. input=1,3,224,224)",
                          [](const std::string& v) { return parse_dims(v).has_value(); }));
}

std::map<std::string, relay::Shape> read_shape_specs(const std::vector<std::string>& specs) {
  return read_specs<relay::Shape>("--input-shape", "NAME=D0,D1,...", specs,
                                  [](const std::string& spec, const std::string& dims) {
                                    std::optional<relay::Shape> s = parse_dims(dims);
                                    KILN_USER_CHECK(s) << "--input-shape expects NAME=D0,D1,..., got '" << spec << "'";
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

relay::Module import_for_compile(const std::string& model, const std::vector<std::string>& bind_specs,
                                 const std::vector<std::string>& shape_specs) {
  relay::OnnxImportOptions opts;
  opts.bind = read_bind_specs(bind_specs);
  opts.input_shapes = read_shape_specs(shape_specs);
  try {
    return relay::from_onnx(model, opts);
  } catch (const relay::CompileTimeInputError& e) {
    std::string hint;
    for (const std::string& name : e.inputs())
      if (!opts.bind.count(name)) hint += " --bind " + name + "=FILE.pb";
    throw relay::CompileTimeInputError(std::string(e.what()) + " (kiln compile ..." + hint + ")", e.inputs());
  }
}

}  // namespace kiln::cli
