// codegen::export_library: one shared library holding kernels, plan, weights and metadata, in
// the layout of runtime/module_format.h.
//
//   1. check the model (plan well formed, every node's kernel compiled, weights match the plan)
//   2. kernels.o: the object code compile() made (codegen::Module::object_code)
//   3. data.o: emitted by LLVM directly -- the binary plan, the weights
//      blob (64-byte aligned), the metadata symbols and the kiln_parallel_for trampoline. No C
//      compiler is involved, so data of any size costs no parsing and no source text.
//   4. `cc -shared` links the two (the only tool needed on the compiling machine is a linker
//      driver; found at run time: $KILN_CC, else cc, gcc or clang in PATH; for another
//      architecture's triple its cross driver, aarch64-linux-gnu-gcc)
//   5. the linker's output is renamed over `path`, so a process that has the old file loaded (mapped)
//      never sees it change under it.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "kiln/codegen/build.h"
#include "codegen/export_library.h"
#include "kiln/runtime/device_graph.h"
#include "runtime/module_format.h"
#include "kiln/runtime/module_loader.h"
#include "kiln/runtime/version.h"
#include "kiln/support/error.h"
#include "support/subprocess.h"
#include "llvm/llvm_util.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>


namespace kiln::codegen {
namespace {

// The linker driver for `target`: $KILN_CC, else cc, gcc or clang in PATH for the host's
// architecture, and for another the cross driver of Debian's toolchains, <arch>-linux-gnu-gcc.
std::string find_linker(const Target& target) {
  auto is_exec = [](const std::string& p) { return access(p.c_str(), X_OK) == 0; };
  auto search_path = [&](const std::string& name) -> std::string {
    if (name.find('/') != std::string::npos) return is_exec(name) ? name : "";
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "");
    std::string dir;
    while (std::getline(dirs, dir, ':'))
      if (!dir.empty() && is_exec(dir + "/" + name)) return dir + "/" + name;
    return "";
  };
  if (const char* env = std::getenv("KILN_CC"); env != nullptr && *env != '\0') {
    std::string found = search_path(env);
    KILN_USER_CHECK(!found.empty()) << "export_library: the linker driver '" << env
                                    << "' named by KILN_CC was not found or is not executable";
    return found;
  }
  llvm::Triple triple(target.triple), host(llvm::sys::getProcessTriple());
  if (triple.getArch() != host.getArch()) {
    KILN_USER_CHECK(triple.isOSLinux())
        << "export_library: no cross linker driver is known for target triple '" << target.triple
        << "' (kiln finds <arch>-linux-gnu-gcc for Linux targets); name one in KILN_CC";
    std::string env = triple.getEnvironmentName().empty() ? "gnu" : triple.getEnvironmentName().str();
    std::string cross = llvm::Triple::getArchTypeName(triple.getArch()).str() + "-linux-" + env + "-gcc";
    std::string found = search_path(cross);
    KILN_USER_CHECK(!found.empty()) << "export_library: linking a module for " << target.triple
                                    << " needs the cross linker driver '" << cross
                                    << "', which is not in PATH (Debian package gcc-"
                                    << cross.substr(0, cross.size() - 4) << "); or name a linker driver in KILN_CC";
    return found;
  }
  for (const char* name : {"cc", "gcc", "clang"}) {
    std::string found = search_path(name);
    if (!found.empty()) return found;
  }
  KILN_THROW() << "export_library: no C compiler to link the library with (looked for cc, gcc and clang in PATH); "
                  "install one or name it in KILN_CC";
  return "";
}

std::string run_tool(const std::vector<std::string>& argv, const std::string& log_path) {
  support::ProgramOutcome run = support::run_program(argv, log_path);
  if (!run.start_error.empty()) return run.start_error;
  if (run.ok()) return "";
  const int status = run.status;
  std::ostringstream os;
  os << "'" << argv[0] << "' failed ("
     << (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status)) : std::string("killed by a signal"))
     << "):\n"
     << support::read_log(log_path);
  return os.str();
}

