#include "mblast/speed_of_light.hpp"

#include <algorithm>

namespace mblast {

namespace {

std::optional<double> positive(const nlohmann::json& object, const char* key) {
  const auto value = object.value(key, nlohmann::json());
  if (value.is_number() && value.get<double>() >= 0) return value.get<double>();
  return std::nullopt;
}

// Nsight Compute's DRAM bytes (worker/mblast_worker/ncu.py) over the minimal bytes, beside them.
void add_dram_bytes_ratio(nlohmann::json& signature, const ForwardWork& work) {
  if (!work.min_bytes || *work.min_bytes <= 0 || !signature.contains("ncu")) return;
  auto& metrics = signature["ncu"]["metrics"];
  if (!metrics.is_object()) return;
  if (const auto dram = positive(metrics, "dram_bytes")) {
    metrics["dram_bytes_ratio"] = *dram / *work.min_bytes;
  }
}

// How many times its minimal bytes a signature's counted traffic is, where it is more: the factor
// between its ridge ratio over the minimal bytes and over the moved ones.
std::optional<double> traffic_over_least(const nlohmann::json& signature) {
  const auto least = positive(signature, "min_bytes");
  const auto moved = positive(signature, "moved_bytes");
  if (!least || !moved || *least <= 0 || *moved <= *least) return std::nullopt;
  return *moved / *least;
}

// The share of the idle between kernels that replaying a graph removes: all of it, less the idle
// of the replay's own launches (one copy per copied tensor, and the replay itself) at the idle per
// kernel the signature shows; all of it where either count is unknown.
double graph_launch_share(const nlohmann::json& signature, const ForwardWork& work) {
  const auto kernels = positive(signature, "kernel_count");
  if (!work.copied_tensors || !kernels || *kernels <= 0) return 1.0;
  return 1.0 - (*work.copied_tensors + 1.0) / *kernels;
}

}  // namespace

ForwardWork ForwardWork::from_fields(const nlohmann::json& object) {
  ForwardWork work;
  if (!object.is_object()) return work;
  work.flops = positive(object, "flops");
  work.min_bytes = positive(object, "min_bytes");
  work.input_bytes = positive(object, "input_bytes");
  work.output_bytes = positive(object, "output_bytes");
  work.moved_bytes = positive(object, "moved_bytes");
  work.copied_tensors = positive(object, "copied_tensors");
  return work;
}

ForwardWork ForwardWork::from_meta(const nlohmann::json& bundle_meta) {
  if (!bundle_meta.is_object()) return {};
  return from_fields(bundle_meta.value("work", nlohmann::json::object()));
}

void add_speed_of_light(nlohmann::json& signature, const ForwardWork& work,
                        const std::optional<PeakRates>& peak, double measured) {
  if (work.min_bytes) signature["min_bytes"] = *work.min_bytes;
  if (work.flops) signature["flops"] = *work.flops;
  if (work.flops && work.min_bytes && *work.min_bytes > 0) {
    signature["arithmetic_intensity"] = *work.flops / *work.min_bytes;
    if (peak && peak->flops > 0 && peak->bytes > 0) {
      signature["ridge_ratio"] = *work.flops / *work.min_bytes / (peak->flops / peak->bytes);
    }
  }
  if (work.moved_bytes && signature.is_object()) {
    signature.erase("moved_bytes");  // counted afresh when the signature's numbers are
    count_moved_bytes(signature, *work.moved_bytes);
  }
  if (signature.is_object()) add_dram_bytes_ratio(signature, work);
  if (!peak || measured <= 0) return;
  std::optional<double> memory, compute;
  if (work.min_bytes && peak->bytes > 0) memory = *work.min_bytes / peak->bytes / measured;
  if (work.flops && peak->flops > 0) compute = *work.flops / peak->flops / measured;
  if (memory) signature["memory_sol_fraction"] = *memory;
  if (compute) signature["compute_sol_fraction"] = *compute;
  if (memory || compute)
    signature["sol_fraction"] = std::max(memory.value_or(0), compute.value_or(0));
  if (work.input_bytes && work.output_bytes && peak->bytes > 0) {
    const double copies = 2 * (*work.input_bytes + *work.output_bytes) / peak->bytes / measured;
    signature["graph_copy_fraction"] = copies;
    if (const auto idle = positive(signature, "launch_overhead_fraction")) {
      signature["graph_headroom"] = *idle * graph_launch_share(signature, work) - copies;
    }
  }
}

std::optional<double> counted_traffic(const nlohmann::json& result, std::string_view key) {
  if (!result.is_object()) return std::nullopt;
  const auto moved = positive(result, "moved_bytes");
  if (key == "reference_signature") return moved;
  const auto flags = result.value("flags", nlohmann::json::array());
  const bool reference = flags.is_array() && std::find(flags.begin(), flags.end(),
                                                       "reference_as_candidate") != flags.end();
  return reference ? moved : std::nullopt;
}

void count_moved_bytes(nlohmann::json& signature, double moved_bytes) {
  if (!signature.is_object() || signature.contains("moved_bytes")) return;
  signature["moved_bytes"] = moved_bytes;
  const auto ridge = signature.find("ridge_ratio");
  const auto scale = traffic_over_least(signature);
  if (!scale || ridge == signature.end() || !ridge->is_number()) return;
  *ridge = ridge->get<double>() / *scale;
}

std::optional<double> ridge_ratio_over_min_bytes(const nlohmann::json& signature) {
  const auto ridge = signature.value("ridge_ratio", nlohmann::json());
  if (!ridge.is_number()) return std::nullopt;
  return ridge.get<double>() * traffic_over_least(signature).value_or(1.0);
}

}  // namespace mblast
