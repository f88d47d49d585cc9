#pragma once
// The tuned-library baseline of GEMM-shaped problems: CLBlast computes the product on the
// problem's tensor bundles, on the same OpenCL device as the candidates, in the same child process
// (`mblast internal opencl-run --gemm FILE`), so that a library crash takes only the child down.
//
// The shape comes from the bundles' meta.json "gemm" record, which the worker writes when the
// reference forward is one mm or bmm of tensors the bundle holds (mblast_worker/gemm.py): which
// bundle tensors are A and B, how they lie in memory (transposed or not, leading dimension,
// offset, batch stride; all in elements, row-major), and M, N, K and the batch. C = op(A) op(B) is
// written to the bundle's output buffer, poisoned before every call, and checked like a
// candidate's output.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "native/bundle.hpp"
#include "opencl/opencl_runner.hpp"

namespace mblast::opencl {

struct GemmOperand {
  std::string tensor;       // the bundle tensor's name ("input0", "weight", "output0")
  bool transposed = false;  // stored as the transpose of what the product reads
  std::int64_t offset = 0;
  std::int64_t ld = 0;  // leading dimension: elements between rows as stored
  std::int64_t batch_stride = 0;
};

struct GemmSpec {
  std::string op;  // "mm" or "bmm"
  std::int64_t batch = 1;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  GemmOperand a, b, c;

  // The record of the bundles' meta.json; nullopt when it has none (the forward is not one GEMM).
  // Throws input_error when the record is malformed.
  static std::optional<GemmSpec> from_meta(const nlohmann::json& meta);
  static GemmSpec from_json(const nlohmann::json& record);  // throws input_error
  nlohmann::json to_json() const;

  std::string routine() const;   // "Sgemm", or "SgemmStridedBatched" for a batch of more than one
  std::string describe() const;  // "Sgemm M=64 N=64 K=64" plus the batch and transposes
};

// "CLBlast 1.5.3": the version of the library mblast was built with.
std::string clblast_version();

// Runs the product on every bundle (outputs poisoned beforehand) and times it on the first, with
// the method of candidates: `settings.runs` calls after the warm-up ones, each from a marker
// enqueued after the poisoning to the end of the library's last kernel (profiling events). The
// first call, which builds the library's kernels for the device, is the build time. A record
// that does not fit the bundle, or a status other than success, is reported as a
// "candidate_runtime" failure.
RunReport run_clblast_in_process(const GemmSpec& spec, const std::vector<Bundle>& bundles,
                                 const RunSettings& settings);

}  // namespace mblast::opencl
