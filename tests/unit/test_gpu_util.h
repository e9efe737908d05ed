// Running a GpuModule's programs on the OpenCL device (PoCL on CPUs) with host arrays: the
// numerical check of GPU schedules on machines without a GPU.
#pragma once

#include <catch2/catch.hpp>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kiln/codegen/gpu_build.h"
#include "kiln/pipeline.h"
#include "kiln/ir/functor.h"
#include "device/device_api.h"
#include "kiln/runtime/ndarray.h"
#include "kiln/support/error.h"

namespace kiln::test {

// How many times `what` occurs in `text` (instructions in PTX, barriers in printed kernels).
inline int64_t occurrences(const std::string& text, const std::string& what) {
  int64_t c = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++c;
  return c;
}

// The launch of kernel `name` on a block of `threads` threads along x (what insert_thread_sync
// reads: the block's extents).
inline ir::KernelLaunch launch_of(const std::string& name, int64_t threads) {
  ir::KernelLaunch l;
  l.kernel = name;
  l.block = {threads, 1, 1};
  return l;
}

// `funcs` built through NVRTC for the target's own sm alone: its cubin (ptxas assembled the PTX:
// registers, shared memory and spills in the module's notes) and its PTX, images[1].
inline codegen::GpuModule build_own_sm(const std::vector<ir::PrimFunc>& funcs, const Target& t) {
  codegen::GpuBuildOptions own;
  own.image_sms = {t.gpu.sm};
  codegen::GpuModule mod = kiln::build_gpu(funcs, t, own);
  REQUIRE(mod.images.size() == 2);
  CHECK(mod.images[0].sm == t.gpu.sm);
  CHECK(!mod.images[0].ptx);
  CHECK(!mod.images[0].bytes.empty());
  REQUIRE(mod.images[1].ptx);
  return mod;
}

// The OpenCL device, opened once; null (and `why` set) when this machine has none. PoCL's
// kernel cache ($POCL_CACHE_DIR) is not safe for processes sharing it (pocl/pocl#1480), and
// CTest runs test cases as concurrent processes: each test case gets a folder of its own.
inline runtime::DeviceAPI* opencl_device(std::string* why) {
  static std::string error;
  static std::unique_ptr<runtime::DeviceAPI> dev = [] {
    if (const char* base = std::getenv("POCL_CACHE_DIR"); base && *base) {
      std::string dir = std::string(base) + "/";
      for (char c : Catch::getResultCapture().getCurrentTestName())
        dir += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      setenv("POCL_CACHE_DIR", dir.c_str(), 1);
    }
    try {
      return runtime::open_device(runtime::DeviceKind::kOpenCL);
    } catch (const Error& e) {
      error = e.what();
      return std::unique_ptr<runtime::DeviceAPI>();
    }
  }();
  if (why) *why = error;
  return dev.get();
}

// What a race-checked module found in one run (codegen::GpuBuildOptions::race_check).
struct RaceReport {
  int count = 0;             // racy accesses
  int write_after_read = 0;  // of which writes after reads (the rest: reads after writes)
  std::string first;         // the first, e.g. "dense.X_shared[17]: read after write"; empty if none
};

// A kernel made racy on purpose (GpuBuildOptions::after_sync): its `which`-th barrier (0-based,
// in program order) replaced by a no-op.
class DropBarrier : public ir::StmtMutator {
 public:
  explicit DropBarrier(int which) : which_(which) {}
  int barriers = 0;  // met so far

 protected:
  ir::Stmt visit_evaluate(const ir::EvaluateNode* op, const ir::Stmt& self) override {
    const auto* c = op->value.as<ir::CallNode>();
    if (!c || c->name != "kiln_barrier" || barriers++ != which_) return self;
    return ir::evaluate(ir::make_zero(ir::DataType::i32()));
  }

 private:
  int which_;
};

// Runs program `index` of `m` (an opencl module) on `dev`: every argument copied in, the
// launches in order with device workspace buffers, every argument copied back. A module built
// with race_check gets a zeroed race record after every launch's buffers, reported in `races`.
inline void run_on_device(runtime::DeviceAPI& dev, const codegen::GpuModule& m, std::vector<runtime::NDArray>& args,
                          size_t index = 0, RaceReport* races = nullptr) {
  const ir::DeviceProgram& p = m.programs.at(index);
  KILN_CHECK(args.size() == p.params.size()) << "run_on_device: " << args.size() << " arrays for "
                                             << p.params.size() << " parameters";
  KILN_CHECK(!races || m.race_check) << "run_on_device: races asked of a module built without race_check";
  std::unique_ptr<runtime::DeviceModule> mod = dev.load_module(codegen::device_images(m));
  std::vector<void*> bufs;
  std::vector<size_t> sizes;
  for (runtime::NDArray& a : args) {
    sizes.push_back(a.nbytes());
    bufs.push_back(dev.alloc(sizes.back()));
    dev.copy_to_device(bufs.back(), a.dltensor()->data, sizes.back());
  }
  for (const ir::Buffer& w : p.workspace) {
    bufs.push_back(dev.alloc(static_cast<size_t>(w.num_elements() * w->dtype.bytes())));
  }
  int32_t record[5] = {0, 0, 0, 0, 0};  // the layout GpuBuildOptions::race_check documents
  void* record_buf = nullptr;
  if (m.race_check) {
    record_buf = dev.alloc(sizeof(record));
    dev.copy_to_device(record_buf, record, sizeof(record));
  }
  for (const ir::KernelLaunch& l : p.launches) {
    std::vector<void*> kargs;
    for (int a : l.args) kargs.push_back(bufs[a]);
    if (record_buf) kargs.push_back(record_buf);
    mod->launch(l.kernel, codegen::launch_dims(l), kargs);
  }
  dev.synchronize();
  for (size_t i = 0; i < args.size(); ++i) dev.copy_to_host(args[i].dltensor()->data, bufs[i], sizes[i]);
  for (void* b : bufs) dev.free(b);
  if (!record_buf) return;
  dev.copy_to_host(record, record_buf, sizeof(record));
  dev.free(record_buf);
  if (!races) return;
  races->count = record[0];
  races->write_after_read = record[1];
  races->first = record[0] == 0 ? "" : m.race_checked_buffers.at(record[2] - 1) + "[" + std::to_string(record[3]) +
                                          "]: " + (record[4] == 1 ? "read after write" : "write after read");
}

}  // namespace kiln::test

// Opens the OpenCL device as `dev`, or ends the test case with a warning saying why not.
#define REQUIRE_OPENCL(dev)                                                  \
  std::string why_no_opencl;                                                 \
  kiln::runtime::DeviceAPI* dev = kiln::test::opencl_device(&why_no_opencl); \
  if (!dev) {                                                                \
    WARN("skipped: no OpenCL device: " << why_no_opencl);                    \
    return;                                                                  \
  }
