// SOL-ExecBench problems: the combination of workload results (unit), and `mblast eval` and
// `mblast optimize` on a problem directory on the CPU (the real binary, worker and PyTorch). The
// worker's side (formats, inputs, tolerance) is covered by tests/python/test_sol.py.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/workloads_backend.hpp"
#include "mblast/error.hpp"
#include "mblast/python.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;
using testing::run_mblast;
using testing::TempDir;
using testing::test_file;

SolProblem three_workloads() {
  SolProblem problem;
  problem.name = "p";
  for (const char* uuid : {"w-a", "w-b", "w-c"}) {
    problem.workloads.push_back({uuid, fs::path(uuid) / "f.py", {{"n", 1}}, {{"max_atol", 0.01}}});
  }
  return problem;
}

EvalResult correct(double ref_ms, double cand_ms, double sol_score) {
  EvalResult r;
  r.correct = true;
  r.ref_ms = ref_ms;
  r.cand_ms = cand_ms;
  r.speedup = ref_ms / cand_ms;
  r.max_abs_err = ref_ms / 100;
  r.extra["sol_score"] = sol_score;
  r.extra["sol_ms"] = 0.5;
  return r;
}

TEST(CombineWorkloads, TimesAreGeometricMeansAndTheScoreTheMean) {
  auto a = correct(1.0, 0.5, 0.6);
  a.flags = {"calls_reference_op"};
  const auto combined =
      combine_workloads(three_workloads(), {a, correct(4.0, 4.0, 0.5), correct(2.0, 1.0, 0.7)});
  EXPECT_TRUE(combined.correct);
  EXPECT_NEAR(*combined.ref_ms, 2.0, 1e-12);              // (1 * 4 * 2)^(1/3)
  EXPECT_NEAR(*combined.cand_ms, std::cbrt(2.0), 1e-12);  // (0.5 * 4 * 1)^(1/3)
  EXPECT_NEAR(*combined.speedup, std::cbrt(4.0), 1e-12);
  EXPECT_NEAR(*combined.max_abs_err, 0.04, 1e-12);
  EXPECT_NEAR(combined.extra["sol_score"].get<double>(), 0.6, 1e-12);
  EXPECT_EQ(combined.flags, std::vector<std::string>{"calls_reference_op"});
  ASSERT_EQ(combined.extra["workloads"].size(), 3u);
  EXPECT_EQ(combined.extra["workloads"][2]["uuid"], "w-c");
  EXPECT_EQ(combined.extra["workloads_total"], 3);
}

TEST(CombineWorkloads, AScoreMissingOnOneWorkloadIsNoScore) {
  auto b = correct(4.0, 4.0, 0.5);
  b.extra.erase("sol_score");
  const auto combined =
      combine_workloads(three_workloads(), {correct(1.0, 0.5, 0.6), b, correct(2.0, 1.0, 0.7)});
  EXPECT_FALSE(combined.extra.contains("sol_score"));
}

EvalResult profiled(double ref_ms, int kernels) {
  auto r = correct(ref_ms, ref_ms / 2, 0.6);
  r.signature = ProfileSignature::from_json({{"kernel_count", kernels}});
  r.reference_signature = ProfileSignature::from_json({{"kernel_count", kernels + 1}});
  return r;
}

TEST(CombineWorkloads, TheSignatureIsTheWorkloadsOfMedianSize) {
  // Eager times 1, 4, 2 (no counted sizes): the median is workload 3's, not the first listed.
  const auto combined = combine_workloads(
      three_workloads(), {profiled(1.0, 10), profiled(4.0, 40), profiled(2.0, 20)});
  EXPECT_EQ(combined.signature.metric("kernel_count"), 20);
  EXPECT_EQ(combined.reference_signature.metric("kernel_count"), 21);
  EXPECT_EQ(combined.extra["signature_workload"], "w-c");
}

TEST(CombineWorkloads, OfTwoMiddleWorkloadsTheSmallerStandsAndUnprofiledOnesCountNot) {
  // Profiled: 3 ms and 1 ms (the unprofiled 2 ms is left out): of the two, the smaller stands.
  const auto combined = combine_workloads(
      three_workloads(), {profiled(3.0, 30), correct(2.0, 1.0, 0.7), profiled(1.0, 10)});
  EXPECT_EQ(combined.signature.metric("kernel_count"), 10);
  EXPECT_EQ(combined.extra["signature_workload"], "w-c");
}