// A scratch directory removed with everything in it when the export ends, however it ends.
struct TempDir {
  std::string path;
  std::vector<std::string> files;
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/kiln_export_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    KILN_USER_CHECK(mkdtemp(buf.data()) != nullptr)
        << "export_library: cannot create a temporary directory in " << (tmp && *tmp ? tmp : "/tmp") << ": "
        << std::strerror(errno);
    path = buf.data();
  }
  std::string file(const std::string& name) {
    files.push_back(path + "/" + name);
    return files.back();
  }
  ~TempDir() {
    for (const std::string& f : files) unlink(f.c_str());
    rmdir(path.c_str());
  }
};

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  KILN_USER_CHECK(out.good()) << "export_library: cannot write '" << path << "': " << std::strerror(errno);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  KILN_USER_CHECK(out.good()) << "export_library: cannot write '" << path << "'";
}

// Fails early (before the expensive build) if `path` cannot be written.
void check_destination(const std::string& path) {
  KILN_USER_CHECK(!path.empty()) << "export_library: empty output path";
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  struct stat st;
  KILN_USER_CHECK(stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      << "export_library: cannot write '" << path << "': directory '" << dir << "' does not exist";
  KILN_USER_CHECK(access(dir.c_str(), W_OK) == 0)
      << "export_library: cannot write '" << path << "': directory '" << dir << "' is not writable";
  KILN_USER_CHECK(stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode))
      << "export_library: cannot write '" << path << "': it exists and is not a regular file";
}

// The data object: metadata, plan and weights as constant globals under the names of
// module_format.h, the writable thread-pool slot, and the hidden kiln_parallel_for trampoline
// that calls through it (so the kernels' calls bind inside the library).
std::string emit_data(llvm::Module& m, llvm::TargetMachine& tm);

