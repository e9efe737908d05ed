// kiln-runner: runs a compiled kiln module on NumPy inputs, linking only the runtime's C API (no
// LLVM, protobuf or XGBoost), so it can be cross-built and copied to a board beside the module
// and libkiln_runtime.so. `kiln check --target "llvm -mtriple=aarch64-linux-gnu"` runs it under
// qemu-aarch64.
//
//   kiln-runner MODULE.so --input NAME=FILE.npy ... [--output-dir DIR] [--threads N] [--repeat N]
//               [--device-inputs]
//   kiln-runner MODULE.so --info
//
// Writes each output as DIR/<output name>.npy (DIR is created if missing) and prints one line per
// output. Exit status: 0 ok, 1 error (a message naming the culprit), 2 bad command line.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kiln/runtime/kiln_runtime.h"
#include "npy.h"

namespace {

constexpr int kOk = 0, kFailed = 1, kUsage = 2;

const char kUsageText[] =
    "usage: kiln-runner MODULE.so --input NAME=FILE.npy ... [--output-dir DIR] [--threads N] [--repeat N]\n"
    "                   [--device-inputs]\n"
    "       kiln-runner MODULE.so --info\n"
    "Runs a compiled kiln module on NumPy (.npy, little-endian, C order) inputs and writes each\n"
    "output as DIR/<output name>.npy (default DIR: the current directory). --info lists the\n"
    "module's inputs and outputs. --threads N sets the runtime's thread count (default:\n"
    "KILN_NUM_THREADS, else the number of cores). --repeat N runs N more times after the first\n"
    "(and 3 warm-up runs) and prints the median and lowest latency of one run (inputs in,\n"
    "outputs out: for a GPU module, the copies to and from the device included).\n"
    "--device-inputs (GPU modules) copies each input to a buffer on the device once and sets\n"
    "that: the latency is then the kernels' alone, launches and the final synchronization\n"
    "included, as a framework's timing of operands already on the device.\n";

// A failure with its exit status; main prints "kiln-runner: error: <message>".
struct Failure {
  int status;
  std::string message;
};

[[noreturn]] void usage_error(const std::string& why) { throw Failure{kUsage, why + "\n" + kUsageText}; }
[[noreturn]] void error(const std::string& why) { throw Failure{kFailed, why}; }

void check(kiln_status s, const std::string& what) {
  if (s != KILN_OK) error(what.empty() ? std::string(kiln_last_error()) : what + ": " + kiln_last_error());
}

std::string type_str(DLDataType dtype, int32_t ndim, const int64_t* shape) {
  std::string s = kiln::npy::dtype_name(dtype) + "[";
  for (int32_t i = 0; i < ndim; ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// mkdir -p
void make_dirs(const std::string& dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    struct stat st;
    if (stat(prefix.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) error("--output-dir '" + dir + "': '" + prefix + "' is not a directory");
      continue;
    }
    if (mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
      error("--output-dir '" + dir + "': cannot create '" + prefix + "': " + std::strerror(errno));
  }
}

struct Args {
  std::string module, output_dir = ".";
  std::vector<std::pair<std::string, std::string>> inputs;  // name, file
  int threads = 0;
  int repeat = 0;
  bool info = false;
  bool device_inputs = false;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const std::string& flag) -> std::string {
      size_t eq = arg.find('=');
      if (arg.rfind(flag + "=", 0) == 0) return arg.substr(eq + 1);
      if (i + 1 >= argc) usage_error(flag + " needs a value");
      return argv[++i];
    };
    auto is = [&](const std::string& flag) { return arg == flag || arg.rfind(flag + "=", 0) == 0; };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsageText, stdout);
      std::exit(kOk);
    } else if (arg == "--version") {
      std::printf("kiln-runner (kiln runtime %s)\n", kiln_version());
      std::exit(kOk);
    } else if (is("--input") || arg == "-i") {
      std::string spec = value(arg == "-i" ? "-i" : "--input");
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
        usage_error("--input expects NAME=FILE.npy, got '" + spec + "'");
      a.inputs.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
    } else if (is("--output-dir")) {
      a.output_dir = value("--output-dir");
      if (a.output_dir.empty()) usage_error("--output-dir is empty");
    } else if (is("--threads")) {
      std::string v = value("--threads");
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 1 || n > 4096) usage_error("--threads expects a count >= 1, got '" + v + "'");
      a.threads = static_cast<int>(n);
    } else if (is("--repeat")) {
      std::string v = value("--repeat");
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 1 || n > 1000000) usage_error("--repeat expects a count >= 1, got '" + v + "'");
      a.repeat = static_cast<int>(n);
    } else if (arg == "--info") {
      a.info = true;
    } else if (arg == "--device-inputs") {
      a.device_inputs = true;
    } else if (!arg.empty() && arg[0] == '-') {
      usage_error("unknown option '" + arg + "'");
    } else if (a.module.empty()) {
      a.module = arg;
    } else {
      usage_error("one module only: got '" + a.module + "' and '" + arg + "'");
    }
  }
  if (a.module.empty()) usage_error("no module given");
  return a;
}

