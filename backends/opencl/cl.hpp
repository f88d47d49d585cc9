#pragma once
// The OpenCL C++ bindings as mblast uses them: OpenCL 1.2 API, errors thrown as cl::Error.
#define CL_HPP_ENABLE_EXCEPTIONS
#define CL_HPP_TARGET_OPENCL_VERSION 120
#define CL_HPP_MINIMUM_OPENCL_VERSION 120
#include <CL/opencl.hpp>

#include <string>

namespace mblast::opencl {

// "CL_INVALID_WORK_GROUP_SIZE (-54)" for an error code.
std::string cl_error_name(cl_int code);

// "clEnqueueNDRangeKernel: CL_INVALID_WORK_GROUP_SIZE (-54)".
std::string describe(const cl::Error& error);

}  // namespace mblast::opencl
