#pragma once
// The device's speed-of-light ceilings for CUDA judging: measured once per machine and device by
// the worker, cached under the cache folder, and applied to the signatures of a result.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cuda/worker_pool.hpp"
#include "mblast/eval_options.hpp"

namespace mblast {

// The worker's request that measures the device's ceilings (worker/protocol.schema.json).
nlohmann::json worker_ceilings_request(const std::string& device);

// The device's measured copy bandwidth and matmul rates (fp32; TF32, bf16 and fp16 where the
// worker gave them), from the cache while the worker's way of measuring them is unchanged, else
// measured by a worker of `workers`; null (with a warning) when they could not be measured.
// `measured_seconds` gets what measuring took here, 0 when cached. Throws as refuse_unstartable.
nlohmann::json device_ceilings(const EvalOptions& options, const std::filesystem::path& cache_dir,
                               WorkerPool& workers, double& measured_seconds);

// The fractions of the device's ceilings in the result's signatures ("signature",
// "reference_signature"), each against its own measured time.
void add_speed_of_light_to_signatures(nlohmann::json& result, const nlohmann::json& ceilings);

}  // namespace mblast