// A device module's object has the device magic and images, and no slot or trampoline (it has
// no CPU kernels).
std::string data_object(const runtime::GraphPlan& plan, const std::vector<uint8_t>& weights, const Target& target,
                        const std::string* device_images = nullptr) {
  llvm::LLVMContext ctx;
  llvm::Module m("kiln_module_data", ctx);
  std::unique_ptr<llvm::TargetMachine> tm = llvm_backend::create_target_machine(target, 2);
  m.setTargetTriple(target.triple);
  m.setDataLayout(tm->createDataLayout());
  llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);
  llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);
  llvm::PointerType* ptr = llvm::PointerType::getUnqual(ctx);

  auto add = [&](const char* name, llvm::Constant* init, uint64_t align) {
    auto* g = new llvm::GlobalVariable(m, init->getType(), /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage,
                                       init, name);
    g->setAlignment(llvm::Align(align));
  };
  auto add_string = [&](const char* name, const std::string& s) {
    add(name, llvm::ConstantDataArray::getString(ctx, s, /*AddNull=*/true), 1);
  };
  add_string(KILN_SYM_MAGIC, device_images ? KILN_MODULE_MAGIC_DEVICE : KILN_MODULE_MAGIC);
  add_string(KILN_SYM_VERSION, plan.kiln_version);
  add_string(KILN_SYM_TARGET, plan.target);
  std::string plan_bytes = runtime::encode_plan(plan);
  add(KILN_SYM_PLAN, llvm::ConstantDataArray::getString(ctx, plan_bytes, /*AddNull=*/false), 8);
  add(KILN_SYM_PLAN_SIZE, llvm::ConstantInt::get(i64, plan_bytes.size()), 8);
  // Padded to a whole, non-empty number of 64-byte blocks: a zero-sized symbol could share
  // its address with the next one, and kernels may read whole vectors of the last constant.
  std::string blob(weights.begin(), weights.end());
  blob.resize((blob.size() / KILN_MODULE_WEIGHTS_ALIGNMENT + 1) * KILN_MODULE_WEIGHTS_ALIGNMENT, '\0');
  add(KILN_SYM_WEIGHTS, llvm::ConstantDataArray::getString(ctx, blob, /*AddNull=*/false), KILN_MODULE_WEIGHTS_ALIGNMENT);
  add(KILN_SYM_WEIGHTS_SIZE, llvm::ConstantInt::get(i64, weights.size()), 8);
  add(KILN_SYM_WEIGHTS_CHECKSUM, llvm::ConstantInt::get(i64, plan.weights_checksum), 8);
  if (device_images) {
    add(KILN_SYM_DEVICE_IMAGES, llvm::ConstantDataArray::getString(ctx, *device_images, /*AddNull=*/false), 16);
    add(KILN_SYM_DEVICE_IMAGES_SIZE, llvm::ConstantInt::get(i64, device_images->size()), 8);
    return emit_data(m, *tm);
  }

  auto* slot = new llvm::GlobalVariable(m, ptr, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
                                        llvm::ConstantPointerNull::get(ptr), KILN_SYM_PARALLEL_FOR_SLOT);
  auto* fty = llvm::FunctionType::get(i32, {ptr, ptr, i32}, false);
  auto* fn = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, "kiln_parallel_for", m);
  fn->setVisibility(llvm::GlobalValue::HiddenVisibility);
  auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  auto* call = llvm::BasicBlock::Create(ctx, "call", fn);
  auto* unset = llvm::BasicBlock::Create(ctx, "unset", fn);
  llvm::IRBuilder<> b(entry);
  llvm::Value* target_fn = b.CreateLoad(ptr, slot, "runtime_parallel_for");
  b.CreateCondBr(b.CreateIsNull(target_fn), unset, call);
  b.SetInsertPoint(call);
  std::vector<llvm::Value*> args;
  for (llvm::Argument& a : fn->args()) args.push_back(&a);
  llvm::CallInst* result = b.CreateCall(fty, target_fn, args);
  result->setTailCall();
  b.CreateRet(result);
  b.SetInsertPoint(unset);
  b.CreateRet(llvm::ConstantInt::get(i32, KILN_MODULE_NO_RUNTIME, /*isSigned=*/true));
  return emit_data(m, *tm);
}

std::string emit_data(llvm::Module& m, llvm::TargetMachine& tm) {
  std::string err;
  llvm::raw_string_ostream es(err);
  KILN_CHECK(!llvm::verifyModule(m, &es)) << "export_library: invalid data module: " << es.str();
  return llvm_backend::emit_machine_code(m, tm, /*assembly=*/false);
}

// The plan as it goes into the library: the target the code was built for, in full (the loader
// checks its features; make_graph_plan wrote the same string), this kiln's version, the weights'
// size and checksum.
runtime::GraphPlan finished_plan(const runtime::GraphPlan& model_plan, const std::vector<std::string>& kernels,
                                 const std::vector<uint8_t>& weights, const Target& target) {
  KILN_USER_CHECK(target.is_gpu() == (model_plan.device_type != kDLCPU))
      << "export_library: the plan's device type does not fit its target '" << target.str() << "'";
  KILN_USER_CHECK(model_plan.target.empty() || model_plan.target == target.str())
      << "export_library: the plan was made for target '" << model_plan.target << "', its kernels were built for '"
      << target.str() << "'";
  runtime::GraphPlan plan = model_plan;
  plan.target = target.str();
  plan.kiln_version = KILN_VERSION_STRING;
  int64_t size = static_cast<int64_t>(weights.size());
  KILN_USER_CHECK(plan.weights_bytes == 0 || plan.weights_bytes == size)
      << "export_library: the plan expects " << plan.weights_bytes << " bytes of weights, the model has " << size;
  uint64_t checksum = runtime::fnv1a64(weights.data(), weights.size());
  KILN_USER_CHECK(plan.weights_checksum == 0 || plan.weights_checksum == checksum)
      << "export_library: the model's weights do not match the checksum its plan records (stale plan?)";
  plan.weights_bytes = size;
  plan.weights_checksum = checksum;
  std::string problem = runtime::plan_problem(plan, size);
  KILN_USER_CHECK(problem.empty()) << "export_library: malformed plan: " << problem;

  std::set<std::string> compiled;
  for (const std::string& name : kernels) {
    KILN_USER_CHECK(name.rfind("kiln_", 0) != 0)
        << "export_library: kernel name '" << name << "' is reserved (kiln_* names belong to the runtime)";
    compiled.insert(name);
  }
  for (size_t n = 0; n < plan.nodes.size(); ++n)
    KILN_USER_CHECK(compiled.count(plan.nodes[n].kernel))
        << "export_library: node " << n << " '" << plan.nodes[n].label << "' calls kernel '" << plan.nodes[n].kernel
        << "', which is not among the model's kernels";
  return plan;
}

}  // namespace

