#include "bind.h"

#include "kiln/support/error.h"

namespace kiln::cli {

CLI::Validator name_equals_file() {
  return CLI::Validator(
      [](std::string& spec) -> std::string {
        size_t eq = spec.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) return "expects NAME=FILE.pb, got '" + spec + "'";
        return "";
      },
      "NAME=FILE.pb");
}

std::map<std::string, relay::HostTensor> read_bind_specs(const std::vector<std::string>& specs) {
  std::map<std::string, relay::HostTensor> values;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    KILN_USER_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < spec.size())
        << "--bind expects NAME=FILE.pb, got '" << spec << "'";
    std::string name = spec.substr(0, eq);
    KILN_USER_CHECK(!values.count(name)) << "--bind gives '" << name << "' twice";
    values[name] = relay::load_tensor_pb(spec.substr(eq + 1)).value;
  }
  return values;
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

relay::Module import_for_compile(const std::string& model, const std::vector<std::string>& specs) {
  relay::OnnxImportOptions opts;
  opts.bind = read_bind_specs(specs);
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
