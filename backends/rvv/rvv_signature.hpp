#pragma once
// The profile signature of one RVV run priced by the cost model (COST_MODEL.md, "Signature"):
// how much of the forward is vectorized, how many bytes its memory instructions move against
// the minimum, and its cost against the model's speed of light.
#include <nlohmann/json.hpp>

#include "mblast/speed_of_light.hpp"

namespace mblast::rvv {

// The model's peak rates per cost unit at a DLEN-bit datapath: DLEN / 8 bytes through the memory
// port (a unit-stride access), and 2 * DLEN / 32 fp32 FLOPs (a multiply-add on every lane).
PeakRates model_peak_rates(int dlen);

// From a cost-model timing (run_rvv_candidate's {"cost", "instructions", "vector_instructions",
// "*_bytes", "dlen"}): cost, vector_instruction_fraction, bytes_loaded, bytes_stored,
// access_bytes_ratio ((loaded + stored) / min_bytes), vector_bytes_fraction (share of those
// bytes moved by vector instructions), strided_bytes_fraction (by strided or indexed ones),
// peak_bytes_per_cost, peak_flops_per_cost and the speed-of-light fractions of
// add_speed_of_light in cost units. A wall-clock timing (a real board) gets only the work.
nlohmann::json rvv_signature(const nlohmann::json& timing, const ForwardWork& work);

}  // namespace mblast::rvv
