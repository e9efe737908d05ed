#include "kiln/codegen/gpu_build.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "ir/shared_storage.h"
#include "kiln/support/error.h"
#include "source/codegen_c.h"
#include "source/nvrtc_compile.h"

namespace kiln::codegen {

bool cuda_codegen_available() { return source::nvrtc_available(); }

ir::GpuLimits gpu_limits(const Target& target) {
  ir::GpuLimits l;
  l.max_threads_per_block = target.gpu.max_threads_per_block;
  // CUDA kernels past the static 48 KiB take dynamic shared memory (build_gpu), up to the opt-in
  // limit; OpenCL's limit is its static one (GpuFacts).
  l.max_shared_bytes = target.gpu.max_dynamic_shared_bytes;
  return l;
}

// A CUDA kernel whose shared buffers (double buffers doubled) pass the 48 KiB a block may declare
// statically takes them as dynamic shared memory, which the runtime opts the kernel in to
// (cuFuncSetAttribute) up to the target's limit: the printer carves the buffers out of it.
void set_dynamic_shared(const ir::PrimFunc& kernel, const Target& target, ir::KernelLaunch* launch) {
  if (target.kind != TargetKind::kCUDA) return;
  const int64_t bytes = ir::plan_shared_storage(kernel.body).bytes;
  if (bytes <= target.gpu.max_shared_bytes) return;
  KILN_USER_CHECK(bytes <= target.gpu.max_dynamic_shared_bytes)
      << "kernel '" << kernel.name << "': " << bytes << " bytes of shared memory per block, more than the "
      << target.gpu.max_dynamic_shared_bytes << " target '" << target.str() << "' allows with the opt-in";
  launch->dynamic_shared_bytes = bytes;
}

void print_gpu_source(GpuModule* m) {
  const source::Language lang =
      m->target.kind == TargetKind::kCUDA ? source::Language::kCUDA : source::Language::kOpenCL;
  m->source = source::print_module(m->programs, source::dialect(lang), m->race_check, &m->race_checked_buffers);
}

void compile_gpu_source(GpuModule* m, const std::vector<int>& image_sms) {
  if (m->target.kind != TargetKind::kCUDA) return;
  const Target& target = m->target;
  source::NvrtcResult r = source::compile_cuda(m->source, image_sms.empty() ? target.cuda_image_sms() : image_sms,
                                               /*needs_headers=*/false, target.gpu.arch_specific);
  m->images = std::move(r.images);
  std::map<std::string, int64_t> dynamic_shared;
  for (const ir::DeviceProgram& p : m->programs)
    for (const ir::KernelLaunch& l : p.launches) dynamic_shared[l.kernel] = l.dynamic_shared_bytes;
  for (const source::KernelResources& k : r.resources) {
    m->max_registers = std::max(m->max_registers, k.registers);
    m->max_spill_bytes = std::max(m->max_spill_bytes, k.spill_stores_bytes + k.spill_loads_bytes);
    const int64_t dynamic = dynamic_shared[k.kernel];
    m->notes.push_back(fmt::format("kernel {} (sm_{}): {} registers, {} bytes shared{}, {} bytes stack, spills {}/{} bytes",
                                   k.kernel, k.sm, k.registers, k.shared_bytes,
                                   dynamic ? fmt::format(" + {} dynamic", dynamic) : "", k.stack_bytes,
                                   k.spill_stores_bytes, k.spill_loads_bytes));
  }
  m->notes.push_back(fmt::format("NVRTC compiled {} kernels for {} images in {:.2f} s", r.resources.size(),
                                 m->images.size(), r.seconds));
}

namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  KILN_USER_CHECK(out.good()) << "--save-device-code: cannot write '" << path << "': " << std::strerror(errno);
}

// The PTX of `kernels` alone: the module PTX's header (up to its first entry) and their
// `.entry` blocks. kiln's kernels call no .func (its helpers are inlined), so each entry stands
// alone.
std::string ptx_of(const std::string& ptx, const std::vector<ir::PrimFunc>& kernels) {
  size_t first = ptx.find(".visible .entry");
  if (first == std::string::npos) return ptx;
  std::string out = ptx.substr(0, first);
  for (const ir::PrimFunc& k : kernels) {
    size_t at = ptx.find(".visible .entry " + k.name + "(");
    if (at == std::string::npos) continue;
    // The entry's body ends at the closing brace of its outermost block.
    size_t open = ptx.find('{', at);
    int depth = 0;
    size_t end = open;
    for (; end < ptx.size(); ++end) {
      if (ptx[end] == '{') ++depth;
      if (ptx[end] == '}' && --depth == 0) break;
    }
    out += ptx.substr(at, end + 1 - at) + "\n\n";
  }
  return out;
}

}  // namespace

std::vector<std::string> write_device_code(const GpuModule& m, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  KILN_USER_CHECK(!ec) << "--save-device-code: cannot create '" << dir << "': " << ec.message();
  const bool cuda = m.target.kind == TargetKind::kCUDA;
  const source::Dialect& d = source::dialect(cuda ? source::Language::kCUDA : source::Language::kOpenCL);
  const std::string ext = cuda ? ".cu" : ".cl";
  std::string ptx;
  for (const GpuImage& im : m.images)
    if (im.ptx) ptx = std::string(im.bytes.c_str());  // without its terminating NUL
  std::vector<std::string> files;
  auto write = [&](const std::string& name, const std::string& text) {
    files.push_back(dir + "/" + name);
    write_text(files.back(), text);
  };
  for (const ir::DeviceProgram& p : m.programs) {
    write(p.name + ext, source::print_module({p}, d, m.race_check));
    if (!ptx.empty()) write(p.name + ".ptx", ptx_of(ptx, p.kernels));
  }
  write("module" + ext, m.source);
  return files;
}

std::vector<runtime::DeviceImage> device_images(const GpuModule& m) {
  std::vector<runtime::DeviceImage> images;
  if (m.target.kind == TargetKind::kOpenCL) {
    runtime::DeviceImage im;
    im.format = runtime::DeviceImage::kOpenCLSource;
    im.bytes = m.source;
    images.push_back(im);
  }
  for (const GpuImage& g : m.images) {
    runtime::DeviceImage im;
    im.format = g.ptx ? runtime::DeviceImage::kPTX : runtime::DeviceImage::kCubin;
    im.sm = g.sm;
    im.bytes = g.bytes;
    images.push_back(im);
  }
  return images;
}

runtime::LaunchDims launch_dims(const ir::KernelLaunch& launch) {
  runtime::LaunchDims d;
  for (int i = 0; i < 3; ++i) {
    d.grid[i] = static_cast<uint32_t>(launch.grid[i]);
    d.block[i] = static_cast<uint32_t>(launch.block[i]);
  }
  d.dynamic_shared_bytes = static_cast<uint32_t>(launch.dynamic_shared_bytes);
  return d;
}

}  // namespace kiln::codegen
