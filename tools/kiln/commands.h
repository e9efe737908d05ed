// The kiln command-line tool: one function per subcommand, registered on a CLI11 app.
// Exit statuses are shared by every command (and relied on by `kiln conformance`).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace kiln::cli {

enum ExitStatus : int {
  kOk = 0,
  kFailed = 1,       // a user error, or a check whose numbers are wrong
  kUsage = 2,        // bad command line
  kUnsupported = 3,  // valid input using something kiln does not implement
  kInternal = 70,    // a kiln bug (internal check failed)
};

// Each adds its subcommand to `app`; the callback it installs returns through `status`.
void add_compile(CLI::App& app, int* status);
// kiln stages: the pipeline's stage table (pipeline.h) as Markdown.
void add_stages(CLI::App& app, int* status);
void add_run(CLI::App& app, int* status);
void add_check(CLI::App& app, int* status);
void add_conformance(CLI::App& app, int* status);
void add_bench(CLI::App& app, int* status);
void add_tune(CLI::App& app, int* status);

// Runs `body`, turning kiln's exceptions into a message on stderr (prefixed "kiln <cmd>: ")
// and the matching exit status.
int guarded(const char* cmd, const std::function<int()>& body);

}  // namespace kiln::cli
