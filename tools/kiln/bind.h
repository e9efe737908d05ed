// What the CLI fixes about graph inputs at compile time (static-shape specialization): values
// (`--bind NAME=FILE.pb`; `kiln check` binds the inputs the importer reports as needed at compile
// time, relay::CompileTimeInputError, rather than guessing them) and shapes (`--input-shape
// NAME=D0,D1,...` for symbolic dims). Both flags share one NAME=VALUE parser.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/relay/frontend/onnx.h"

namespace kiln::cli {

// NAME=VALUE split at the first '=', or nullopt when there is none or either side is empty.
std::optional<std::pair<std::string, std::string>> split_spec(const std::string& spec);

// A CLI11 check that an option value has the form NAME=FILE (a .pb or .npy file): a malformed
// one is a usage error (status 2) reported before anything runs.
CLI::Validator name_equals_file();

// Parses NAME=FILE specs (.pb or .npy, tensor_file.h) into values (errors name the spec or the file).
std::map<std::string, relay::HostTensor> read_bind_specs(const std::vector<std::string>& specs);

// Adds `--input-shape NAME=D0,D1,...` (repeatable) to `cmd`, checked at parse time: a malformed
// spec is a usage error (status 2). Shapes are what the importer needs for symbolic dims. With
// batch_range, D0 may be MIN..MAX (dynamic batch; the help says so).
void add_input_shape_option(CLI::App* cmd, std::vector<std::string>* specs, bool batch_range = false);

// A dynamic batch given by --input-shape NAME=MIN..MAX,...: the inputs with a range (all the
// same range) and the range; none when `inputs` is empty.
struct BatchRange {
  std::vector<std::string> inputs;
  int64_t min = 0, max = 0;
};

// Parses --input-shape specs (kiln::Error for a name given twice, a bad range, a range when
// `batch` is null or two different ranges). A ranged input's shape has one sample's leading dim (1).
std::map<std::string, relay::Shape> read_shape_specs(const std::vector<std::string>& specs,
                                                     BatchRange* batch = nullptr);

// A dynamic batch's model check: `one`, imported with `opts` (one sample), against the model
// imported at two samples (relay::check_batch_separable; UnsupportedError naming the node).
void check_batch_range(const std::string& model, const relay::OnnxImportOptions& opts, const relay::Module& one,
                       const BatchRange& range);

// Imports `model` with opts.bind, adding to it each input the importer asks for that `lookup`
// can give (it returns nullopt for one it cannot); the importer's error stands for the others.
// On return opts.bind holds exactly what was bound.
relay::Module import_binding(const std::string& model, relay::OnnxImportOptions& opts,
                             const std::function<std::optional<relay::HostTensor>(const std::string&)>& lookup);

// What `kiln compile` imports: `model` with the inputs bound by NAME=FILE.pb `bind_specs` and
// shaped by NAME=D0,D1,... `shape_specs`; a node that needs another input at compile time fails
// with a message saying how to bind it. With `batch`, the specs may give a batch range (filled
// in): the module is one sample's, checked to compute every sample on its own
// (relay::check_batch_separable; UnsupportedError when it does not).
relay::Module import_for_compile(const std::string& model, const std::vector<std::string>& bind_specs,
                                 const std::vector<std::string>& shape_specs, BatchRange* batch = nullptr);

}  // namespace kiln::cli