namespace {

// Links `objects` into `path`: the linker writes next to it (same file system, so the rename is
// atomic and nothing big is copied twice), then renames over it.
void link_library(const std::string& linker, const std::vector<std::string>& objects, const std::string& path,
                  TempDir& tmp) {
  std::string staging = path + ".tmp" + std::to_string(getpid());
  // -z defs: a kernel calling a function no library provides fails here, not on the user's
  // machine. -Bsymbolic: the module's own symbols bind inside it. libm: kernels call expf & co.
  std::vector<std::string> argv = {linker, "-shared", "-o", staging};
  argv.insert(argv.end(), objects.begin(), objects.end());
  for (const char* flag : {"-Wl,-z,defs", "-Wl,-Bsymbolic", "-Wl,-z,noexecstack", "-lm"}) argv.push_back(flag);
  std::string error = run_tool(argv, tmp.file("link.log"));
  if (!error.empty()) unlink(staging.c_str());
  KILN_USER_CHECK(error.empty()) << "export_library: linking '" << path << "' failed: " << error;
  if (rename(staging.c_str(), path.c_str()) != 0) {
    int e = errno;
    unlink(staging.c_str());
    KILN_THROW() << "export_library: cannot write '" << path << "': " << std::strerror(e);
  }
}

}  // namespace

void export_library(const runtime::GraphPlan& model_plan, const Module& kernels, const std::vector<uint8_t>& weights,
                    const std::string& path) {
  check_destination(path);
  const Target& target = kernels.target();
  KILN_USER_CHECK(!target.is_gpu()) << "export_library: target '" << target.str()
                                    << "' is a GPU target (its modules are written by export_device_library)";
  runtime::GraphPlan plan = finished_plan(model_plan, kernels.function_names(), weights, target);
  std::string linker = find_linker(target);
  TempDir tmp;
  std::string kernels_o = tmp.file("kernels.o"), data_o = tmp.file("data.o");
  write_file(kernels_o, kernels.object_code());
  write_file(data_o, data_object(plan, weights, target));
  link_library(linker, {kernels_o, data_o}, path, tmp);
}

void export_device_library(const runtime::GraphPlan& model_plan, const GpuModule& device,
                           const std::vector<uint8_t>& weights, const std::string& path) {
  check_destination(path);
  std::vector<std::string> kernels;
  for (const ir::DeviceProgram& p : device.programs)
    for (const ir::PrimFunc& k : p.kernels) kernels.push_back(k.name);
  runtime::GraphPlan plan = finished_plan(model_plan, kernels, weights, device.target);
  const std::vector<runtime::DeviceImage> images = device_images(device);
  KILN_USER_CHECK(!images.empty()) << "export_library: the CUDA module was not compiled (no images)";
  // The library is data for the host that runs the runtime.
  const Target host = Target::host();
  const std::string blob = runtime::encode_device_images(images);
  TempDir tmp;
  std::string data_o = tmp.file("data.o");
  write_file(data_o, data_object(plan, weights, host, &blob));
  link_library(find_linker(host), {data_o}, path, tmp);
}

}  // namespace kiln::codegen
