// Running a helper program (a linker, kiln-runner under qemu) and waiting for it: one place for
// the posix_spawn / waitpid dance. Callers word their own errors from the outcome.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern char** environ;

namespace kiln::support {

struct ProgramOutcome {
  std::string start_error;  // why the program did not start ("cannot start 'x': ..."); empty if it ran
  int status = 0;           // its waitpid status
  bool ok() const { return start_error.empty() && WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

// Runs argv[0] (a path; no PATH search) with argv, stdout written to out_path and stderr to
// err_path, or to out_path as well when err_path is empty, and waits for it.
inline ProgramOutcome run_program(const std::vector<std::string>& argv, const std::string& out_path,
                                  const std::string& err_path = "") {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (err_path.empty()) posix_spawn_file_actions_adddup2(&actions, 1, 2);
  else posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int err = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ProgramOutcome o;
  if (err != 0) {
    o.start_error = "cannot start '" + argv[0] + "': " + std::strerror(err);
    return o;
  }
  while (waitpid(pid, &o.status, 0) < 0 && errno == EINTR) {
  }
  return o;
}

// A program's log as an error message quotes it: at most 4000 characters, then "\n...".
inline std::string read_log(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > 4000) text = text.substr(0, 4000) + "\n...";
  return text;
}

}  // namespace kiln::support
