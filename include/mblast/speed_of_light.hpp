#pragma once
// The speed-of-light fractions of a profile signature (docs/ARCHITECTURE.md §3), the one place
// every backend computes them: the work one forward must do at least (counted by the Python
// worker: in its response on CUDA, in the bundles' meta.json for OpenCL and RVV) set against what
// a candidate measured, as the state classifier reads them.
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mblast {

// Every input, parameter and output moved once, and the FLOPs of the reference's aten ops
// (worker/mblast_worker/flops.py). Missing in bundles made before they were
// recorded.
struct ForwardWork {
  std::optional<double> flops;
  std::optional<double> min_bytes;
  std::optional<double> input_bytes;   // the inputs alone (CUDA)
  std::optional<double> output_bytes;  // the outputs alone (CUDA)
  // What the measured implementation's aten ops read and write, op by op, where they were counted
  // (CUDA: eager's forward, worker/mblast_worker/traffic.py): the bytes its intensity is over.
  std::optional<double> moved_bytes;
  // The tensors a CUDA graph's replay copies: each input in, each output out (CUDA).
  std::optional<double> copied_tensors;

  // The "flops", "min_bytes", "input_bytes", "output_bytes", "moved_bytes" and "copied_tensors"
  // fields of an object (the CUDA worker's response; a bundle's recorded "work"), each where it is
  // a number >= 0.
  static ForwardWork from_fields(const nlohmann::json& object);
  // A bundle's meta.json: its "work" object.
  static ForwardWork from_meta(const nlohmann::json& bundle_meta);
};

// The most a device moves and computes per unit of what a candidate is measured in: bytes and
// FLOPs per millisecond on CUDA and OpenCL (their measured ceilings; fp32 FLOPs, TF32 off), per
// cost unit on RVV (the cost model's datapath).
struct PeakRates {
  double bytes = 0;
  double flops = 0;
};

// Adds to `signature` "min_bytes", "flops", "arithmetic_intensity" (FLOPs per minimal byte),
// given rates "ridge_ratio" (FLOPs per byte the implementation moves over the device's ridge
// point, peak FLOP rate over peak byte rate: below 1 the bytes bound it, at or above 1 the FLOPs;
// the bytes are work.moved_bytes where counted, see count_moved_bytes, else the minimal ones),
// where Nsight Compute measured its DRAM traffic "ncu"."metrics"."dram_bytes_ratio" (those bytes
// over min_bytes), and, given rates and a measured value > 0: "memory_sol_fraction" (min_bytes at
// the peak byte rate, over the measured value), "compute_sol_fraction" (FLOPs at the peak FLOP
// rate, over it) and "sol_fraction" (the larger), the names the seed states' conditions use; and,
// given input_bytes and output_bytes, "graph_copy_fraction": one copy of the inputs and one of the
// outputs (each read and written) at the peak byte rate over the measured value, the least that
// replaying a CUDA graph adds (inputs copied into its static buffers, outputs cloned out of them),
// with, where the signature has "launch_overhead_fraction" (the device idle between kernels, all
// that a graph can remove), "graph_headroom": that fraction less graph_copy_fraction, the most a
// graph can save. Where work.copied_tensors and the signature's "kernel_count" are known, the
// replay's own launches (a copy per copied tensor and the replay) are charged at the idle the
// signature shows per kernel: the idle fraction counts (1 - (copied_tensors + 1) / kernel_count)
// times. A graph cannot shorten a forward of fewer launches than it makes itself (on an H100 a
// row softmax of 18.7 us read 0.507x in a graph; a compiled RMSNorm, one kernel, 0.013 ms in a
// graph against 0.0048 ms without).
void add_speed_of_light(nlohmann::json& signature, const ForwardWork& work,
                        const std::optional<PeakRates>& peak, double measured);

// Sets the signature's "moved_bytes" and counts its "ridge_ratio" (made over "min_bytes") over
// them instead: a convolution whose FLOPs per minimal byte pass the ridge point can still be
// bound by the bytes its unfused ops move (issue 27: on an H100, Nsight Compute found four such
// problems memory-bound that the minimal bytes called compute-bound, docs/STATES.md). Moved bytes
// below the minimal ones (a count that missed an op) leave the ratio as it is. A signature that
// already has "moved_bytes" is left alone.
void count_moved_bytes(nlohmann::json& signature, double moved_bytes);

// The signature's ridge ratio over its minimal bytes, the one count_moved_bytes counted over its
// moved bytes (or nothing where it has no ridge ratio).
std::optional<double> ridge_ratio_over_min_bytes(const nlohmann::json& signature);

// The moved bytes of a judged result's signature `key` ("signature" or "reference_signature"):
// the CUDA worker counts eager's aten ops ("moved_bytes"), so they are the reference's traffic,
// and the candidate's only where the candidate is the reference's own code (its
// "reference_as_candidate" flag).
std::optional<double> counted_traffic(const nlohmann::json& result, std::string_view key);

}  // namespace mblast
