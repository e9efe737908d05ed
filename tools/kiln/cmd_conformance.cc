// kiln conformance ROOT: runs `kiln check` on every case directory below ROOT (a directory with
// a model.onnx), each in its own process with a timeout, so that a crash or a hang is recorded
// and the run goes on. Prints one line per case and closes with "N passed, M failed, K unsupported".
// With --known-failures FILE (one case name a line, '#' starts a comment), a failing case not
// listed there makes the exit status non-zero; a listed case that passes is reported for removal.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <vector>

#include "commands.h"
#include "kiln/target/target.h"
#include "kiln/support/error.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

struct CaseResult {
  std::string name;
  enum Kind { Pass, Fail, Unsupported, Crash, Timeout } kind = Fail;
  std::string detail;  // the last line the check printed, or the signal
};

std::vector<fs::path> find_cases(const fs::path& root) {
  KILN_USER_CHECK(fs::is_directory(root)) << "conformance root '" << root.string() << "' is not a directory";
  std::vector<fs::path> cases;
  if (fs::exists(root / "model.onnx")) cases.push_back(root);
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

std::set<std::string> read_known_failures(const std::string& path) {
  std::set<std::string> names;
  if (path.empty()) return names;
  std::ifstream in(path);
  KILN_USER_CHECK(in.good()) << "cannot read known-failures file '" << path << "'";
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    line.erase(std::remove_if(line.begin(), line.end(), ::isspace), line.end());
    if (!line.empty()) names.insert(line);
  }
  return names;
}

// One running `kiln check` child with its output pipe.
struct Child {
  pid_t pid = -1;
  int out_fd = -1;
  std::string output;
  std::chrono::steady_clock::time_point start;
  fs::path dir;
};

Child spawn_check(const fs::path& dir, const std::string& target) {
  int fds[2];
  KILN_CHECK(pipe(fds) == 0) << "pipe failed";
  pid_t pid = fork();
  KILN_CHECK(pid >= 0) << "fork failed";
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    std::string self = fs::read_symlink("/proc/self/exe").string();
    if (target.empty()) execl(self.c_str(), self.c_str(), "check", dir.c_str(), static_cast<char*>(nullptr));
    else execl(self.c_str(), self.c_str(), "check", dir.c_str(), "--target", target.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  return Child{pid, fds[0], "", std::chrono::steady_clock::now(), dir};
}

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

CaseResult finish(Child& c, int wstatus, bool timed_out, double timeout_s) {
  CaseResult r;
  r.name = c.dir.filename().string();
  if (timed_out) {
    r.kind = CaseResult::Timeout;
    r.detail = "timed out after " + std::to_string(static_cast<int>(timeout_s)) + " s";
  } else if (WIFSIGNALED(wstatus)) {
    r.kind = CaseResult::Crash;
    r.detail = std::string("crashed: signal ") + std::to_string(WTERMSIG(wstatus)) + " (" + strsignal(WTERMSIG(wstatus)) + ")";
  } else {
    int code = WEXITSTATUS(wstatus);
    r.kind = code == kOk ? CaseResult::Pass : code == kUnsupported ? CaseResult::Unsupported : CaseResult::Fail;
    r.detail = last_line(c.output);
    // kiln check's own verdict line repeats what this line prints first.
    std::string own = "FAIL " + r.name + ": ";
    if (r.detail.rfind(own, 0) == 0) r.detail = r.detail.substr(own.size());
  }
  close(c.out_fd);
  return r;
}

const char* kind_label(CaseResult::Kind k) {
  switch (k) {
    case CaseResult::Pass: return "PASS";
    case CaseResult::Fail: return "FAIL";
    case CaseResult::Unsupported: return "UNSUPPORTED";
    case CaseResult::Crash: return "CRASH";
    case CaseResult::Timeout: return "TIMEOUT";
  }
  return "?";
}

// Runs the cases, at most `jobs` at a time; results in case order.
std::vector<CaseResult> run_all(const std::vector<fs::path>& cases, int jobs, double timeout_s, const std::string& target) {
  std::vector<CaseResult> results(cases.size());
  std::map<size_t, Child> running;
  size_t next = 0, done = 0;
  while (done < cases.size()) {
    while (static_cast<int>(running.size()) < jobs && next < cases.size()) {
      running.emplace(next, spawn_check(cases[next], target));
      ++next;
    }
    std::vector<pollfd> fds;
    for (auto& [i, c] : running) fds.push_back({c.out_fd, POLLIN, 0});
    poll(fds.data(), fds.size(), 50);
    for (auto it = running.begin(); it != running.end();) {
      Child& c = it->second;
      char buf[4096];
      pollfd p{c.out_fd, POLLIN, 0};
      while (poll(&p, 1, 0) > 0 && (p.revents & POLLIN)) {
        ssize_t n = read(c.out_fd, buf, sizeof buf);
        if (n <= 0) break;
        if (c.output.size() < (1 << 20)) c.output.append(buf, static_cast<size_t>(n));
      }
      int wstatus = 0;
      bool timed_out = std::chrono::duration<double>(std::chrono::steady_clock::now() - c.start).count() > timeout_s;
      pid_t w = waitpid(c.pid, &wstatus, WNOHANG);
      if (w == 0 && timed_out) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, &wstatus, 0);
      }
      if (w == c.pid || timed_out) {
        results[it->first] = finish(c, wstatus, timed_out && w != c.pid, timeout_s);
        const CaseResult& r = results[it->first];
        std::cout << kind_label(r.kind) << " " << r.name;
        if (r.kind != CaseResult::Pass && !r.detail.empty()) std::cout << ": " << r.detail;
        std::cout << std::endl;
        ++done;
        it = running.erase(it);
      } else {
        ++it;
      }
    }
  }
  return results;
}

