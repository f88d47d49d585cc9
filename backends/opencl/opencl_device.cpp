#include "opencl/opencl_device.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

#include "mblast/error.hpp"

namespace mblast::opencl {

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::optional<std::size_t> index_of(std::string_view text) {
  std::size_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

bool matches(const DeviceEntry& entry, const std::string& spec) {
  if (spec.empty() || spec == "cpu") return entry.is_cpu;
  if (spec == "gpu") return entry.is_gpu;
  if (const auto colon = spec.find(':'); colon != std::string::npos) {
    const auto platform = index_of(std::string_view(spec).substr(0, colon));
    const auto device = index_of(std::string_view(spec).substr(colon + 1));
    if (platform && device) {
      return entry.platform_index == *platform && entry.device_index == *device;
    }
  }
  return lower(entry.name).find(lower(spec)) != std::string::npos;
}

}  // namespace

std::vector<DeviceEntry> list_devices() {
  std::vector<cl::Platform> platforms;
  try {
    cl::Platform::get(&platforms);
  } catch (const cl::Error&) {
    return {};  // the ICD loader reports "no platform" as an error
  }
  std::vector<DeviceEntry> entries;
  for (std::size_t p = 0; p < platforms.size(); ++p) {
    std::vector<cl::Device> devices;
    try {
      platforms[p].getDevices(CL_DEVICE_TYPE_ALL, &devices);
    } catch (const cl::Error&) {
      continue;  // a platform without devices
    }
    for (std::size_t d = 0; d < devices.size(); ++d) {
      const auto type = devices[d].getInfo<CL_DEVICE_TYPE>();
      entries.push_back({p, d, devices[d], devices[d].getInfo<CL_DEVICE_NAME>(),
                         platforms[p].getInfo<CL_PLATFORM_NAME>(), (type & CL_DEVICE_TYPE_CPU) != 0,
                         (type & CL_DEVICE_TYPE_GPU) != 0});
    }
  }
  return entries;
}

DeviceEntry select_device(const std::string& spec) {
  const auto entries = list_devices();
  if (entries.empty()) {
    throw input_error(
        "no OpenCL device found (no platform in /etc/OpenCL/vendors, or none with "
        "devices)",
        "install an OpenCL driver, e.g. apt-get install pocl-opencl-icd for the CPU");
  }
  for (const auto& entry : entries) {
    if (matches(entry, spec)) return entry;
  }
  std::string available;
  for (const auto& entry : entries) {
    available += "\n  " + std::to_string(entry.platform_index) + ":" +
                 std::to_string(entry.device_index) + "  " + entry.name + " (" +
                 (entry.is_cpu   ? "CPU"
                  : entry.is_gpu ? "GPU"
                                 : "other") +
                 ", " + entry.platform_name + ")";
  }
  throw input_error("no OpenCL device matches '" + spec + "'; the devices are:" + available,
                    "pass cpu, gpu, PLATFORM:DEVICE or part of a device name");
}

}  // namespace mblast::opencl
