#pragma once
// One check of `mblast doctor`, as a backend reports it: the backends' probes fill these, the CLI
// command (mblast/doctor.hpp) runs and prints them.
#include <string>

namespace mblast {

struct DoctorCheck {
  std::string name;
  bool ok = false;
  std::string detail;
  std::string fix;  // empty when ok
  // The OpenCL and RVV backends (and CI, which has no GPU) cannot work without this check.
  bool required_for_cpu_backends = false;
};

}  // namespace mblast