// Prints the verdicts against the list and the counts. With a list, only a failing case that is
// not on it fails the run: a listed case that passes is reported for removal (progress must not
// break CI), and so is a listed name that matches no case (a typo would hide nothing, but lies).
int summarize(const std::vector<CaseResult>& results, const std::set<std::string>& known, bool have_list) {
  int passed = 0, failed = 0, unsupported = 0;
  std::vector<std::string> unexpected, fixed;
  std::set<std::string> unseen = known;
  for (const CaseResult& r : results) {
    bool failing = r.kind == CaseResult::Fail || r.kind == CaseResult::Crash || r.kind == CaseResult::Timeout;
    passed += r.kind == CaseResult::Pass;
    failed += failing;
    unsupported += r.kind == CaseResult::Unsupported;
    unseen.erase(r.name);
    if (failing && !known.count(r.name)) unexpected.push_back(r.name);
    if (!failing && known.count(r.name)) fixed.push_back(r.name + (r.kind == CaseResult::Pass ? "" : " (now unsupported)"));
  }
  if (have_list) {
    for (const std::string& n : unexpected) std::cout << "unexpected failure (not in the known-failures list): " << n << "\n";
    for (const std::string& n : fixed) std::cout << "fixed, remove from the known-failures list: " << n << "\n";
    for (const std::string& n : unseen) std::cout << "listed as a known failure but no such case: " << n << "\n";
  }
  std::cout << passed << " passed, " << failed << " failed, " << unsupported << " unsupported\n";
  if (!have_list) return failed ? kFailed : kOk;
  std::cout << (unexpected.empty() ? "conformance OK: " : "conformance FAILED: ") << unexpected.size()
            << " unexpected failure(s), " << (failed - static_cast<int>(unexpected.size())) << " known\n";
  return unexpected.empty() ? kOk : kFailed;
}

}  // namespace

void add_conformance(CLI::App& app, int* status) {
  struct Args {
    std::string root, known_failures, target;
    int jobs = 2;
    double timeout = 120;
  };
  auto args = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("conformance", "run `kiln check` on every case below a directory");
  c->add_option("root", args->root, "directory holding case directories (each with model.onnx)")->required();
  c->add_option("--known-failures", args->known_failures, "file listing cases expected to fail, one per line");
  c->add_option("-j,--jobs", args->jobs, "cases checked at once");
  c->add_option("--timeout", args->timeout, "seconds before a case is killed and recorded as a hang");
  c->add_option("--target", args->target, "code generation target every case is checked for (default: this CPU)");
  c->callback([args, status] {
    *status = guarded("conformance", [&] {
      if (!args->target.empty()) Target::parse(args->target);  // a bad target is one error, not 1802
      std::set<std::string> known = read_known_failures(args->known_failures);
      std::vector<CaseResult> results =
          run_all(find_cases(args->root), std::max(1, args->jobs), args->timeout, args->target);
      return summarize(results, known, !args->known_failures.empty());
    });
  });
}

}  // namespace kiln::cli
