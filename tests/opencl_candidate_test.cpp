// The OpenCL candidate format: the @launch plan, its errors, the two-file form, and the variants
// the work-group size sweep makes. No OpenCL device needed.
#include <gtest/gtest.h>

#include "opencl/opencl_candidate.hpp"
#include "opencl/workgroup_sweep.hpp"
#include "test_support.hpp"

namespace mblast::opencl {
namespace {

using nlohmann::json;

const std::string kKernel = R"(
__kernel void swish(__global const float* x, __global float* y) {
  const float v = x[get_global_id(0)];
  y[get_global_id(0)] = v / (1.0f + exp(-v));
})";

std::string with_plan(const std::string& plan) { return "/* @launch " + plan + " */" + kKernel; }

std::string plan_error(const std::string& plan) {
  return testing::error_of([&] { parse_candidate(with_plan(plan)); }).what();
}

TEST(OpenClCandidate, ParsesEveryArgumentKind) {
  const Candidate c = parse_candidate(with_plan(R"(
{"buffers": [{"name": "tmp", "bytes": 4096}],
 "launches": [{"kernel": "swish", "global": [128, 2], "local": [64, 1],
               "args": [{"buffer": "input0"}, {"int": -5}, {"float": 1.5},
                        {"local_bytes": 1024}]},
              {"kernel": "swish", "global": [16384], "local": null, "args": []}]})"));
  ASSERT_EQ(c.plan.buffers.size(), 1u);
  EXPECT_EQ(c.plan.buffers[0].name, "tmp");
  EXPECT_EQ(c.plan.buffers[0].bytes, 4096u);
  ASSERT_EQ(c.plan.launches.size(), 2u);
  const Launch& first = c.plan.launches[0];
  EXPECT_EQ(first.kernel, "swish");
  EXPECT_EQ(first.global, (std::vector<std::size_t>{128, 2}));
  EXPECT_EQ(*first.local, (std::vector<std::size_t>{64, 1}));
  EXPECT_EQ(std::get<BufferArg>(first.args[0]).name, "input0");
  EXPECT_EQ(std::get<IntArg>(first.args[1]).value, -5);
  EXPECT_EQ(std::get<FloatArg>(first.args[2]).value, 1.5f);
  EXPECT_EQ(std::get<LocalBytesArg>(first.args[3]).bytes, 1024u);
  EXPECT_FALSE(c.plan.launches[1].local.has_value());
  EXPECT_NE(c.source.find("__kernel void swish"), std::string::npos);
}

TEST(OpenClCandidate, PlanErrorsSayWhatToChange) {
  EXPECT_EQ(std::string(testing::error_of([] { parse_candidate(kKernel); }).what()),
            "the candidate has no launch plan");
  EXPECT_NE(plan_error(R"({"launches": [}")").find("not valid JSON"), std::string::npos);
  EXPECT_NE(plan_error(R"({"launches": []})").find("non-empty list"), std::string::npos);
  EXPECT_NE(plan_error(R"({"launches": [{"global": [1]}]})").find("\"kernel\" is missing"),
            std::string::npos);
  EXPECT_NE(plan_error(R"({"launches": [{"kernel": "k", "global": [1], "locals": [1]}]})")
                .find("unknown key \"locals\""),
            std::string::npos);
  EXPECT_NE(plan_error(R"({"launches": [{"kernel": "k", "global": [0]}]})")
                .find("launches[0].global[0]: must be a positive integer"),
            std::string::npos);
  EXPECT_NE(plan_error(R"({"launches": [{"kernel": "k", "global": [1, 1, 1, 1]}]})").find("1 to 3"),
            std::string::npos);
  EXPECT_NE(plan_error(R"({"launches": [{"kernel": "k", "global": [100], "local": [64]}]})")
                .find("does not divide global 100"),
            std::string::npos);
  EXPECT_NE(plan_error(R"({"launches": [{"kernel": "k", "global": [64], "local": [8, 8]}]})")
                .find("has 2 dimensions but global has 1"),
            std::string::npos);
  EXPECT_NE(plan_error(R"({"launches": [{"kernel": "k", "global": [1], "args": [{"int": 1.5}]}]})")
                .find("launches[0].args[0]: \"int\" must be a 32-bit integer"),
            std::string::npos);
  EXPECT_NE(plan_error(R"({"launches": [{"kernel": "k", "global": [1],
                                         "args": [{"buffer": "x", "int": 1}]}]})")
                .find("exactly one key"),
            std::string::npos);
  EXPECT_NE(plan_error(R"({"buffers": [{"name": "output0", "bytes": 4}],
                          "launches": [{"kernel": "k", "global": [1]}]})")
                .find("reserved"),
            std::string::npos);
  EXPECT_NE(plan_error(R"({"buffers": [{"name": "t", "bytes": 4}, {"name": "t", "bytes": 8}],
                          "launches": [{"kernel": "k", "global": [1]}]})")
                .find("declared twice"),
            std::string::npos);
  const Error unclosed =
      testing::error_of([] { parse_candidate("/* @launch {\"launches\": []}" + kKernel); });
  EXPECT_NE(std::string(unclosed.what()).find("not closed"), std::string::npos);
  EXPECT_EQ(unclosed.code(), ExitCode::bad_input);
}