// The module and the device buffers its inputs were copied into (--device-inputs), freed
// before it.
struct Module {
  kiln_module* m = nullptr;
  std::vector<void*> device_buffers;
  ~Module() {
    for (void* b : device_buffers) kiln_module_device_free(m, b);
    kiln_module_free(m);
  }
};

// `host` copied into a new buffer on the module's device, as a tensor there.
DLTensor on_device(Module& mod, const DLTensor& host, const std::string& what) {
  kiln_device_info dev{};
  check(kiln_module_device_info(mod.m, &dev), what);
  if (dev.device.device_type == kDLCPU) error(what + ": --device-inputs needs a GPU module; this one runs on the CPU");
  int64_t count = 1;
  for (int32_t d = 0; d < host.ndim; ++d) count *= host.shape[d];
  void* buf = nullptr;
  const uint64_t bytes = static_cast<uint64_t>(count) * kiln::npy::Array::element_bytes(host.dtype);
  check(kiln_module_device_alloc(mod.m, bytes, &buf), what);
  mod.device_buffers.push_back(buf);
  DLTensor t = host;
  t.data = buf;
  t.device = dev.device;
  check(kiln_module_device_copy(mod.m, &host, &t), what);
  return t;
}

void print_info(kiln_module* m) {
  int32_t n_in = 0, n_out = 0;
  check(kiln_module_num_inputs(m, &n_in), "");
  check(kiln_module_num_outputs(m, &n_out), "");
  for (int32_t i = 0; i < n_in + n_out; ++i) {
    bool in = i < n_in;
    kiln_tensor_info info{};
    check(in ? kiln_module_input_info(m, i, &info) : kiln_module_output_info(m, i - n_in, &info), "");
    std::printf("%s %d %s: %s\n", in ? "input" : "output", in ? i : i - n_in, info.name,
                type_str(info.dtype, info.ndim, info.shape).c_str());
  }
}

int run(const Args& a) {
  if (a.threads > 0) kiln_set_num_threads(a.threads);
  Module mod;
  check(kiln_module_load(a.module.c_str(), &mod.m), "");
  if (a.info) {
    print_info(mod.m);
    return kOk;
  }
  for (const auto& [name, file] : a.inputs) {
    kiln::npy::Array arr;
    try {
      arr = kiln::npy::read(file);
    } catch (const kiln::npy::Error& e) {
      error("input '" + name + "': " + e.what());
    }
    DLTensor t{};
    t.data = arr.data.data();
    t.device = {kDLCPU, 0};
    t.ndim = static_cast<int32_t>(arr.shape.size());
    t.dtype = arr.dtype;
    t.shape = arr.shape.data();
    const std::string what = "--input " + name + "=" + file;
    if (a.device_inputs) t = on_device(mod, t, what);
    check(kiln_module_set_input(mod.m, name.c_str(), &t), what);
  }
  check(kiln_module_run(mod.m), "");
  if (a.repeat > 0) {
    using Clock = std::chrono::steady_clock;
    for (int i = 0; i < 3; ++i) check(kiln_module_run(mod.m), "");
    std::vector<double> ms;
    for (int i = 0; i < a.repeat; ++i) {
      Clock::time_point t0 = Clock::now();
      check(kiln_module_run(mod.m), "");
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("latency: median %.4f ms, min %.4f ms over %d runs\n", ms[ms.size() / 2], ms[0], a.repeat);
  }
  make_dirs(a.output_dir);
  int32_t n_out = 0;
  check(kiln_module_num_outputs(mod.m, &n_out), "");
  for (int32_t i = 0; i < n_out; ++i) {
    kiln_tensor_info info{};
    check(kiln_module_output_info(mod.m, i, &info), "");
    DLTensor view{};
    check(kiln_module_get_output_view(mod.m, i, &view), "");
    kiln::npy::Array out;
    out.dtype = view.dtype;
    out.shape.assign(view.shape, view.shape + view.ndim);
    size_t bytes = static_cast<size_t>(out.num_elements()) * kiln::npy::Array::element_bytes(view.dtype);
    const uint8_t* p = static_cast<const uint8_t*>(view.data) + view.byte_offset;
    out.data.assign(p, p + bytes);
    std::string path = a.output_dir + "/" + info.name + ".npy";
    try {
      kiln::npy::write(path, out);
    } catch (const kiln::npy::Error& e) {
      error(std::string("output '") + info.name + "': " + e.what());
    }
    std::printf("%s: %s -> %s\n", info.name, type_str(view.dtype, view.ndim, view.shape).c_str(), path.c_str());
  }
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_args(argc, argv));
  } catch (const Failure& f) {
    std::fprintf(stderr, "kiln-runner: %s%s\n", f.status == kUsage ? "" : "error: ", f.message.c_str());
    return f.status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln-runner: error: %s\n", e.what());
    return kFailed;
  }
}
