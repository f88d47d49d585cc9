#pragma once
// The child side of the isolated OpenCL runner: the body of the hidden subcommand
// `mblast internal opencl-run`, which opencl_backend.cpp starts for each candidate.
#include <filesystem>
#include <string>
#include <vector>

namespace mblast::opencl {

struct ChildRequest {
  std::filesystem::path candidate;  // an OpenCL candidate (opencl_candidate.hpp), or
  std::filesystem::path gemm;       // a GEMM record to run through CLBlast (clblast_gemm.hpp)
  std::vector<std::filesystem::path> bundles;
  std::filesystem::path out_dir;
  int runs = 30;
  std::string device;
};

// Runs the candidate (or the library's GEMM) on the bundles, writes out_dir/output-<i>.mbtb (the
// produced outputs of bundle i) and prints one JSON object on stdout: RunReport::to_json() plus
// "outputs" (the file names), or {"setup_error", "hint", "exit_code"} when the job itself is wrong
// (an unreadable file, no such device). Whatever the kernels print goes to stderr. Returns the exit
// code.
int run_child(const ChildRequest& request);

}  // namespace mblast::opencl
