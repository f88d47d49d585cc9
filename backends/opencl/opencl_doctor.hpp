#pragma once
#include <functional>
#include <string>
#include <vector>

#include "mblast/doctor_check.hpp"

namespace mblast {

std::vector<std::string> opencl_doctor_names();
std::vector<DoctorCheck> opencl_doctor(const std::function<bool(const std::string&)>& wanted);

}  // namespace mblast
