#include "cuda/device_ceilings.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <system_error>

#include "cuda/cuda_eval.hpp"
#include "mblast/files.hpp"
#include "mblast/python.hpp"
#include "mblast/speed_of_light.hpp"
#include "mblast/support.hpp"

namespace mblast {

namespace fs = std::filesystem;

namespace {

// How the ceilings were measured is the worker's to say (mblast_worker/ceilings.py): a cached
// entry is used only if that file is unchanged since, so a change of method measures them again.
std::string ceilings_method() {
  const auto source = read_file(worker_directory() / "mblast_worker" / "ceilings.py");
  return "ceilings.py " + (source ? sha256_hex(*source).substr(0, 16) : std::string("unreadable"));
}

}  // namespace

nlohmann::json worker_ceilings_request(const std::string& device) {
  return {{"op", "ceilings"}, {"device", device}};
}

// Measuring takes seconds (18.7 s on an H100 host, call 67), hence the cache.
nlohmann::json device_ceilings(const EvalOptions& options, const fs::path& cache_dir,
                               WorkerPool& workers, double& measured_seconds) {
  measured_seconds = 0;
  std::string device = options.device;
  std::replace(device.begin(), device.end(), ':', '-');
  const fs::path path = cache_dir / "ceilings" / (host_name() + "-" + device + ".json");
  const std::string method = ceilings_method();
  if (std::ifstream in(path); in) {
    try {
      auto cached = nlohmann::json::parse(in);
      if (cached.value("method", "") == method) return cached;
    } catch (const nlohmann::json::parse_error&) {
      spdlog::warn("ignoring unreadable ceilings cache {}", path.string());
    }
  }
  const auto started = std::chrono::steady_clock::now();
  auto outcome =
      workers.call(worker_ceilings_request(options.device),
                   options.timeout.count() > 0 ? options.timeout : std::chrono::seconds(600));
  measured_seconds = seconds_since(started);
  refuse_unstartable(outcome, options);
  if (!outcome.completed || !outcome.response.value("error", nlohmann::json()).is_null()) {
    spdlog::warn("could not measure the device's ceilings ({}); no speed-of-light figures",
                 outcome.completed ? outcome.response["error"].dump() : outcome.failure);
    return nullptr;
  }
  nlohmann::json ceilings = {
      {"bandwidth_gbs", outcome.response["bandwidth_gbs"]},
      {"peak_tflops", outcome.response["peak_tflops_fp32"]},
      {"peak_tflops_tf32", outcome.response.value("peak_tflops_tf32", nlohmann::json())},
      {"peak_tflops_bf16", outcome.response.value("peak_tflops_bf16", nlohmann::json())},
      {"peak_tflops_fp16", outcome.response.value("peak_tflops_fp16", nlohmann::json())},
      {"device_name", outcome.response.value("device_name", "")},
      {"method", method},
      {"measured_at", utc_now()}};
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  // Runs of a batch share the cache: a reader sees the old file or the whole new one.
  if (const std::error_code failed = write_file_atomically(path, ceilings.dump(2) + "\n")) {
    spdlog::warn("could not cache the device's ceilings in {}: {}", path.string(),
                 failed.message());
  }
  return ceilings;
}

// The worker profiles; the fractions of the device's ceilings are computed here, as for the
// native backends (speed_of_light.hpp), each signature against its own measured time. The FLOP
// rate is the worker's sol_peak_tflops, each arithmetic unit at its own peak (TF32 convolutions
// under PyTorch's defaults), where it gave one; else the fp32 peak.
void add_speed_of_light_to_signatures(nlohmann::json& result, const nlohmann::json& ceilings) {
  const ForwardWork work = ForwardWork::from_fields(result);
  std::optional<PeakRates> peak;
  if (ceilings.is_object() && ceilings.value("bandwidth_gbs", nlohmann::json()).is_number() &&
      ceilings.value("peak_tflops", nlohmann::json()).is_number()) {
    const auto worker_peak = result.value("sol_peak_tflops", nlohmann::json());
    const double tflops = worker_peak.is_number() && worker_peak.get<double>() > 0
                              ? worker_peak.get<double>()
                              : ceilings["peak_tflops"].get<double>();
    peak = PeakRates{ceilings["bandwidth_gbs"].get<double>() * 1e6, tflops * 1e9};
  }
  for (const char* key : {"signature", "reference_signature"}) {
    const auto signature = result.find(key);
    if (signature == result.end() || !signature->is_object()) continue;
    const auto total = signature->value("total_ms", nlohmann::json());
    ForwardWork counted = work;
    counted.moved_bytes = counted_traffic(result, key);
    add_speed_of_light(*signature, counted, peak, total.is_number() ? total.get<double>() : 0.0);
  }
}

}  // namespace mblast
