#pragma once
// The OpenCL backend's entry point: runs one candidate on a problem's tensor bundles in a child
// process (`mblast internal opencl-run`), so that a candidate that hangs or crashes takes only
// the child down. The candidate format is in opencl_candidate.hpp.
#include <chrono>
#include <filesystem>
#include <string>

#include "native/bundle.hpp"
#include "native/native_backend.hpp"
#include "opencl/clblast_gemm.hpp"

namespace mblast::opencl {

struct OpenClOptions {
  std::string device;  // "" or "cpu", "gpu", "PLATFORM:DEVICE" or part of a device name
  int runs = 30;       // timed forward passes on the first bundle
  std::chrono::seconds timeout{120};  // for the whole child: build, runs and timing
  // The mblast binary to run the child with; empty: $MBLAST_BINARY if set, else this process's
  // own executable (which must then be mblast).
  std::filesystem::path mblast_binary;
  // Where the child runs (include/mblast/remote.hpp): empty for a plain child process here;
  // "local", "ssh:HOST" or "adb:SERIAL" to push the candidate and bundles to a working folder on
  // that target, run `remote_mblast internal opencl-run` there and pull the outputs back.
  std::string remote;
  std::string remote_mblast = "mblast";  // the mblast binary on a ssh or adb target

  // mblast_binary, else mblast::mblast_binary().
  std::filesystem::path binary() const;
};

// Builds, runs and times the candidate. Its failures come back in error_kind ("compile",
// "candidate_runtime", "timeout", "crash"); throws mblast::Error when the job itself is wrong
// (no such device, unreadable files).
NativeRunResult run_opencl_candidate(const std::filesystem::path& candidate,
                                     const BundleSet& bundles, const OpenClOptions& options);

// Computes the GEMM the bundles' record describes with CLBlast, in the same kind of child and with
// the same timing as a candidate (clblast_gemm.hpp). The library's failures, a crash included,
// come back in error_kind like a candidate's.
NativeRunResult run_opencl_gemm(const GemmSpec& spec, const BundleSet& bundles,
                                const OpenClOptions& options);

}  // namespace mblast::opencl