// Three profiled workloads of 100, 300 and 200 counted bytes, eager 1.0, 1.02 and 1.5 ms: the
// middle size is the third's, the middle time the second's.
std::vector<EvalResult> three_sized() {
  std::vector<EvalResult> results = {profiled(1.0, 10), profiled(1.02, 30), profiled(1.5, 20)};
  results[0].extra["min_bytes"] = 100;
  results[1].extra["min_bytes"] = 300;
  results[2].extra["min_bytes"] = 200;
  return results;
}

TEST(CombineWorkloads, CountedSizesChooseTheTypicalWorkloadOverEagerTimes) {
  const auto combined = combine_workloads(three_workloads(), three_sized());
  EXPECT_EQ(combined.extra["signature_workload"], "w-c");
  EXPECT_EQ(combined.signature.metric("kernel_count"), 20);
}

TEST(CombineWorkloads, ShapeFactsAreTheTypicalWorkloadsAndCostsAddUp) {
  auto results = three_sized();
  results[0].extra["problem"] = "workload-000.py";
  results[2].extra["problem"] = "workload-002.py";
  results[0].extra["eval_seconds"] = 1.0;
  results[1].extra["eval_seconds"] = 2.0;
  results[2].extra["eval_seconds"] = 4.0;
  const auto combined = combine_workloads(three_workloads(), results);
  EXPECT_EQ(combined.extra["min_bytes"], 200);
  EXPECT_EQ(combined.extra["problem"], "workload-002.py");
  EXPECT_DOUBLE_EQ(combined.extra["eval_seconds"].get<double>(), 7.0);
}

