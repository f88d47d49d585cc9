// Issue 27: Nsight Compute's numbers in the signature, the state they imply, the classifier's
// state from the cheap numbers beside it, and `mblast kb classify` over judged signatures.
#include <gtest/gtest.h>

#include <fstream>

#include "cuda/device_ceilings.hpp"
#include "mblast/kb.hpp"
#include "mblast/policy.hpp"
#include "mblast/speed_of_light.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::vector<StateRow> seed_states() {
  const TempDir dir;
  return KnowledgeBase(dir / "kb.sqlite").states();
}

// A judged signature: the PyTorch profiler's numbers and the counted work's at the top level,
// Nsight Compute's under "ncu"."metrics".
nlohmann::json signature(nlohmann::json cheap, nlohmann::json ncu, int kernels_profiled = 3) {
  cheap["profiler"] = "ncu";
  cheap["ncu"] = {{"status", "ok"},
                  {"reason", ""},
                  {"launch_limit", 100},
                  {"kernels_profiled", kernels_profiled},
                  {"metrics", std::move(ncu)}};
  return cheap;
}

// level1/40_LayerNorm as the H200 measured it (1.7 % of its speed of light), with the counters
// of a bandwidth-starved reduction.
const nlohmann::json kLayerNorm = signature({{"total_ms", 8.1},
                                             {"sol_fraction", 0.017},
                                             {"memory_sol_fraction", 0.017},
                                             {"compute_sol_fraction", 0.0},
                                             {"ridge_ratio", 0.01},
                                             {"launch_overhead_fraction", 0.01},
                                             {"kernel_count", 1}},
                                            {{"ncu_busy_ms", 8.0},
                                             {"memory_throughput_fraction", 0.12},
                                             {"sm_throughput_fraction", 0.05},
                                             {"dram_throughput_fraction", 0.1},
                                             {"global_load_efficiency", 0.95},
                                             {"achieved_occupancy", 0.2}});

TEST(NcuSignature, CountersStayApartFromTheProfilersNumbers) {
  const auto s = ProfileSignature::from_json(kLayerNorm);
  EXPECT_EQ(s.metric("dram_throughput_fraction"), 0.1);  // the classifier reads both
  EXPECT_EQ(s.metric("sol_fraction"), 0.017);
  EXPECT_EQ(s.ncu_metrics().size(), 6u);
  const auto cheap = s.profiler_metrics();
  EXPECT_FALSE(cheap.count("dram_throughput_fraction"));
  EXPECT_TRUE(cheap.count("ridge_ratio"));
  EXPECT_EQ(s.to_json(), kLayerNorm);
}

