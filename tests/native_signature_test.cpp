// Native profile signatures from given run figures: the speed-of-light arithmetic, the OpenCL
// kernel shares and launch gaps, and the RVV vector and memory measures.
#include <gtest/gtest.h>

#include "mblast/speed_of_light.hpp"
#include "opencl/opencl_signature.hpp"
#include "rvv/rvv_signature.hpp"

namespace mblast {
namespace {

TEST(NativeSignature, ReadsTheWorkTheBundlesRecorded) {
  const auto work = ForwardWork::from_meta({{"work", {{"flops", 800.0}, {"min_bytes", 400}}}});
  EXPECT_EQ(work.flops, 800.0);
  EXPECT_EQ(work.min_bytes, 400.0);
  const auto none = ForwardWork::from_meta({{"seeds", nlohmann::json::array()}});
  EXPECT_FALSE(none.flops || none.min_bytes) << "bundles made before the work was recorded";
}

TEST(NativeSignature, SpeedOfLightIsTheLargerFloorOverTheMeasuredValue) {
  nlohmann::json signature = nlohmann::json::object();
  // 1000 bytes at 100 per unit: 10 units; 4000 FLOPs at 1000 per unit: 4 units; measured 40.
  add_speed_of_light(signature, {4000.0, 1000.0}, PeakRates{100, 1000}, 40);
  EXPECT_DOUBLE_EQ(signature["arithmetic_intensity"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(signature["memory_sol_fraction"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(signature["compute_sol_fraction"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(signature["sol_fraction"].get<double>(), 0.25);

  nlohmann::json with_inputs = {{"launch_overhead_fraction", 0.5}};
  // 300 input and 100 output bytes, each read and written at 100 per unit: 8 units of the
  // measured 40; the device idle for half of them, so a graph can save at most 0.5 - 0.2.
  add_speed_of_light(with_inputs, {4000.0, 1000.0, 300.0, 100.0}, PeakRates{100, 1000}, 40);
  EXPECT_DOUBLE_EQ(with_inputs["graph_copy_fraction"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(with_inputs["graph_headroom"].get<double>(), 0.3);
  EXPECT_FALSE(signature.contains("graph_copy_fraction"));
  // Two tensors copied and the replay: three launches of the graph's own against the forward's
  // kernels, at the idle per kernel the profile shows.
  ForwardWork copied{4000.0, 1000.0, 300.0, 100.0};
  copied.copied_tensors = 2;
  nlohmann::json many_kernels = {{"launch_overhead_fraction", 0.5}, {"kernel_count", 30}};
  add_speed_of_light(many_kernels, copied, PeakRates{100, 1000}, 40);
  EXPECT_DOUBLE_EQ(many_kernels["graph_headroom"].get<double>(), 0.5 * (1 - 3.0 / 30) - 0.2);
  nlohmann::json one_kernel = {{"launch_overhead_fraction", 0.5}, {"kernel_count", 1}};
  add_speed_of_light(one_kernel, copied, PeakRates{100, 1000}, 40);
  EXPECT_LT(one_kernel["graph_headroom"].get<double>(), 0.0)
      << "a graph launches more than the forward it would replace";
  nlohmann::json no_count = {{"launch_overhead_fraction", 0.5}};
  add_speed_of_light(no_count, copied, PeakRates{100, 1000}, 40);
  EXPECT_DOUBLE_EQ(no_count["graph_headroom"].get<double>(), 0.3) << "no kernel count: as before";
  EXPECT_EQ(ForwardWork::from_fields({{"copied_tensors", 3}}).copied_tensors, 3.0);
  nlohmann::json no_profile = nlohmann::json::object();
  add_speed_of_light(no_profile, {4000.0, 1000.0, 300.0, 100.0}, PeakRates{100, 1000}, 40);
  EXPECT_TRUE(no_profile.contains("graph_copy_fraction"));
  EXPECT_FALSE(no_profile.contains("graph_headroom")) << "no idle fraction, no headroom";

  nlohmann::json without_rates = nlohmann::json::object();
  add_speed_of_light(without_rates, {4000.0, 1000.0}, std::nullopt, 40);
  EXPECT_TRUE(without_rates.contains("arithmetic_intensity"));
  EXPECT_FALSE(without_rates.contains("sol_fraction")) << "no ceilings, no fraction of them";
}

NativeRunResult opencl_run() {
  NativeRunResult run;
  run.timing = {{"median_ms", 0.5}};
  run.details = {{"launches",
                  {{{"kernel", "row_max"}, {"median_ms", 0.1}},
                   {{"kernel", "scale"}, {"median_ms", 0.2}},
                   {{"kernel", "row_max"}, {"median_ms", 0.1}}}}};
  return run;
}

TEST(NativeSignature, OpenClKernelSharesLaunchGapsAndCeilings) {
  opencl::DeviceCeilings ceilings;
  ceilings.bandwidth_gbs = 10;  // 1e7 bytes per ms
  ceilings.gflops = 100;        // 1e8 FLOPs per ms
  const auto signature =
      opencl::opencl_signature(opencl_run(), {1e6, 1e6}, std::optional(ceilings));
  EXPECT_DOUBLE_EQ(signature["total_ms"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(signature["kernel_count"].get<double>(), 3);
  EXPECT_NEAR(signature["mean_kernel_us"].get<double>(), 400.0 / 3, 1e-9);
  EXPECT_NEAR(signature["launch_overhead_fraction"].get<double>(), 0.2, 1e-12);
  const auto& kernels = signature["kernels"];
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0]["name"], "row_max");  // 0.2 ms, tied with scale: the first kept
  EXPECT_EQ(kernels[0]["count"], 2);
  EXPECT_NEAR(kernels[0]["share"].get<double>() + kernels[1]["share"].get<double>(), 1.0, 1e-12);
  // 1e6 bytes at 1e7 per ms: 0.1 ms of 0.5; 1e6 FLOPs at 1e8 per ms: 0.01 ms of 0.5.
  EXPECT_NEAR(signature["memory_sol_fraction"].get<double>(), 0.2, 1e-12);
  EXPECT_NEAR(signature["compute_sol_fraction"].get<double>(), 0.02, 1e-12);
  EXPECT_NEAR(signature["achieved_gbs"].get<double>(), 2.0, 1e-12);

  const auto no_ceilings = opencl::opencl_signature(opencl_run(), {1e6, 1e6}, std::nullopt);
  EXPECT_FALSE(no_ceilings.contains("sol_fraction"));
  EXPECT_TRUE(no_ceilings.contains("kernel_count"));
  EXPECT_TRUE(opencl::opencl_signature(NativeRunResult{}, {}, std::nullopt).empty());
}

TEST(NativeSignature, RvvVectorAndMemoryMeasuresInCostUnits) {
  const nlohmann::json timing = {{"cost", 1000},
                                 {"instructions", 400},
                                 {"vector_instructions", 100},
                                 {"scalar_load_bytes", 256},
                                 {"scalar_store_bytes", 0},
                                 {"vector_load_bytes", 1024},
                                 {"vector_store_bytes", 768},
                                 {"vector_bytes", 1792},
                                 {"strided_bytes", 512},
                                 {"dlen", 128}};
  const auto signature = rvv::rvv_signature(timing, {3200.0, 1024.0});
  EXPECT_DOUBLE_EQ(signature["vector_instruction_fraction"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(signature["bytes_loaded"].get<double>(), 1280);
  EXPECT_DOUBLE_EQ(signature["bytes_stored"].get<double>(), 768);
  EXPECT_DOUBLE_EQ(signature["access_bytes_ratio"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(signature["vector_bytes_fraction"].get<double>(), 1792.0 / 2048);
  EXPECT_DOUBLE_EQ(signature["strided_bytes_fraction"].get<double>(), 0.25);
  // DLEN 128: 16 bytes and 8 FLOPs per cost unit; 1024 / 16 = 64 and 3200 / 8 = 400 units.
  EXPECT_DOUBLE_EQ(signature["memory_sol_fraction"].get<double>(), 0.064);
  EXPECT_DOUBLE_EQ(signature["compute_sol_fraction"].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(signature["sol_fraction"].get<double>(), 0.4);

  const auto board = rvv::rvv_signature({{"median_ms", 2.0}}, {3200.0, 1024.0});
  EXPECT_FALSE(board.contains("sol_fraction")) << "a wall-clock run has no cost-model floor";
  EXPECT_DOUBLE_EQ(board["arithmetic_intensity"].get<double>(), 3.125);
}

}  // namespace
}  // namespace mblast
