// kiln: compile ONNX models into deployable .so files, run and check them.
#include <cstdio>
#include <exception>
#include <functional>
#include <iostream>

#include "commands.h"
#include "kiln/support/error.h"

namespace kiln::cli {

int guarded(const char* cmd, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UnsupportedError& e) {
    std::cerr << "kiln " << cmd << ": unsupported: " << e.what() << "\n";
    return kUnsupported;
  } catch (const Error& e) {
    std::cerr << "kiln " << cmd << ": error: " << e.what() << "\n";
    return kFailed;
  } catch (const InternalError& e) {
    std::cerr << "kiln " << cmd << ": " << e.what() << "\n(this is a bug in kiln; please report it)\n";
    return kInternal;
  } catch (const std::exception& e) {
    std::cerr << "kiln " << cmd << ": error: " << e.what() << "\n";
    return kFailed;
  }
}

}  // namespace kiln::cli

int main(int argc, char** argv) {
  CLI::App app{"kiln: an ahead-of-time deep learning compiler"};
  app.require_subcommand(1);
  int status = kiln::cli::kOk;
  kiln::cli::add_compile(app, &status);
  kiln::cli::add_stages(app, &status);
  kiln::cli::add_run(app, &status);
  kiln::cli::add_check(app, &status);
  kiln::cli::add_conformance(app, &status);
  kiln::cli::add_bench(app, &status);
  kiln::cli::add_tune(app, &status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kiln::cli::kUsage;
  }
  return status;
}
