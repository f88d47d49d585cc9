#pragma once
// Judging native candidates (OpenCL, RVV) on the problem's tensor bundles.
#include <filesystem>

#include <nlohmann/json.hpp>

#include "mblast/eval_options.hpp"
#include "mblast/eval_result.hpp"
#include "native/bundle.hpp"
#include "native/native_backend.hpp"

namespace mblast {

// The precision policy of docs/ARCHITECTURE.md §3 for a native problem: options.atol / rtol,
// widened to 1.5x PyTorch's own fp32 error (bundles' meta "eager") unless the policy is "strict".
Tolerance native_tolerance(const EvalOptions& options, const nlohmann::json& bundle_meta);

// Judges a native candidate (OpenCL or RVV) on the problem's tensor bundles: `backend` builds and
// runs it; each seed's outputs are compared with the float64 reference under the precision
// policy (widened to 1.5x PyTorch's own fp32 error unless strict), and its time (OpenCL) or
// deterministic cost (RVV) is set against the backend's baselines: `speedup` is over the first,
// `speedup_baseline` names it, `baselines` lists them all. Same result fields as evaluate().
nlohmann::json evaluate_native(const EvalOptions& options, const std::filesystem::path& candidate,
                               NativeBackend& backend, const BundleSet& bundles);

}  // namespace mblast