TEST(OpenClCandidate, CombinesAnAgentsTwoFiles) {
  const std::string plan = R"({"launches": [{"kernel": "swish", "global": [16384],
    "args": [{"buffer": "input0"}, {"buffer": "output0"}]}]})";
  const std::string combined = combine_candidate_files(kKernel, plan);
  const Candidate c = parse_candidate(combined);
  EXPECT_EQ(c.plan.launches[0].global, (std::vector<std::size_t>{16384}));
  EXPECT_TRUE(combined.starts_with(kKernel + "\n/* @launch\n{\"launches\": [\n  {\"kernel\": "))
      << combined;

  EXPECT_NE(std::string(testing::error_of([&] { combine_candidate_files(kKernel, "{"); }).what())
                .find("launch.json is not valid JSON"),
            std::string::npos);
  EXPECT_NE(
      std::string(testing::error_of([&] { combine_candidate_files(with_plan(plan), plan); }).what())
          .find("already has"),
      std::string::npos);
}

TEST(OpenClCandidate, ReplacingThePlanKeepsTheKernels) {
  const std::string text =
      with_plan(R"({"launches": [{"kernel": "swish", "global": [64], "local": [8]}]})");
  json plan = parse_candidate(text).plan_json;
  plan["launches"][0]["local"] = json();
  const std::string replaced = with_launch_plan(text, plan);
  const Candidate c = parse_candidate(replaced);
  EXPECT_FALSE(c.plan.launches[0].local.has_value());
  EXPECT_NE(replaced.find(kKernel), std::string::npos);
}

json info(const std::vector<std::size_t>& global, std::size_t local_mem = 0,
          const json& required = json()) {
  return {{"kernel", "swish"},
          {"global", global},
          {"local_mem_bytes", local_mem},
          {"required_local", required},
          {"max_work_group_size", 4096},
          {"preferred_multiple", 8}};
}

TEST(OpenClCandidate, SweepVariantsUseSizesThatDivideTheGlobalSize) {
  const std::string text = with_plan(R"({"launches": [
      {"kernel": "swish", "global": [96], "local": [32]},
      {"kernel": "swish", "global": [64, 32], "local": null}]})");
  const auto variants = workgroup_variants(text, json{info({96}), info({64, 32})}, {16, 32, 64});
  std::vector<std::string> labels;
  for (const auto& v : variants) labels.push_back(v.label + " " + v.locals.dump());
  EXPECT_EQ(labels, (std::vector<std::string>{
                        "as written [[32],null]", "local null [null,null]", "local 16 [[16],[4,4]]",
                        "local 32 [[32],[8,4]]",
                        "local 64 [[32],[8,8]]",  // 64 does not divide 96: that launch keeps 32
                    }));
  EXPECT_EQ(variants[0].source, text);
  EXPECT_EQ(parse_candidate(variants[3].source).plan.launches[1].local,
            (std::vector<std::size_t>{8, 4}));
}

TEST(OpenClCandidate, SweepLeavesLaunchesWithLocalMemoryOrARequiredSizeAlone) {
  const std::string text = with_plan(R"({"launches": [
      {"kernel": "swish", "global": [64], "local": [8]},
      {"kernel": "swish", "global": [64], "local": [8]}]})");
  const auto variants = workgroup_variants(text, json{info({64}, 256), info({64})}, {16});
  ASSERT_EQ(variants.size(), 3u);
  EXPECT_EQ(variants[2].locals.dump(), "[[8],[16]]");
  const Error error = testing::error_of([&] {
    workgroup_variants(text, json{info({64}, 256), info({64}, 0, {8, 1, 1})}, {16});
  });
  EXPECT_NE(std::string(error.what()).find("does not apply"), std::string::npos);
}

}  // namespace
}  // namespace mblast::opencl