TEST(CombineWorkloads, PhasesAddUpByNameAndEachWorkloadKeepsItsOwn) {
  auto results = three_sized();
  results[0].extra["phase_seconds"] = {{"total", 1.0}, {"load", 0.5}};
  results[1].extra["phase_seconds"] = {{"total", 2.0}, {"timing", 0.25}};
  results[2].extra["phase_seconds"] = {{"total", 4.0}, {"load", "n/a"}};
  const auto combined = combine_workloads(three_workloads(), results);
  const auto& phases = combined.extra["phase_seconds"];
  EXPECT_DOUBLE_EQ(phases["total"].get<double>(), 7.0);
  EXPECT_DOUBLE_EQ(phases["load"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(phases["timing"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(combined.extra["workloads"][1]["phase_seconds"]["total"].get<double>(), 2.0);
}

TEST(CombineWorkloads, NoProfiledWorkloadNamesNone) {
  const auto none = combine_workloads(three_workloads(), {correct(1.0, 0.5, 0.6)});
  EXPECT_FALSE(none.extra.contains("signature_workload"));
}

TEST(CombineWorkloads, TheFirstFailureIsTheResultAndNamesItsWorkload) {
  EvalResult wrong = EvalResult::failure(ErrorKind::mismatch, "seed 1: output 0 differs");
  const auto combined = combine_workloads(three_workloads(), {correct(1.0, 0.5, 0.6), wrong});
  EXPECT_FALSE(combined.correct);
  EXPECT_EQ(combined.error_kind, ErrorKind::mismatch);
  EXPECT_EQ(*combined.error, "workload 2 of 3 (w-b): seed 1: output 0 differs");
  EXPECT_EQ(combined.extra["workloads"].size(), 2u);
  EXPECT_FALSE(combined.extra["workloads"][1]["correct"].get<bool>());
}

// An inner backend that records which problem file each evaluation was on; workload "w-b" fails.
class RecordingBackend : public Backend {
 public:
  explicit RecordingBackend(bool native = false) {
    traits_.name = native ? "opencl" : "cuda";
    traits_.native = native;
  }
  const BackendTraits& traits() const override { return traits_; }
  std::optional<EvalResult> measured_baseline() override { return std::nullopt; }
  std::string hardware(const EvalResult&) override { return "fake"; }
  Artifact build(const fs::path& candidate) override { return {candidate}; }
  EvalResult evaluate(const Artifact&, bool) override {
    return EvalResult::failure(ErrorKind::task, "own");
  }
  std::optional<EvalResult> evaluate_on(const fs::path& problem, const Artifact& artifact,
                                        bool) override {
    judged.emplace_back(problem, artifact.candidate);
    if (problem.parent_path() == "w-b" && fail_b)
      return EvalResult::failure(ErrorKind::mismatch, "off");
    return correct(2.0, 1.0, 0.6);
  }
  std::string assemble(const std::vector<std::pair<std::string, std::string>>&) override {
    return "";
  }
  Builtin builtin(const std::string&, const fs::path&, bool,
                  const std::vector<std::string>&) override {
    return {};
  }
  bool export_for_harness(const fs::path&, const fs::path&) override { return true; }
  void set_deadline(std::chrono::steady_clock::time_point) override {}
  std::optional<std::string> judged_problem_source() override { return "def run(x): ...\n"; }

  std::vector<std::pair<fs::path, fs::path>> judged;  // (problem, candidate)
  bool fail_b = false;

 private:
  BackendTraits traits_;
};

TEST(WorkloadsBackend, JudgesEveryWorkloadFileInOrderAndStopsAtTheFirstFailure) {
  auto inner = std::make_unique<RecordingBackend>();
  auto* recording = inner.get();
  auto backend = make_workloads_backend(std::move(inner), three_workloads());
  EXPECT_TRUE(backend->traits().harness.empty());
  EXPECT_TRUE(backend->judge("cand.py").correct);
  ASSERT_EQ(recording->judged.size(), 3u);
  EXPECT_EQ(recording->judged[2].first, fs::path("w-c") / "f.py");
  EXPECT_EQ(recording->judged[2].second, "cand.py");
  // The problem judged against itself is each workload's own file.
  recording->judged.clear();
  backend->judge(fs::path("w-a") / "f.py");
  EXPECT_EQ(recording->judged[1].second, fs::path("w-b") / "f.py");
  recording->judged.clear();
  recording->fail_b = true;
  EXPECT_FALSE(backend->judge("cand.py").correct);
  EXPECT_EQ(recording->judged.size(), 2u);
  // The agents see the problem with every workload's shapes.
  const std::string source = *backend->judged_problem_source();
  EXPECT_EQ(source.rfind("def run(x)", 0), 0u);
  EXPECT_NE(source.find("#   w-c: {\"n\":1}"), std::string::npos) << source;
  EXPECT_FALSE(backend->export_for_harness("a", "b"));
}

// A backend that judges the workloads together gets every file at once, the problem judged
// against itself too (the default then judges each against its own file).
class TogetherBackend final : public RecordingBackend {
 public:
  std::optional<std::vector<EvalResult>> evaluate_workloads(const std::vector<fs::path>& problems,
                                                            const Artifact& artifact,
                                                            bool compile_baseline) override {
    together.push_back(problems);
    return Backend::evaluate_workloads(problems, artifact, compile_baseline);
  }
  std::vector<std::vector<fs::path>> together;
};

TEST(WorkloadsBackend, ACandidatesWorkloadsGoToTheBackendTogether) {
  auto inner = std::make_unique<TogetherBackend>();
  auto* backend_inner = inner.get();
  auto backend = make_workloads_backend(std::move(inner), three_workloads());
  EXPECT_TRUE(backend->judge("cand.py").correct);
  ASSERT_EQ(backend_inner->together.size(), 1u);
  EXPECT_EQ(backend_inner->together[0].size(), 3u);
  EXPECT_EQ(backend_inner->together[0][1], fs::path("w-b") / "f.py");
  backend_inner->judged.clear();
  EXPECT_EQ(backend->judge(fs::path("w-a") / "f.py").extra["workloads"].size(), 3u);
  EXPECT_EQ(backend_inner->together.size(), 2u);
  ASSERT_EQ(backend_inner->judged.size(), 3u);
  EXPECT_EQ(backend_inner->judged[2].second, fs::path("w-c") / "f.py");
}

TEST(WorkloadsBackend, ANativeBackendIsRefused) {
  const Error e = testing::error_of(
      [] { make_workloads_backend(std::make_unique<RecordingBackend>(true), three_workloads()); });
  EXPECT_EQ(e.code(), ExitCode::bad_input);
  EXPECT_NE(std::string(e.what()).find("not by opencl"), std::string::npos) << e.what();
}

class SolCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!find_torch_python()) GTEST_SKIP() << "no Python with torch";
  }
  std::map<std::string, std::optional<std::string>> env() const {
    return testing::no_llm_env(dir_.path());
  }
  ProcessResult eval(const std::string& problem, const std::string& candidate,
                     std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"eval",
                                     test_file(problem),
                                     "--candidate",
                                     candidate,
                                     "--device",
                                     "cpu",
                                     "--json",
                                     "--seeds",
                                     "2",
                                     "--runs",
                                     "5",
                                     "--cache-dir",
                                     (dir_ / "cache").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_mblast(args, env());
  }
  TempDir dir_;
};

const char* const kSmall = "problems/sol/rmsnorm_small";

TEST_F(SolCli, ASolutionIsJudgedOnEveryWorkload) {
  const auto result = eval(kSmall, test_file("problems/sol/rmsnorm_small/solution_dps.json"));
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_TRUE(json["correct"].get<bool>()) << json.dump(2);
  ASSERT_EQ(json["workloads"].size(), 3u);
  for (const auto& w : json["workloads"]) EXPECT_TRUE(w["correct"].get<bool>()) << w.dump();
  EXPECT_EQ(json["workloads"][1]["axes"]["batch_size"], 24);
  EXPECT_EQ(json["workloads"][1]["tolerance"]["max_atol"], 0.02);
  EXPECT_EQ(json["tolerance"]["matched_ratio"], 0.99);
  EXPECT_GT(json["speedup"].get<double>(), 0);
  // One worker judged them all, as SOL-ExecBench's harness does.
  ASSERT_TRUE(json["workloads"][0]["worker_pid"].is_number()) << json["workloads"].dump();
  double worker_total = 0;
  for (const auto& w : json["workloads"]) {
    EXPECT_EQ(w["worker_pid"], json["workloads"][0]["worker_pid"]);
    // Each workload's own time in the worker, for splitting the step's wall over them.
    EXPECT_GT(w["phase_seconds"].value("total", 0.0), 0.0) << w.dump();
    worker_total += w["phase_seconds"].value("total", 0.0);
  }
  // The problem's phases are the workloads' added up.
  EXPECT_NEAR(json["phase_seconds"]["total"].get<double>(), worker_total, 1e-6);
}

TEST_F(SolCli, TheProblemJudgedAgainstItselfIsCorrectOnEveryWorkload) {
  const auto result = eval(kSmall, test_file(std::string(kSmall) + "/definition.json"));
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["workloads"].size(), 3u);
  const auto flags = json["flags"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(flags.begin(), flags.end(), "reference_as_candidate"), flags.end());
  // Each workload against its own file, in one worker.
  EXPECT_EQ(json["workloads"][0]["worker_pid"], json["workloads"][1]["worker_pid"]);
}

