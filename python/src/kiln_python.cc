// The extension module kiln._kiln: the compiler (import, compile, export) and the tuning driver
// bound directly, the runtime through its C API (module.h). The package kiln (python/kiln)
// wraps it in the public API; see there for the user's view.
#include <nanobind/nanobind.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <variant>

#include "kiln/autotune/apply_log.h"
#include "kiln/autotune/graph_choices.h"
#include "kiln/autotune/tune_model.h"
#include "kiln/compiler.h"
#include "kiln/relay/frontend/onnx.h"
#include "module.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::python {
namespace {

// A model as kiln.compile/tune receive it: a path, or the bytes of a serialized ModelProto.
using Source = std::variant<nb::bytes, std::string>;
using Shapes = std::map<std::string, std::vector<int64_t>>;

// Imports `bytes` (a serialized ModelProto) when given, else the file at `path`. Called without
// the GIL: the bytes were copied out of Python first.
relay::Module import_model(const std::string& path, const std::optional<std::string>& bytes, const Shapes& shapes) {
  relay::OnnxImportOptions opts;
  opts.input_shapes = shapes;
  if (bytes) return relay::from_onnx_bytes(*bytes, "the onnx.ModelProto", opts);
  return relay::from_onnx(path, opts);
}

std::optional<std::string> bytes_of(const Source& source) {
  if (const nb::bytes* b = std::get_if<nb::bytes>(&source)) return std::string(b->c_str(), b->size());
  return std::nullopt;
}
std::string path_of(const Source& source) {
  const std::string* p = std::get_if<std::string>(&source);
  return p ? *p : std::string();
}

// A fresh directory of its own for a compiled module (several may live at once).
std::string temporary_module_path() {
  std::string dir = (std::filesystem::temp_directory_path() / "kiln-XXXXXX").string();
  KILN_USER_CHECK(mkdtemp(dir.data()) != nullptr) << "cannot create a temporary directory for the compiled module in "
                                                  << std::filesystem::temp_directory_path().string();
  return dir + "/model.so";
}

std::unique_ptr<Module> compile(const Source& source, const std::string& target, const std::optional<std::string>& tuning_log,
                                const Shapes& shapes) {
  const std::optional<std::string> bytes = bytes_of(source);
  const std::string path = path_of(source);
  std::string out;
  std::vector<std::string> notes;
  {
    nb::gil_scoped_release released;
    CompileOptions opts;
    opts.target = Target::parse(target);
    const relay::Module model = import_model(path, bytes, shapes);
    std::optional<autotune::AppliedTuningLog> log;
    if (tuning_log) log.emplace(*tuning_log, model, &opts);
    CompiledModel compiled = kiln::compile(model, opts);
    out = temporary_module_path();
    try {
      export_library(compiled, out);
    } catch (...) {
      std::filesystem::remove_all(std::filesystem::path(out).parent_path());
      throw;
    }
    notes = compiled.notes;
    if (log) notes.insert(notes.begin(), log->notes().begin(), log->notes().end());
  }
  return std::make_unique<Module>(out, /*temporary=*/true, notes);
}

void tune(const Source& source, const std::string& name, const std::string& log, int trials, const std::string& target,
          const Shapes& shapes, uint64_t seed, const std::function<void(const std::string&)>& line,
          const std::function<void(const std::string&)>& note) {
  const std::optional<std::string> bytes = bytes_of(source);
  const std::string path = path_of(source);
  nb::gil_scoped_release released;
  autotune::TuneModelOptions o;
  o.log = log;
  o.trials = trials;
  o.seed = seed;
  o.compile.target = Target::parse(target);
  // `line` and `note` are Python callables: nanobind's wrappers take the GIL back for each call.
  autotune::tune_model(import_model(path, bytes, shapes), name, o, line, note);
}

}  // namespace
}  // namespace kiln::python

NB_MODULE(_kiln, m) {
  using kiln::python::Module;
  m.doc() = "kiln's compiler and runtime (the kiln package wraps this module)";
  // Translators run newest first: the subclasses are registered after their base.
  auto error = nb::exception<kiln::Error>(m, "KilnError", PyExc_RuntimeError);
  nb::exception<kiln::UnsupportedError>(m, "UnsupportedError", error);
  nb::exception<kiln::InternalError>(m, "InternalError", error);
  m.attr("__version__") = kiln_version();

  nb::class_<Module>(m, "Module")
      .def_static("load", [](const std::string& path) { return std::make_unique<Module>(path, false); }, "path"_a)
      .def("input_info", &Module::input_info)
      .def("output_info", &Module::output_info)
      .def("run", &Module::run, "inputs"_a)
      .def("save", &Module::save, "path"_a)
      .def_prop_ro("notes", &Module::notes);
  m.def("compile", &kiln::python::compile, "source"_a, "target"_a, "tuning_log"_a.none(), "input_shapes"_a);
  m.def("tune", &kiln::python::tune, "source"_a, "name"_a, "log"_a, "trials"_a, "target"_a, "input_shapes"_a, "seed"_a,
        "line"_a, "note"_a);
}
