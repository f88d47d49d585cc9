#pragma once
// Choosing the OpenCL device a candidate runs on.
#include <string>
#include <vector>

#include "opencl/cl.hpp"

namespace mblast::opencl {

struct DeviceEntry {
  std::size_t platform_index = 0;
  std::size_t device_index = 0;
  cl::Device device;
  std::string name;
  std::string platform_name;
  bool is_cpu = false;
  bool is_gpu = false;
};

// Every device of every platform; empty when there is no OpenCL platform.
std::vector<DeviceEntry> list_devices();

// The device a spec names: "" or "cpu" the first CPU device, "gpu" the first GPU, "P:D" device D
// of platform P, anything else the first device whose name contains it (case-insensitive).
// Throws input_error listing the devices when none matches.
DeviceEntry select_device(const std::string& spec);

}  // namespace mblast::opencl
