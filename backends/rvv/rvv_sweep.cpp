#include "rvv_sweep.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>

#include "mblast/error.hpp"

namespace mblast {
namespace {

constexpr int kLmuls[] = {1, 2, 4, 8};
constexpr int kUnrolls[] = {1, 2, 4};

std::string read_source(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error("cannot read the RVV candidate " + path.string(), "check the path");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Whether every bundle's outputs match; the first mismatch otherwise.
std::string check_outputs(const NativeRunResult& run, const BundleSet& bundles, double atol,
                          double rtol) {
  for (std::size_t i = 0; i < bundles.files.size(); ++i) {
    const Bundle bundle = read_bundle(bundles.files[i]);
    const Comparison c =
        compare_outputs(bundle.with_role(TensorRole::expected), run.outputs.at(i), atol, rtol);
    if (!c.pass) return "bundle " + std::to_string(i) + ": " + c.error;
  }
  return {};
}

RvvVariant run_variant(const std::filesystem::path& candidate_c, const BundleSet& bundles,
                       RvvOptions options, int lmul, int unroll, double atol, double rtol) {
  if (lmul) options.extra_flags.push_back("-DMBLAST_LMUL=" + std::to_string(lmul));
  if (unroll) options.extra_flags.push_back("-DMBLAST_UNROLL=" + std::to_string(unroll));
  RvvVariant variant;
  variant.lmul = lmul;
  variant.unroll = unroll;
  variant.run = run_rvv_candidate(candidate_c, bundles, options);
  if (!variant.run.error_kind.empty()) {
    variant.error = variant.run.error_kind + ": " + variant.run.error;
    return variant;
  }
  variant.error = check_outputs(variant.run, bundles, atol, rtol);
  variant.correct = variant.error.empty();
  variant.cost = variant.run.timing.value("cost", 0.0);
  return variant;
}

}  // namespace

nlohmann::json RvvSweepResult::table() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& v : variants) {
    rows.push_back(
        {{"lmul", v.lmul},
         {"unroll", v.unroll},
         {"correct", v.correct},
         {"cost", v.correct ? nlohmann::json(v.cost) : nlohmann::json(nullptr)},
         {"error", v.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.error)}});
  }
  return {{"variants", rows}, {"best", best ? nlohmann::json(*best) : nlohmann::json(nullptr)}};
}

std::string RvvSweepResult::best_source(const std::string& source) const {
  if (!best) throw job_error("no LMUL / unroll variant of the candidate is correct");
  const RvvVariant& v = variants[*best];
  std::string header;
  if (v.lmul) header += "#define MBLAST_LMUL " + std::to_string(v.lmul) + "\n";
  if (v.unroll) header += "#define MBLAST_UNROLL " + std::to_string(v.unroll) + "\n";
  return header + source;
}

std::vector<std::string> rvv_sweep_knobs(const std::string& source) {
  std::vector<std::string> knobs;
  for (const char* knob : {"MBLAST_LMUL", "MBLAST_UNROLL"}) {
    if (source.find(knob) != std::string::npos) knobs.emplace_back(knob);
  }
  return knobs;
}

RvvSweepResult sweep_rvv_candidate(const std::filesystem::path& candidate_c,
                                   const BundleSet& bundles, const RvvOptions& options,
                                   RvvSweepKnobs knobs, double atol, double rtol) {
  const std::vector<std::string> used = rvv_sweep_knobs(read_source(candidate_c));
  const auto uses = [&](const char* knob) {
    return std::find(used.begin(), used.end(), knob) != used.end();
  };
  const bool lmul = knobs.lmul && uses("MBLAST_LMUL");
  const bool unroll = knobs.unroll && uses("MBLAST_UNROLL");
  if (!lmul && !unroll) {
    const std::string wanted = knobs.lmul && knobs.unroll ? "MBLAST_LMUL or MBLAST_UNROLL"
                               : knobs.lmul               ? "MBLAST_LMUL"
                                                          : "MBLAST_UNROLL";
    throw job_error("the sweep does not apply: the candidate does not use " + wanted);
  }
  RvvSweepResult result;
  const auto add = [&](int l, int u) {
    result.variants.push_back(run_variant(candidate_c, bundles, options, l, u, atol, rtol));
    const RvvVariant& v = result.variants.back();
    if (v.correct && (!result.best || v.cost < result.variants[*result.best].cost)) {
      result.best = result.variants.size() - 1;
    }
  };
  add(0, 0);
  for (const int l : kLmuls) {
    for (const int u : kUnrolls) {
      if ((!lmul && l != kLmuls[0]) || (!unroll && u != kUnrolls[0])) continue;
      add(lmul ? l : 0, unroll ? u : 0);
    }
  }
  return result;
}

}  // namespace mblast