TEST_F(SolCli, AWrongSolutionFailsNamingTheWorkload) {
  const auto result = eval(kSmall, test_file("problems/sol/rmsnorm_small/solution_wrong.json"));
  EXPECT_EQ(result.exit_code, 1) << result.err << result.out;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["error_kind"], "mismatch");
  EXPECT_EQ(json["error"].get<std::string>().rfind("workload 1 of 3 (w-rows-1): ", 0), 0u)
      << json["error"];
}

TEST_F(SolCli, BadInputIsRefusedWithTheFieldOrTheReason) {
  auto result = eval("problems/sol/bad_dtype", test_file("problems/sol/bad_dtype"));
  EXPECT_EQ(result.exit_code, 2) << result.out;
  EXPECT_NE(result.err.find("definition.json.inputs.weight.dtype: unknown dtype 'bf16'"),
            std::string::npos)
      << result.err;
  result = eval(kSmall, test_file("problems/sol/bad_binding.json"));
  EXPECT_EQ(result.exit_code, 2) << result.out;
  EXPECT_NE(result.err.find("torch binding only"), std::string::npos) << result.err;
  result = eval(kSmall, test_file("problems/sol/rmsnorm_small/solution_dps.json"),
                {"--export", (dir_ / "out.py").string()});
  EXPECT_EQ(result.exit_code, 2) << result.out;
}

// Built ahead on the host; on a PyTorch without CUDA the build fails, and the judge says why.
TEST_F(SolCli, ACudaSolutionThatCannotBuildHereFailsWithTheReason) {
  const auto result = eval(kSmall, test_file("problems/sol/rmsnorm_small/solution_cuda.json"));
  EXPECT_EQ(result.exit_code, 1) << result.err << result.out;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_FALSE(json["correct"].get<bool>());
  EXPECT_EQ(json["workloads"].size(), 1u);  // judging stops at the first workload it fails
}

TEST_F(SolCli, OptimizeRunsOnAProblemDirectory) {
  const fs::path out = dir_ / "run";
  const auto result =
      run_mblast({"--kb", (dir_ / "kb.sqlite").string(), "optimize", test_file(kSmall), "--device",
                  "cpu", "--out", out.string(), "--seeds", "2", "--runs", "5", "--iterations", "1",
                  "--steps", "2", "--cache-dir", (dir_ / "cache").string(), "--json"},
                 env());
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["task"], "sol/rmsnorm_small");
  EXPECT_TRUE(json["correct"].get<bool>()) << json.dump(2);
  EXPECT_TRUE(fs::is_regular_file(out / "sol" / "manifest.json"));
  EXPECT_TRUE(fs::is_regular_file(out / "sol" / "workload-002.py"));
  EXPECT_TRUE(json["kernelbench_file"].is_null());
}

}  // namespace
}  // namespace mblast
