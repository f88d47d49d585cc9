// `mblast doctor`'s check for the OpenCL backend: platforms and devices through the ICD loader.
#include "opencl/opencl_doctor.hpp"

#include "mblast/probe.hpp"
#include "opencl/opencl_device.hpp"

namespace mblast {
namespace {

using namespace probing;

constexpr const char* kOpenCl = "opencl";

DoctorCheck check_opencl() {
  DoctorCheck check = make_check(kOpenCl, true);
  const std::string fix = "apt-get install ocl-icd-libopencl1 pocl-opencl-icd";
  std::vector<opencl::DeviceEntry> devices;
  try {
    devices = opencl::list_devices();
  } catch (const std::exception& e) {
    return fail(check, std::string("the OpenCL ICD loader failed: ") + e.what(), fix);
  }
  if (devices.empty()) {
    return fail(check, "no OpenCL platform with a device (no ICD in /etc/OpenCL/vendors)", fix);
  }
  std::string detail;
  for (const auto& d : devices) {
    detail += (detail.empty() ? "" : "; ") + std::string("device ") +
              std::to_string(d.platform_index) + ":" + std::to_string(d.device_index) + " (" +
              d.platform_name + "): " + d.name;
  }
  return pass(check, detail + "; choose one with --device P:D, cpu, gpu or part of its name");
}

}  // namespace

std::vector<std::string> opencl_doctor_names() { return {kOpenCl}; }

std::vector<DoctorCheck> opencl_doctor(const std::function<bool(const std::string&)>& wanted) {
  if (!wanted(kOpenCl)) return {};
  return {check_opencl()};
}

}  // namespace mblast