TEST(NcuSignature, TheDriverAddsTheRidgeRatioAndDramBytesOverTheMinimum) {
  nlohmann::json sig = {{"ncu", {{"status", "ok"}, {"metrics", {{"dram_bytes", 3.0e9}}}}}};
  // 1 GB and 10 GFLOP: 10 FLOP/B against a ridge of 100 TFLOP/s over 4 TB/s = 25 FLOP/B.
  add_speed_of_light(sig, {.flops = 1e10, .min_bytes = 1e9, .input_bytes = std::nullopt},
                     PeakRates{.bytes = 4e9, .flops = 1e11}, 1.0);
  EXPECT_DOUBLE_EQ(sig["arithmetic_intensity"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(sig["ridge_ratio"].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(sig["ncu"]["metrics"]["dram_bytes_ratio"].get<double>(), 3.0);
  nlohmann::json no_peak = nlohmann::json::object();
  add_speed_of_light(no_peak, {.flops = 1e10, .min_bytes = 1e9, .input_bytes = std::nullopt},
                     std::nullopt, 1.0);
  EXPECT_FALSE(no_peak.contains("ridge_ratio"));
  EXPECT_FALSE(no_peak.contains("ncu"));
}

TEST(NcuSignature, TheRidgeRatioCountsTheBytesTheImplementationMovesWhereCounted) {
  const ForwardWork work{.flops = 1e10, .min_bytes = 1e9, .moved_bytes = 4e9};
  const PeakRates peak{.bytes = 4e9, .flops = 1e11};
  nlohmann::json sig = nlohmann::json::object();
  add_speed_of_light(sig, work, peak, 1.0);
  EXPECT_DOUBLE_EQ(sig["ridge_ratio"].get<double>(), 0.1);  // 10 GFLOP over 4 GB, ridge 25
  EXPECT_DOUBLE_EQ(sig["arithmetic_intensity"].get<double>(), 10.0);  // the operator's own
  EXPECT_DOUBLE_EQ(sig["moved_bytes"].get<double>(), 4e9);
  EXPECT_DOUBLE_EQ(sig["memory_sol_fraction"].get<double>(), 0.25);  // still the minimal bytes
  add_speed_of_light(sig, work, peak, 1.0);                          // counted afresh, not twice
  EXPECT_DOUBLE_EQ(sig["ridge_ratio"].get<double>(), 0.1);
  // A count below the minimal bytes missed an op: the minimal bytes stay the floor.
  nlohmann::json short_count = nlohmann::json::object();
  add_speed_of_light(short_count, {.flops = 1e10, .min_bytes = 1e9, .moved_bytes = 5e8}, peak, 1.0);
  EXPECT_DOUBLE_EQ(short_count["ridge_ratio"].get<double>(), 0.4);
}

TEST(NcuSignature, TheCudaDriverCountsEagersTrafficInTheReferencesSignature) {
  // 10 GFLOP, 1 GB at least, 4 GB moved by eager; ridge 100 TFLOP/s over 4 TB/s = 25 FLOP/B.
  nlohmann::json result = {{"flops", 1e10},
                           {"min_bytes", 1e9},
                           {"moved_bytes", 4e9},
                           {"signature", {{"total_ms", 1.0}}},
                           {"reference_signature", {{"total_ms", 1.0}}}};
  const nlohmann::json ceilings = {{"bandwidth_gbs", 4000.0}, {"peak_tflops", 100.0}};
  nlohmann::json candidate = result;
  add_speed_of_light_to_signatures(candidate, ceilings);
  EXPECT_DOUBLE_EQ(candidate["reference_signature"]["ridge_ratio"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(candidate["signature"]["ridge_ratio"].get<double>(), 0.4);
  EXPECT_FALSE(candidate["signature"].contains("moved_bytes"));
  nlohmann::json itself = result;
  itself["flags"] = {"reference_as_candidate"};
  add_speed_of_light_to_signatures(itself, ceilings);
  EXPECT_DOUBLE_EQ(itself["signature"]["ridge_ratio"].get<double>(), 0.1);
}

TEST(NcuSignature, EagersTrafficIsTheReferencesAndTheCandidatesOnlyWhereItIsTheReference) {
  nlohmann::json result = {{"moved_bytes", 4e9}};
  EXPECT_EQ(counted_traffic(result, "reference_signature"), 4e9);
  EXPECT_EQ(counted_traffic(result, "signature"), std::nullopt);
  result["flags"] = {"calls_reference_op", "reference_as_candidate"};
  EXPECT_EQ(counted_traffic(result, "signature"), 4e9);
  EXPECT_EQ(counted_traffic(nlohmann::json{{"flags", result["flags"]}}, "signature"), std::nullopt);
}

TEST(ImpliedState, FollowsTheWrittenRuleInItsOrder) {
  auto implied = [](const nlohmann::json& j) {
    const auto state = ncu_implied_state(ProfileSignature::from_json(j));
    return state ? state->state_id : std::string("none");
  };
  EXPECT_EQ(implied(kLayerNorm), "memory-bound/low-occupancy");
  nlohmann::json j = kLayerNorm;
  j["ncu"]["metrics"]["achieved_occupancy"] = 0.8;
  EXPECT_EQ(implied(j), "memory-bound/below-bandwidth");
  j["ncu"]["metrics"]["global_load_efficiency"] = 0.3;
  EXPECT_EQ(implied(j), "memory-bound/uncoalesced");
  j["ncu"]["metrics"]["dram_throughput_fraction"] = 0.7;
  EXPECT_EQ(implied(j), "memory-bound/at-bandwidth");
  j["ncu"]["metrics"]["dram_bytes_ratio"] = 2.5;
  EXPECT_EQ(implied(j), "memory-bound/redundant-traffic");
  // The SMs busier than any memory unit: compute-bound, by its tensor pipes.
  j["ncu"]["metrics"]["sm_throughput_fraction"] = 0.5;
  j["ncu"]["metrics"]["tensor_pipe_fraction"] = 0.02;
  EXPECT_EQ(implied(j), "compute-bound/no-tensor-cores");
  j["ncu"]["metrics"]["tensor_pipe_fraction"] = 0.6;
  EXPECT_EQ(implied(j), "compute-bound");
  // Kernels busy for under 70 % of the forward: launch-bound, but only if none was left out.
  j["ncu"]["metrics"]["ncu_busy_ms"] = 2.0;
  EXPECT_EQ(implied(j), "launch-bound");
  j["ncu"]["kernels_profiled"] = 100;  // the launch limit cut the profile short
  EXPECT_EQ(implied(j), "compute-bound");
  // Near the speed of light comes first.
  j["sol_fraction"] = 0.85;
  EXPECT_EQ(implied(j), "near-roofline/compute");
  // No counters, no ground truth.
  EXPECT_EQ(implied({{"total_ms", 1.0}, {"sol_fraction", 0.1}}), "none");
  nlohmann::json failed = kLayerNorm;
  failed["ncu"].erase("metrics");
  failed["ncu"]["status"] = "failed";
  EXPECT_EQ(implied(failed), "none");
}

TEST(StateCheck, TheCheapStateAndTheImpliedOneSideBySide) {
  const auto states = seed_states();
  // LayerNorm: latency-bound under the old catalogue; memory-bound now, as its counters say.
  const auto layer_norm = check_state(states, ProfileSignature::from_json(kLayerNorm));
  EXPECT_EQ(layer_norm.cheap.state_id, "memory-bound");
  EXPECT_EQ(layer_norm.cheap_root, "memory-bound");
  ASSERT_TRUE(layer_norm.implied.has_value());
  EXPECT_TRUE(layer_norm.root_agrees());
  EXPECT_FALSE(layer_norm.state_agrees());  // the counters name the child
  // With the counters the classifier itself goes down to the child they name.
  EXPECT_EQ(classify(states, ProfileSignature::from_json(kLayerNorm).metrics()).state_id,
            "memory-bound/low-occupancy");
  // Intensity above the ridge while the memory units are the busier: the roots disagree.
  nlohmann::json conv = kLayerNorm;
  conv["ridge_ratio"] = 3.0;
  const auto disagreeing = check_state(states, ProfileSignature::from_json(conv));
  EXPECT_EQ(disagreeing.cheap_root, "compute-bound");
  EXPECT_FALSE(disagreeing.root_agrees());
  EXPECT_EQ(root_of(states, "memory-bound/uncoalesced"), "memory-bound");
  EXPECT_EQ(root_of(states, "no-such-state"), "");
}

TEST(KbClassifyCli, TablesTheCheapAndImpliedStatesAndCountsAgreement) {
  const TempDir dir;
  nlohmann::json conv = kLayerNorm;
  conv["ridge_ratio"] = 3.0;
  conv["min_bytes"] = 1000;
  const nlohmann::json results = {
      {"results",
       {{{"problem", "/k/level1/40_LayerNorm.py"}, {"signature", kLayerNorm}},
        {{"problem", "/k/level2/1_Conv2D_ReLU_BiasAdd.py"},
         {"signature", conv},
         {"moved_bytes", 4000}},
        // The same numbers for the reference judged as its own candidate: eager's traffic is the
        // candidate's, and its intensity over it is below the ridge (judged before the driver
        // counted it so: kb classify counts it as today's driver would).
        {{"problem", "/k/level2/1_Conv2D_ReLU_BiasAdd.py"},
         {"signature", conv},
         {"moved_bytes", 4000},
         {"flags", {"reference_as_candidate"}}}}}};
  std::ofstream(dir / "eval.json") << results.dump();
  nlohmann::json torch_only = kLayerNorm;
  torch_only.erase("ncu");
  std::ofstream(dir / "plain.json") << nlohmann::json{{"signature", torch_only}}.dump();
  const std::string kb = (dir / "kb.sqlite").string();

  auto table = testing::run_mblast(
      {"--kb", kb, "kb", "classify", (dir / "eval.json").string(), (dir / "plain.json").string()});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("| level1/40_LayerNorm | memory-bound |"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("memory-bound/low-occupancy"), std::string::npos);
  EXPECT_NE(table.out.find("- (not asked)"), std::string::npos);
  EXPECT_NE(table.out.find("root agrees on 2 of 3 (67%)"), std::string::npos) << table.out;
  // Beside the cheap state: the bytes eager moves over the minimal ones, and the ridge ratio over
  // the minimal bytes.
  EXPECT_NE(table.out.find("| 4 (3) |"), std::string::npos) << table.out;

  auto json =
      testing::run_mblast({"--kb", kb, "kb", "classify", "--json", (dir / "eval.json").string()});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto out = nlohmann::json::parse(json.out);
  EXPECT_EQ(out["summary"]["with_ncu"], 3);
  EXPECT_EQ(out["summary"]["root_agrees"], 2);
  // Another candidate's traffic is not eager's: its intensity stays over the minimal bytes.
  EXPECT_EQ(out["rows"][1]["root"], "compute-bound");
  EXPECT_EQ(out["rows"][1]["ncu_root"], "memory-bound");
  EXPECT_EQ(out["rows"][1]["root_agrees"], false);
  EXPECT_TRUE(out["rows"][1]["moved_over_min"].is_null());
  EXPECT_EQ(out["rows"][2]["root"], "memory-bound");
  EXPECT_EQ(out["rows"][2]["root_agrees"], true);
  EXPECT_EQ(out["rows"][2]["moved_over_min"], 4.0);
  EXPECT_EQ(out["rows"][2]["ridge_ratio_min"], 3.0);
  EXPECT_TRUE(out["rows"][0]["moved_over_min"].is_null());

  std::ofstream(dir / "empty.json") << R"({"correct": true})";
  auto bad = testing::run_mblast({"--kb", kb, "kb", "classify", (dir / "empty.json").string()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("holds no profile signature"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("--profile ncu --json"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace mblast
