// open_device and what the backends share (device_internal.h).
#include <sstream>

#include "device_internal.h"

namespace kiln::runtime {

DeviceModule::~DeviceModule() = default;
DeviceAPI::~DeviceAPI() = default;

std::unique_ptr<DeviceAPI> open_device(DeviceKind kind, int ordinal) {
  KILN_USER_CHECK(ordinal >= 0) << "device ordinal " << ordinal << " is negative";
  return kind == DeviceKind::kCUDA ? device::open_cuda(ordinal) : device::open_opencl(ordinal);
}

namespace device {

std::string describe_images(const std::vector<DeviceImage>& images) {
  if (images.empty()) return "no image";
  std::ostringstream os;
  for (size_t i = 0; i < images.size(); ++i) {
    const DeviceImage& image = images[i];
    if (i) os << ", ";
    if (image.format == DeviceImage::kOpenCLSource)
      os << "OpenCL C";
    else
      os << (image.format == DeviceImage::kCubin ? "cubin" : "PTX") << " sm_" << image.sm;
  }
  return os.str();
}

void check_launch_dims(const std::string& kernel, const LaunchDims& dims) {
  for (int i = 0; i < 3; ++i)
    KILN_USER_CHECK(dims.grid[i] > 0 && dims.block[i] > 0)
        << "kernel '" << kernel << "': launch with an empty dimension (grid " << dims.grid[0] << "x" << dims.grid[1]
        << "x" << dims.grid[2] << ", block " << dims.block[0] << "x" << dims.block[1] << "x" << dims.block[2] << ")";
}

}  // namespace device
}  // namespace kiln::runtime
