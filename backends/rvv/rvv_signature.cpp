#include "rvv/rvv_signature.hpp"

#include <optional>

namespace mblast::rvv {

namespace {

double number(const nlohmann::json& timing, const char* key) {
  const auto value = timing.value(key, nlohmann::json());
  return value.is_number() ? value.get<double>() : 0.0;
}

void add_memory_measures(nlohmann::json& signature, const nlohmann::json& timing,
                         const ForwardWork& work) {
  const double loaded = number(timing, "scalar_load_bytes") + number(timing, "vector_load_bytes");
  const double stored = number(timing, "scalar_store_bytes") + number(timing, "vector_store_bytes");
  signature["bytes_loaded"] = loaded;
  signature["bytes_stored"] = stored;
  const double moved = loaded + stored;
  if (moved <= 0) return;
  signature["vector_bytes_fraction"] = number(timing, "vector_bytes") / moved;
  signature["strided_bytes_fraction"] = number(timing, "strided_bytes") / moved;
  if (work.min_bytes && *work.min_bytes > 0) {
    signature["access_bytes_ratio"] = moved / *work.min_bytes;
  }
}

}  // namespace

PeakRates model_peak_rates(int dlen) {
  constexpr double kFp32Bits = 32;
  constexpr double kFlopsPerMultiplyAdd = 2;
  return {dlen / 8.0, kFlopsPerMultiplyAdd * dlen / kFp32Bits};
}

nlohmann::json rvv_signature(const nlohmann::json& timing, const ForwardWork& work) {
  nlohmann::json signature = nlohmann::json::object();
  const double cost = number(timing, "cost");
  if (cost <= 0) {
    add_speed_of_light(signature, work, std::nullopt, 0);
    return signature;
  }
  signature["cost"] = cost;
  if (const double instructions = number(timing, "instructions"); instructions > 0) {
    signature["vector_instruction_fraction"] = number(timing, "vector_instructions") / instructions;
  }
  add_memory_measures(signature, timing, work);
  const int dlen = static_cast<int>(number(timing, "dlen"));
  std::optional<PeakRates> peak;
  if (dlen > 0) {
    peak = model_peak_rates(dlen);
    signature["peak_bytes_per_cost"] = peak->bytes;
    signature["peak_flops_per_cost"] = peak->flops;
  }
  add_speed_of_light(signature, work, peak, cost);
  return signature;
}

}  // namespace mblast::rvv
