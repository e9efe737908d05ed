// Compile-time values for graph inputs (static-shape specialization): `kiln compile --bind` and
// `kiln check` both import through here, binding the inputs the importer reports as needed at
// compile time (relay::CompileTimeInputError) rather than guessing them.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/relay/frontend/onnx.h"

namespace kiln::cli {

// A CLI11 check that an option value has the form NAME=FILE.pb: a malformed one is a usage
// error (status 2) reported before anything runs.
CLI::Validator name_equals_file();

// Parses NAME=FILE.pb specs into values (kiln::Error naming the spec or the file).
std::map<std::string, relay::HostTensor> read_bind_specs(const std::vector<std::string>& specs);

// Imports `model` with opts.bind, adding to it each input the importer asks for that `lookup`
// can give (it returns nullopt for one it cannot); the importer's error stands for the others.
// On return opts.bind holds exactly what was bound.
relay::Module import_binding(const std::string& model, relay::OnnxImportOptions& opts,
                             const std::function<std::optional<relay::HostTensor>(const std::string&)>& lookup);

// What `kiln compile` imports: `model` with the inputs bound by NAME=FILE.pb `specs`; a node
// that needs another input at compile time fails with a message saying how to bind it.
relay::Module import_for_compile(const std::string& model, const std::vector<std::string>& specs);

}  // namespace kiln::cli
