#pragma once
// The built-in technique "work-group size sweep" (KB transform workgroup_size_sweep): runs a
// candidate with other local sizes and keeps the fastest variant that is still correct. Launches
// whose kernels fix their work-group size (reqd_work_group_size, __local arrays or __local
// arguments) keep theirs.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "native/bundle.hpp"
#include "opencl/opencl_backend.hpp"

namespace mblast::opencl {

struct SweepOptions {
  OpenClOptions run;
  double atol = 1e-4;  // verification tolerance (pass the precision policy's, widened)
  double rtol = 1e-4;
  std::vector<std::size_t> sizes{16, 32, 64, 128, 256};  // work-items per group to try
};

struct SweepVariant {
  std::string label;      // "as written", "local null", "local 64"
  std::string source;     // the variant as a one-file candidate
  nlohmann::json locals;  // per launch, the local size it uses (null: the driver's choice)
  bool correct = false;
  std::string error;     // why it is not correct, when it is not
  double median_ms = 0;  // when correct
};

struct SweepResult {
  std::vector<SweepVariant> variants;  // in the order run, "as written" first
  std::optional<std::size_t> best;     // the fastest correct variant, if any

  // [{"label", "locals", "correct", "median_ms", "error"}] for reports.
  nlohmann::json table() const;
};

// The variants to try, "as written" first: `launch_info` is the runner's per-launch report for
// the candidate as written (RunReport::launches). A size is applied to a launch only where it
// divides the global size and fits the kernel's maximum; duplicates are dropped. Throws
// job_error when no launch may change its size.
std::vector<SweepVariant> workgroup_variants(const std::string& candidate_text,
                                             const nlohmann::json& launch_info,
                                             const std::vector<std::size_t>& sizes);

// Runs the candidate as written, then every variant, each verified against every bundle. Throws
// job_error when the candidate as written fails or no launch may change its size.
SweepResult sweep_workgroup_sizes(const std::string& candidate_text, const BundleSet& bundles,
                                  const SweepOptions& options);

}  // namespace mblast::opencl
