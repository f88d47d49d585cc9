// The MAIC-RL loop in-process, against a scripted backend and a fake LLM: no Python, no worker,
// no GPU. Each test is a rule of the loop: the baseline, the reward, budgets, the time limit,
// resume, exploration, and where the critic is asked.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "core/loop.hpp"
#include "core/optimize_support.hpp"
#include "mblast/backend.hpp"
#include "mblast/error.hpp"
#include "mblast/files.hpp"
#include "mblast/kb.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// A backend whose verdicts are a script: a built-in writes "# transform NAME" and is judged by
// the speedup the script gives NAME (absent: incorrect); any other candidate by `llm_speedup`.
class FakeBackend : public Backend {
 public:
  FakeBackend() {
    traits_.name = "cuda";  // the KB's CUDA catalogue supplies the techniques
    traits_.candidate_extension = ".py";
    traits_.default_device = "cuda";
    traits_.agent_format = [](const std::string&) {
      return AgentFormat{
          "backend_cuda", "custom CUDA kernels", {{"model_new.py", "python"}}, true, true};
    };
    traits_.check_device = [](const std::string&) {};
  }

  const BackendTraits& traits() const override { return traits_; }
  BackendTraits& mutable_traits() { return traits_; }
  // Set: the backend measures its own baseline (as native backends do) instead of the reference.
  std::optional<EvalResult> measured;
  std::optional<EvalResult> measured_baseline() override { return measured; }
  nlohmann::json signature = {{"total_ms", 1.0}, {"kernel_count", 3}};  // every evaluation's
  std::map<std::string, nlohmann::json> signature_of;  // a built-in transform's own, where set
  std::string hardware(const EvalResult&) override { return hardware_name; }
  Artifact build(const fs::path& candidate) override { return {candidate}; }

  EvalResult evaluate(const Artifact& artifact, bool compile_baseline) override {
    ++evaluations;
    std::ifstream in(artifact.candidate);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    judged.push_back(text);
    if (compile_baseline) compile_baselines++;
    if (stop_in_flight) {
      EvalResult stopped =
          EvalResult::failure(ErrorKind::timeout, "timed out: the run's --time-limit");
      stopped.stopped_by_time_limit = true;
      return stopped;
    }
    EvalResult r;
    r.ref_ms = 1.0;
    if (!eager_ms.empty()) {
      r.ref_ms = eager_ms.front();
      eager_ms.pop_front();
    }
    r.device_name = "fake GPU";
    r.torch_version = "2.11.0";
    r.signature = ProfileSignature::from_json(signature);
    std::optional<double> speedup;
    if (text.rfind("# transform ", 0) == 0) {
      const std::string name = text.substr(12, text.find('\n') - 12);
      if (auto it = signature_of.find(name); it != signature_of.end())
        r.signature = ProfileSignature::from_json(it->second);
    }
    if (text.rfind("# reference", 0) == 0) {
      speedup = 1.0;
      if (compile_baseline) r.compile_ms = 0.5;
      if (calibration_seconds) r.extra["calibration_seconds"] = *calibration_seconds;
    } else if (text.rfind("# transform ", 0) == 0) {
      const std::string name = text.substr(12, text.find('\n') - 12);
      if (auto it = speedups.find(name); it != speedups.end()) speedup = it->second;
      if (auto it = timed.find(name); it != timed.end()) {
        r.ref_ms = it->second.eager_ms;
        speedup = it->second.eager_ms / it->second.cand_ms;
      }
    } else {
      speedup = llm_speedup;
    }
    if (!speedup) return EvalResult::failure(ErrorKind::mismatch, "wrong values at index [0]");
    r.correct = true;
    r.speedup = *speedup;
    r.cand_ms = *r.ref_ms / *speedup;
    return r;
  }

  std::string assemble(const std::vector<std::pair<std::string, std::string>>& files) override {
    return files.front().second + "\n";
  }
  // A region's candidate is "# transform NAME@OP1,OP2" (speedups can be set for it apart).
  Builtin builtin(const std::string& transform, const fs::path& file, bool is_reference,
                  const std::vector<std::string>& region_ops) override {
    if (transform == "reference") return {"# reference\n", ""};
    builtin_calls.push_back({transform, file, is_reference, region_ops});
    if (transform == "cuda_graph" &&
        file.filename().string().find("-inner-") != std::string::npos) {
      // The graph-first round's wrapper around a candidate: "# transform INNER+cuda_graph".
      std::ifstream in(file);
      std::string first_line;
      std::getline(in, first_line);
      return {first_line + "+" + transform + "\n", ""};
    }
    std::string name = transform;
    for (std::size_t i = 0; i < region_ops.size(); ++i) name += (i ? "," : "@") + region_ops[i];
    if (no_candidate_for.count(name)) return {std::nullopt, "nothing to change"};
    return {"# transform " + name + "\n", ""};
  }
  // What the check of the "first" built-ins answers (transform -> why), and the threads that asked.
  std::map<std::string, std::string> unchanged;
  std::vector<std::thread::id> checked_on;
  std::map<std::string, std::string> nothing_to_change(
      const std::vector<std::string>& transforms) override {
    checked_on.push_back(std::this_thread::get_id());
    std::map<std::string, std::string> why;
    for (const auto& transform : transforms) {
      if (const auto found = unchanged.find(transform); found != unchanged.end())
        why.insert(*found);
    }
    return why;
  }
  bool host_idle = true;  // what host_idle_while_judging() answers (a GPU device's)
  bool host_idle_while_judging() const override { return host_idle; }
  std::string hardware_name = "fake GPU";  // what hardware() answers
  std::optional<ProgramRegions> regions;   // what program_regions() answers
  std::optional<ProgramRegions> program_regions() override { return regions; }
  bool export_for_harness(const fs::path&, const fs::path&) override { return false; }
  void set_deadline(std::chrono::steady_clock::time_point until) override { deadline = until; }
  std::vector<std::string> prebuilt;  // the first line of each file handed to prebuild()
  std::vector<int> prebuilt_in_step;  // the step begun last when each was handed over
  std::vector<int> steps_begun;
  bool stopped_prebuilding = false;
  void prebuild(const fs::path& candidate) override {
    std::ifstream in(candidate);
    std::string first_line;
    std::getline(in, first_line);
    prebuilt.push_back(first_line);
    prebuilt_in_step.push_back(steps_begun.empty() ? 0 : steps_begun.back());
  }
  void begin_step(int step) override { steps_begun.push_back(step); }
  void stop_prebuilding() override { stopped_prebuilding = true; }

  struct BuiltinCall {
    std::string transform;
    fs::path file;
    bool is_reference = false;
    std::vector<std::string> region_ops;
  };
  std::vector<BuiltinCall> builtin_calls;  // the transforms asked for, and what they applied to
  std::map<std::string, double> speedups;  // built-in transform -> the speedup it reaches
  std::set<std::string> no_candidate_for;  // built-in transforms (NAME@OPS) that make no candidate
  std::optional<double> llm_speedup;
  std::deque<double> eager_ms;  // eager's time in each evaluation, in turn (then 1 ms)
  struct Timed {
    double eager_ms, cand_ms;
  };
  // Built-in transform -> both times of its evaluation (its speedup is their ratio).
  std::map<std::string, Timed> timed;
  bool stop_in_flight = false;
  std::optional<double> calibration_seconds;  // the reference's judging measured the ceilings
  int evaluations = 0;
  int compile_baselines = 0;
  std::vector<std::string> judged;
  std::optional<std::chrono::steady_clock::time_point> deadline;

 private:
  BackendTraits traits_;
};

// A scripted LLM; `during` runs inside every call (to look at the KB then).
class FakeLlm : public LlmClient {
 public:
  explicit FakeLlm(std::deque<std::string> answers) : answers_(std::move(answers)) {}
  LlmResponse complete(const LlmRequest& request) override {
    roles.push_back(request.role_tag);
    if (during) during(request);
    if (answers_.empty()) throw job_error("fake LLM: no answer left");
    LlmResponse r;
    r.text = answers_.front();
    answers_.pop_front();
    r.output_tokens = 10;
    r.finish_reason = "stop";
    r.provider = "fake";
    r.model = "test";
    return r;
  }
  std::string name() const override { return "fake:test"; }

  std::vector<std::string> roles;
  std::function<void(const LlmRequest&)> during;

 private:
  std::deque<std::string> answers_;
};

class LoopTest : public ::testing::Test {
 protected:
  OptimizeOptions options(int steps) const {
    OptimizeOptions o;
    o.problem = fs::path(MBLAST_SOURCE_DIR) / "tests" / "problems" / "relu_small.py";
    o.judge.backend = "cuda";
    o.judge.device = "cuda";
    o.iterations = 1;
    o.steps = steps;
    o.judge.seed = 3;
    o.kb = dir_ / "kb.sqlite";
    return o;
  }

  // The fake backend with CUDA's compile transform, the run restricted to one technique.
  OptimizeOptions with_compile_transform(const std::string& technique, int steps) {
    backend_.mutable_traits().compile_transform = "torch_compile";
    auto o = options(steps);
    o.techniques = {technique};
    return o;
  }

  RunDir& run_dir() {
    if (!run_) {
      run_ = std::make_unique<RunDir>(RunDir::create(dir_ / "run"));
      run_->write_config({{"options", options_to_json(options(1))}});
    }
    return *run_;
  }

  nlohmann::json run(const OptimizeOptions& o, optimize_detail::Agents& agents) {
    KnowledgeBase kb(o.kb);
    Loop loop(o, backend_, kb, agents, run_dir(), Resumed::from(run_dir()), {});
    return loop.run().to_json();
  }

  nlohmann::json run_builtins(const OptimizeOptions& o) {
    optimize_detail::Agents none;
    none.description = "none";
    return run(o, none);
  }

  std::string run_log() { return read_input_file(run_dir().log_file(), "run log"); }

  // A --graph-first run offered the compile and the whole-model graph.
  OptimizeOptions graph_first_options(int steps) const {
    auto o = options(steps);
    o.techniques = {"cuda/builtin-torch-compile", "cuda/builtin-cuda-graph"};
    o.graph_first = true;
    return o;
  }

  std::vector<nlohmann::json> graph_first_one_step() {
    run_builtins(graph_first_options(1));
    return run_dir().steps();
  }

  std::vector<nlohmann::json> attempts() {
    KnowledgeBase kb(dir_ / "kb.sqlite");
    return kb.query({.kind = "attempts"});
  }

  TempDir dir_;
  FakeBackend backend_;
  std::unique_ptr<RunDir> run_;
};

TEST_F(LoopTest, TheReferenceIsTheBaselineJudgedOnceWithoutTorchCompile) {
  const auto summary = run_builtins(options(1));
  EXPECT_EQ(backend_.judged.front(), "# reference\n");
  EXPECT_EQ(backend_.compile_baselines, 0);  // the fake's traits name no compile transform
  EXPECT_EQ(summary["baseline_ms"], 1.0);
  EXPECT_TRUE(summary["compile_ms"].is_null());
  EXPECT_EQ(summary["hardware"], "fake GPU");
  KnowledgeBase kb(dir_ / "kb.sqlite");
  EXPECT_EQ(kb.query({.kind = "runs"}).size(), 1u);
}

// The compile baseline costs the first step nothing: the compile built-in's own step on the
// reference gives it, or, where no such step ran, one more judging of the reference after the
// last step; a run stopped by a budget goes without.
TEST_F(LoopTest, TheCompileBaselineComesFromTheCompileStepOnTheReference) {
  backend_.speedups = {{"torch_compile", 4.0}};
  const auto summary = run_builtins(with_compile_transform("cuda/builtin-torch-compile", 1));
  EXPECT_EQ(backend_.compile_baselines, 0);
  EXPECT_EQ(summary["evaluations"], 2);
  EXPECT_DOUBLE_EQ(summary["compile_ms"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(summary["speedup_vs_compile"].get<double>(), 1.0);
}

TEST_F(LoopTest, WithoutACompileStepAFinishedRunJudgesItAfterTheLastStep) {
  backend_.speedups = {{"cuda_graph", 1.5}};
  const auto summary = run_builtins(with_compile_transform("cuda/builtin-cuda-graph", 1));
  EXPECT_EQ(summary["status"], "finished");
  EXPECT_EQ(backend_.compile_baselines, 1);
  EXPECT_EQ(backend_.judged.back(), "# reference\n");
  EXPECT_EQ(summary["compile_ms"], 0.5);
  EXPECT_DOUBLE_EQ(summary["speedup_vs_compile"].get<double>(), 0.75);
}

TEST_F(LoopTest, ARunStoppedByABudgetSpendsNothingOnTheCompileBaseline) {
  backend_.speedups = {{"cuda_graph", 1.5}};
  auto o = with_compile_transform("cuda/builtin-cuda-graph", 3);
  o.max_evaluations = 2;
  const auto summary = run_builtins(o);
  EXPECT_EQ(summary["status"], "budget");
  EXPECT_EQ(backend_.compile_baselines, 0);
  EXPECT_EQ(backend_.evaluations, 2);
  EXPECT_TRUE(summary["compile_ms"].is_null());
}

// ncu profiles the candidate side only: the first step's signature is eager's profile with the
// counters of the reference judged as a candidate, so that --profile ncu reaches the first state.
TEST(BaselineSignature, EagersProfileWithTheCandidateSidesCounters) {
  const nlohmann::json eager = {{"total_ms", 2.0}, {"sol_fraction", 0.1}, {"ridge_ratio", 0.2}};
  const nlohmann::json counted = {{"status", "ok"},
                                  {"metrics", {{"dram_throughput_fraction", 0.3}}}};
  EvalResult judged = EvalResult::from_json(
      {{"correct", true},
       {"signature", {{"total_ms", 2.1}, {"profiler", "ncu"}, {"ncu", counted}}},
       {"reference_signature", eager}});
  const auto merged = optimize_detail::baseline_signature(judged);
  EXPECT_EQ(merged.metric("total_ms"), 2.0);  // eager's own profile
  EXPECT_EQ(merged.metric("dram_throughput_fraction"), 0.3);
  EXPECT_EQ(merged.to_json()["profiler"], "ncu");

  judged = EvalResult::from_json(
      {{"correct", true}, {"signature", {{"total_ms", 2.1}}}, {"reference_signature", eager}});
  EXPECT_EQ(optimize_detail::baseline_signature(judged).to_json(), eager);  // no counters
  judged = EvalResult::from_json({{"correct", true}, {"signature", {{"total_ms", 2.1}}}});
  EXPECT_EQ(optimize_detail::baseline_signature(judged).metric("total_ms"), 2.1);  // no eager side
}

TEST_F(LoopTest, AMeasuredBaselinesSignatureClassifiesTheFirstStep) {
  EvalResult baseline = EvalResult::from_json(
      {{"correct", true},
       {"ref_ms", 1.0},
       {"signature",
        {{"sol_fraction", 0.9}, {"arithmetic_intensity", 0.5}, {"ridge_ratio", 0.04}}}});
  backend_.measured = baseline;
  backend_.speedups = {{"cuda_graph", 1.0}, {"torch_compile", 1.0}};
  run_builtins(options(1));
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0]["state"], "near-roofline/bandwidth") << steps[0].dump();
  EXPECT_NE(steps[0]["state_evidence"].get<std::string>().find("sol_fraction = 0.9"),
            std::string::npos)
      << steps[0].dump();
}

TEST_F(LoopTest, TheRewardIsTheLogOfTheGainOverTheCurrentBest) {
  backend_.speedups = {{"cuda_graph", 2.0},
                       {"torch_compile", 3.0},
                       {"torch_compile_max_autotune", 3.0},
                       {"torch_compile_cudagraphs", 3.0},
                       {"torch_compile_max_autotune_cd", 3.0},
                       {"channels_last+torch_compile", 3.0},
                       {"channels_last", 3.0},
                       {"cudnn_benchmark", 3.0}};
  const auto summary = run_builtins(options(2));
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 2u);
  // The first built-in lifts 1x to its speedup; the second is judged against that new best.
  const double first = steps[0]["speedup"].get<double>();
  EXPECT_NEAR(steps[0]["reward"].get<double>(), std::log(first), 1e-12);
  EXPECT_TRUE(steps[0]["improved"].get<bool>());
  const double second = steps[1]["speedup"].get<double>();
  EXPECT_NEAR(steps[1]["reward"].get<double>(), std::log(second / first), 1e-12);
  EXPECT_EQ(summary["best_speedup"], std::max(first, second));
  EXPECT_EQ(attempts().size(), 2u);
}

TEST_F(LoopTest, AWrongCandidateEarnsTheFailureRewardAndIsNotAccepted) {
  const auto summary = run_builtins(options(1));  // no transform has a speedup: all incorrect
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0]["outcome"], "incorrect");
  EXPECT_EQ(steps[0]["reward"], -1.0);
  EXPECT_FALSE(steps[0]["improved"].get<bool>());
  // The run still ends correct: at the reference, its floor.
  EXPECT_TRUE(summary["best_is_reference"].get<bool>());
  EXPECT_EQ(summary["correct_candidates"], 0);
}

TEST_F(LoopTest, TheReferenceIsTheFloorAndABestMustBeatItByTheMargin) {
  backend_.speedups = {{"cuda_graph", 0.5},
                       {"torch_compile", 0.999},
                       {"torch_compile_max_autotune", 1.005},
                       {"torch_compile_cudagraphs", 0.9},
                       {"channels_last", 0.98},
                       {"cudnn_benchmark", 1.0}};
  const auto slower = run_builtins(options(6));
  EXPECT_EQ(slower["best_speedup"], 1.0);
  EXPECT_EQ(slower["best_technique"], "reference");
  EXPECT_TRUE(slower["best_is_reference"].get<bool>());
  EXPECT_TRUE(slower["correct"].get<bool>());
  EXPECT_EQ(slower["best_ms"], 1.0);  // the reference's own time
  std::ifstream best(slower["best_file"].get<std::string>());
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(best)), {}), "# reference\n");
  for (const auto& step : run_dir().steps()) {
    EXPECT_FALSE(step["new_best_candidate"].get<bool>()) << step.dump();
    EXPECT_EQ(step["best_speedup"], 1.0) << step.dump();
  }
}

TEST_F(LoopTest, ACandidateBeyondTheMarginReplacesTheReference) {
  backend_.speedups = {{"cuda_graph", 1.02},
                       {"torch_compile", 1.02},
                       {"torch_compile_max_autotune", 1.02},
                       {"torch_compile_cudagraphs", 1.02},
                       {"channels_last", 1.02},
                       {"cudnn_benchmark", 1.02}};
  const auto summary = run_builtins(options(1));
  EXPECT_EQ(summary["best_speedup"], 1.02);
  EXPECT_FALSE(summary["best_is_reference"].get<bool>());
  EXPECT_NE(summary["best_technique"], "reference");
}

TEST_F(LoopTest, TheEvaluationBudgetEndsTheRunBeforeAnotherStep) {
  auto o = options(5);
  o.max_evaluations = 2;  // the reference and one candidate
  const auto summary = run_builtins(o);
  EXPECT_EQ(summary["status"], "budget");
  EXPECT_EQ(summary["evaluations"], 2);
  EXPECT_EQ(backend_.evaluations, 2);
  // The KB's row of the run records the budgets it was given.
  KnowledgeBase kb(dir_ / "kb.sqlite");
  const auto row = kb.run(summary["run_id"].get<std::string>());
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->budgets["max_evaluations"], 2) << row->budgets.dump();
  EXPECT_EQ(row->budgets["steps"], 5) << row->budgets.dump();
  EXPECT_TRUE(row->budgets["max_tokens"].is_null()) << row->budgets.dump();
}

TEST_F(LoopTest, TheTimeLimitStopsTheStepInFlightAndRecordsNoAttempt) {
  auto o = options(3);
  o.time_limit_minutes = 10;
  backend_.stop_in_flight = true;  // the backend reports the run's deadline passed mid-evaluation
  const auto summary = run_builtins(o);
  EXPECT_EQ(summary["status"], "budget");
  EXPECT_NE(summary["stop_reason"].get<std::string>().find("in flight was stopped"),
            std::string::npos);
  ASSERT_TRUE(backend_.deadline.has_value());  // the loop told the backend when the run ends
  EXPECT_TRUE(attempts().empty());
  EXPECT_TRUE(run_dir().evaluations().empty());  // not stored: a resumed run judges it again
}

TEST_F(LoopTest, AResumedRunJudgesNothingTwice) {
  backend_.speedups = {{"cuda_graph", 1.5},
                       {"torch_compile", 1.2},
                       {"channels_last", 1.1},
                       {"cudnn_benchmark", 1.05},
                       {"torch_compile_max_autotune", 1.3},
                       {"torch_compile_cudagraphs", 1.4}};
  run_builtins(options(2));
  const int first_run = backend_.evaluations;
  EXPECT_EQ(first_run, 3);  // the reference and two candidates
  const auto summary = run_builtins(options(3));
  EXPECT_EQ(run_dir().steps().size(), 3u);
  EXPECT_EQ(backend_.evaluations - first_run, 1);  // only the third step's candidate
  EXPECT_EQ(summary["evaluations"], 4);
  EXPECT_EQ(attempts().size(), 3u);
}

// Each evaluation times eager in its own process: every step records the eager time its speedup
// is over, and the summary the range of them, a resumed run's earlier steps included.
TEST_F(LoopTest, EachStepRecordsItsEagerTimeAndTheSummaryTheirRange) {
  backend_.speedups = {{"cuda_graph", 1.5},
                       {"torch_compile", 1.2},
                       {"channels_last", 1.1},
                       {"cudnn_benchmark", 1.05},
                       {"torch_compile_max_autotune", 1.3},
                       {"torch_compile_cudagraphs", 1.4},
                       {"torch_compile_max_autotune_cd", 1.3},
                       {"sibling_merge", 1.02},
                       {"sibling_merge+cuda_graph", 1.55}};  // stacked under the graph
  backend_.eager_ms = {1.0, 2.0, 1.5};
  const auto first = run_builtins(options(2));
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0]["eager_ms"], 2.0);
  EXPECT_EQ(steps[1]["eager_ms"], 1.5);
  EXPECT_EQ(first["eager_range"],
            (nlohmann::json{{"min_ms", 1.0}, {"max_ms", 2.0}, {"evaluations", 3}}));
  backend_.eager_ms = {0.8, 0.8};  // step 3's candidate, and the same inside the graph
  const auto resumed = run_builtins(options(3));
  EXPECT_EQ(resumed["eager_range"],
            (nlohmann::json{{"min_ms", 0.8}, {"max_ms", 2.0}, {"evaluations", 4}}));
}

// Where eager varies between evaluations (host-bound models), a launch-free candidate's speedup
// carries its process's eager: the times decide (H200 call 43, ResNet18's three candidates). Each
// of them judged first, the run ends at the fastest.
class EagerVariesTest : public LoopTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(EagerVariesTest, TheCandidatesOwnTimesDecideTheBest) {
  backend_.eager_ms = {3.41};  // the reference's evaluation
  // After the graph is the best, the others are judged inside a graph (the graph stays outermost).
  backend_.timed = {{"cuda_graph", {1.96, 0.544}},
                    {"cudnn_benchmark", {4.61, 0.635}},
                    {"channels_last", {2.96, 0.588}},
                    {"cudnn_benchmark+cuda_graph", {4.61, 0.635}},
                    {"channels_last+cuda_graph", {2.96, 0.588}}};
  auto o = options(1);
  o.techniques = {GetParam()};
  run_builtins(o);                                 // that candidate first
  const auto summary = run_builtins(options(10));  // resumed: the others
  EXPECT_EQ(summary["best_technique"], "cuda/builtin-cuda-graph");
  EXPECT_NEAR(summary["best_ms"].get<double>(), 0.544, 1e-9);
  int noted = 0;
  for (const auto& step : run_dir().steps()) {
    if (step.contains("selection_note")) ++noted;
  }
  EXPECT_GE(noted, 1);  // a step whose speedup and time disagreed says what decided
}

INSTANTIATE_TEST_SUITE_P(EachFirst, EagerVariesTest,
                         ::testing::Values("cuda/builtin-cuda-graph",
                                           "cuda/builtin-cudnn-benchmark",
                                           "cuda/builtin-channels-last"));

// Where eager varies, a candidate slower than the reference beside it is no best, though its own
// time beats eager's median (its process was a fast one).
TEST_F(LoopTest, WhereEagerVariesACandidateStillMustBeatTheReferenceBesideIt) {
  backend_.eager_ms = {3.0};
  backend_.timed = {{"cuda_graph", {2.0, 2.1}}, {"channels_last", {4.0, 3.9}}};
  const auto summary = run_builtins(options(6));
  EXPECT_EQ(summary["best_technique"], "reference");
  EXPECT_EQ(summary["best_speedup"], 1.0);
}

// Attempts made on other hardware enter the selector's statistics with --other-hardware-weight.
TEST_F(LoopTest, AttemptsOnOtherHardwareCountWithTheirWeight) {
  backend_.speedups = {{"torch_compile", 2.0}};
  std::map<double, double> n_prior;
  for (const double weight : {0.0, 1.0}) {
    const std::string name = weight == 0.0 ? "0" : "1";
    auto o = with_compile_transform("cuda/builtin-torch-compile", 1);
    o.kb = dir_ / ("kb-" + name + ".sqlite");
    backend_.hardware_name = "another GPU";
    run_ = std::make_unique<RunDir>(RunDir::create(dir_ / ("other-" + name)));
    run_->write_config({{"options", options_to_json(o)}});
    run_builtins(o);

    backend_.hardware_name = "fake GPU";
    o.other_hardware_weight = weight;
    run_ = std::make_unique<RunDir>(RunDir::create(dir_ / ("here-" + name)));
    run_->write_config({{"options", options_to_json(o)}});
    run_builtins(o);
    const auto decision = run_dir().steps().front()["decision"];
    EXPECT_EQ(decision["n_local"], 0.0) << weight;
    n_prior[weight] = decision["n_prior"];
  }
  EXPECT_DOUBLE_EQ(n_prior[1.0] - n_prior[0.0], 1.0);  // the other GPU's one attempt
}

TEST_F(LoopTest, StepsExploreADifferentTechniqueEachTime) {
  const auto summary = run_builtins(options(4));
  std::set<std::string> techniques;
  for (const auto& step : run_dir().steps())
    techniques.insert(step["technique"].get<std::string>());
  EXPECT_EQ(techniques.size(), 4u);  // nothing improved, so no technique is tried twice
  EXPECT_EQ(summary["steps"], 4);
}

bool compiles(const std::string& transform) {
  return transform.rfind("torch_compile", 0) == 0 ||
         transform.find("+torch_compile") != std::string::npos;
}

// After the default compile won, the other compile variants are tried in its place, on the
// reference (a compiled model is not compiled again), and the fastest is what later steps build on.
TEST_F(LoopTest, CompileVariantsReplaceTheCompiledModelInsteadOfStackingOnIt) {
  backend_.speedups = {{"torch_compile", 2.0},
                       {"torch_compile_max_autotune", 3.0},
                       {"torch_compile_max_autotune_cd", 2.5},
                       {"torch_compile_cudagraphs", 1.5},
                       {"cuda_graph", 1.0}};
  const auto summary = run_builtins(options(30));
  std::map<std::string, int> on_reference;
  for (const auto& call : backend_.builtin_calls) {
    if (!compiles(call.transform)) continue;
    EXPECT_TRUE(call.is_reference) << call.transform << " applied to " << call.file;
    ++on_reference[call.transform];
  }
  for (const char* transform : {"torch_compile", "torch_compile_max_autotune",
                                "torch_compile_max_autotune_cd", "torch_compile_cudagraphs"}) {
    EXPECT_EQ(on_reference[transform], 1) << transform;
  }
  EXPECT_EQ(summary["best_technique"], "cuda/builtin-torch-compile-max-autotune");
  EXPECT_DOUBLE_EQ(summary["best_speedup"].get<double>(), 3.0);
  for (const auto& step : run_dir().steps()) {
    if (step["technique"] != "cuda/builtin-torch-compile-max-autotune") continue;
    EXPECT_EQ(step["base_depth"], 0);
    EXPECT_EQ(step["base"].get<std::string>().rfind("reference", 0), 0u) << step.dump();
  }
  EXPECT_EQ(summary["status"], "exhausted");
}

// A fold chosen after a compile won is the fold with the compile applied again over it, judged
// against the compiled model; a resumed run neither repeats it nor loses the lineage it gave.
TEST_F(LoopTest, AFoldAfterACompileIsTheFoldCompiled) {
  backend_.speedups = {{"torch_compile", 2.0}, {"batchnorm_fold+torch_compile", 3.0}};
  OptimizeOptions o = options(4);
  o.techniques = {"cuda/builtin-torch-compile", "cuda/builtin-batchnorm-fold"};
  const auto summary = run_builtins(o);
  std::vector<std::string> stacked;
  for (const auto& call : backend_.builtin_calls) {
    if (call.transform.rfind("batchnorm_fold+", 0) == 0) {
      stacked.push_back(call.transform);
      EXPECT_TRUE(call.is_reference) << call.file;
    }
  }
  EXPECT_EQ(stacked, std::vector<std::string>{"batchnorm_fold+torch_compile"});
  EXPECT_EQ(summary["best_technique"], "cuda/builtin-batchnorm-fold");
  EXPECT_DOUBLE_EQ(summary["best_speedup"].get<double>(), 3.0);
  bool recorded = false;
  for (const auto& step : run_dir().steps()) {
    if (step.contains("base_then")) {
      EXPECT_EQ(step["base_then"], nlohmann::json::array({"cuda/builtin-torch-compile"}));
      recorded = true;
    }
  }
  EXPECT_TRUE(recorded);
  const auto calls = backend_.builtin_calls.size();
  o.steps = 8;
  run_builtins(o);  // resumed: the fold compiled is in the lineage, nothing is left to try
  EXPECT_EQ(backend_.builtin_calls.size(), calls);
}

// Nothing to fold in the problem's Model (training mode, say) is nothing to fold under any lineage:
// after one skipped fold the run does not offer it again, a resumed run included.
TEST_F(LoopTest, AFoldWithNothingToChangeIsNotOfferedAgain) {
  backend_.speedups = {{"torch_compile", 2.0}, {"torch_compile_max_autotune", 2.2}};
  backend_.no_candidate_for = {"batchnorm_fold", "batchnorm_fold+torch_compile",
                               "batchnorm_fold+torch_compile_max_autotune"};
  OptimizeOptions o = options(3);
  o.techniques = {"cuda/builtin-torch-compile", "cuda/builtin-torch-compile-max-autotune",
                  "cuda/builtin-batchnorm-fold"};
  auto folds = [&] {
    return std::count_if(
        backend_.builtin_calls.begin(), backend_.builtin_calls.end(),
        [](const auto& call) { return call.transform.rfind("batchnorm_fold", 0) == 0; });
  };
  run_builtins(o);
  o.steps = 8;
  run_builtins(o);
  EXPECT_EQ(folds(), 1);
  EXPECT_EQ(run_dir().steps().size(), 3u);  // compile, its variant, one skipped fold: all tried
}

// The "first" built-ins are checked once, on another thread while the reference is judged on a
// GPU: one whose check finds nothing to change in the Model is never offered, so no step goes to
// finding that out (ResNetBasicBlock's merge and fold: 5.75 and 5.45 s of a 36 s run on an H100
// host, call 67); one the check does not answer for is still tried.
TEST_F(LoopTest, AFirstBuiltinTheCheckFindsNothingForIsNeverOffered) {
  backend_.speedups = {{"torch_compile", 2.0}};
  backend_.unchanged = {{"sibling_merge", "no linear or convolution modules read the same input"},
                        {"batchnorm_fold", ""}};
  OptimizeOptions o = options(4);
  o.techniques = {"cuda/builtin-torch-compile", "cuda/builtin-sibling-merge",
                  "cuda/builtin-batchnorm-fold"};
  run_builtins(o);
  auto applied = [&](const std::string& head) {
    return std::count_if(backend_.builtin_calls.begin(), backend_.builtin_calls.end(),
                         [&](const auto& call) { return call.transform.rfind(head, 0) == 0; });
  };
  EXPECT_EQ(applied("sibling_merge"), 0);
  EXPECT_EQ(applied("batchnorm_fold"), 1);  // "" from the check: it may change something
  ASSERT_EQ(backend_.checked_on.size(), 1u);
  EXPECT_NE(backend_.checked_on.front(), std::this_thread::get_id());
  const std::string logged = run_log();
  EXPECT_NE(logged.find("cuda/builtin-sibling-merge is not offered: no linear or convolution"),
            std::string::npos);
}

// Where judging busies the host (a CPU device), the check waits for the reference's judging, whose
// timing runs on the same cores.
TEST_F(LoopTest, WhereJudgingBusiesTheHostTheFirstBuiltinsAreCheckedAfterTheReference) {
  OptimizeOptions o = options(1);
  backend_.host_idle = false;
  run_builtins(o);
  ASSERT_EQ(backend_.checked_on.size(), 1u);
  EXPECT_EQ(backend_.checked_on.front(), std::this_thread::get_id());
}

// The device's ceilings, measured on a machine's first run and cached (18.7 s of a 36 s run on
// an H100 host, call 67), are part of the run's wall but not of its time limit.
TEST_F(LoopTest, TheDevicesFirstCalibrationIsNotCountedInTheTimeLimit) {
  OptimizeOptions o = options(1);
  o.time_limit_minutes = 1.0;
  backend_.calibration_seconds = 30.0;
  const auto before = std::chrono::steady_clock::now();
  run_builtins(o);
  const double deadline = std::chrono::duration<double>(*backend_.deadline - before).count();
  EXPECT_GT(deadline, 89.0);  // 60 s and 30 s, less what the test itself took
  EXPECT_LT(deadline, 91.0);
  const std::string logged = run_log();
  const std::string said = "(30.0 s, cached for later runs): not counted in the time limit";
  EXPECT_NE(logged.find(said), std::string::npos);

  // Resumed, the run reads the reference's stored result: still not counted, not said again.
  o.steps = 2;
  const auto resumed = std::chrono::steady_clock::now();
  run_builtins(o);
  EXPECT_GT(std::chrono::duration<double>(*backend_.deadline - resumed).count(), 85.0);
  const std::string all = run_log();
  EXPECT_EQ(all.find(said), all.rfind(said));
}

// A resumed run knows which built-ins its steps applied to which implementation, alternatives
// on an ancestor included: no transform is applied to the same file twice.
TEST_F(LoopTest, AResumedRunRetriesNoBuiltinOnTheSameBase) {
  backend_.speedups = {{"torch_compile", 2.0},
                       {"torch_compile_max_autotune", 3.0},
                       {"torch_compile_max_autotune_cd", 2.5},
                       {"cuda_graph", 1.0}};
  run_builtins(options(3));
  run_builtins(options(30));
  std::set<std::pair<std::string, std::string>> applied;
  for (const auto& call : backend_.builtin_calls) {
    EXPECT_TRUE(applied.insert({call.transform, call.file.filename().string()}).second)
        << call.transform << " on " << call.file << " twice";
  }
  EXPECT_GT(backend_.builtin_calls.size(), 4u);
}

// A verified implementation is stored in the language its backend's candidates are written in.
TEST_F(LoopTest, AnImplementationIsStoredInItsBackendsLanguage) {
  backend_.mutable_traits().agent_format = [](const std::string&) {
    return AgentFormat{"backend_rvv", "RISC-V vector intrinsics", {{"kernel.c", "c"}}, true, false};
  };
  backend_.speedups = {{"torch_compile", 2.0}};
  run_builtins(options(1));
  KnowledgeBase kb(dir_ / "kb.sqlite");
  const auto rows = kb.query({.kind = "implementations"});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["language"], "c") << rows[0].dump();
}

TEST_F(LoopTest, TheCriticIsAskedOutsideTheKbTransaction) {
  backend_.llm_speedup = 1.25;
  auto o = options(1);
  o.techniques = {"cuda/fuse-elementwise-into-producer"};
  KnowledgeBase probe(o.kb);
  auto critic = std::make_unique<FakeLlm>(
      std::deque<std::string>{"```json\n{\"edits\": [{\"op\": \"add_claim\", \"text\": \"Fusing "
                              "the tail pays on a fake GPU\", "
                              "\"state_id\": null, \"technique_id\": "
                              "\"cuda/fuse-elementwise-into-producer\", \"backend\": \"cuda\", "
                              "\"evidence\": \"support\", \"note\": \"test\"}]}\n```"});
  std::vector<bool> in_transaction;
  FakeLlm* critic_ptr = critic.get();
  optimize_detail::Agents agents;
  agents.description = "fake";
  agents.actor = std::make_unique<FakeLlm>(
      std::deque<std::string>{"```python file=model_new.py\nclass ModelNew: pass\n```"});
  agents.critic = std::move(critic);
  KnowledgeBase kb(o.kb);
  critic_ptr->during = [&](const LlmRequest&) { in_transaction.push_back(kb.in_transaction()); };
  Loop loop(o, backend_, kb, agents, run_dir(), Resumed::from(run_dir()), {});
  const auto summary = loop.run();
  ASSERT_EQ(critic_ptr->roles, std::vector<std::string>{"critic"});
  EXPECT_EQ(in_transaction, std::vector<bool>{false});
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0]["critic"], "llm");
  EXPECT_EQ(steps[0]["claims"], 1);
  EXPECT_EQ(summary.best_speedup.value_or(0), 1.25);
}

// Which built-ins a step may stack on the current implementation, with the seed catalogue's rows.
class Eligibility : public ::testing::Test {
 protected:
  std::set<std::string> eligible(const std::vector<std::string>& lineage,
                                 const std::vector<std::string>& ops,
                                 const std::vector<fs::path>& ancestry = {}) {
    KnowledgeBase kb(dir_ / "kb.sqlite");
    optimize_detail::Current current;
    current.is_reference = lineage.empty();
    current.lineage = lineage;
    current.ancestry = ancestry;
    std::set<std::string> ids;
    for (const auto& t : optimize_detail::eligible_techniques(kb.techniques("cuda"), "model",
                                                              current, {}, {}, false, ops)
                             .techniques) {
      if (t.implementer == "builtin") ids.insert(t.id);
    }
    return ids;
  }
  TempDir dir_;
};

TEST_F(Eligibility, ACompiledModelIsNotCompiledAgain) {
  const auto after_compile = eligible({"cuda/builtin-torch-compile"}, {"aten::convolution"});
  for (const char* id :
       {"cuda/builtin-torch-compile-max-autotune", "cuda/builtin-torch-compile-cudagraphs",
        "cuda/builtin-torch-compile-coordinate-descent", "cuda/builtin-channels-last-compile",
        "cuda/builtin-torch-compile"}) {
    EXPECT_EQ(after_compile.count(id), 0u) << id;
  }
  EXPECT_EQ(after_compile.count("cuda/builtin-cuda-graph"), 1u);  // a graph over compiled code
  EXPECT_EQ(after_compile.count("cuda/builtin-cudnn-benchmark"), 1u);
  // reduce-overhead already replays a graph: no second graph over it.
  EXPECT_EQ(
      eligible({"cuda/builtin-torch-compile-cudagraphs"}, {}).count("cuda/builtin-cuda-graph"), 0u);
}

// Replaying a graph copies the inputs into its static buffers and clones the outputs out of them
// (level1/47_Sum read 0.29x under a CUDA graph on the H200, call 58). A whole-model graph can only
// remove the device's idle time between kernels: it is offered where that exceeds its copies
// (graph_headroom); reduce-overhead, whose compile may gain by fusion too, where the copies cost
// under a quarter of the forward.
TEST_F(Eligibility, GraphsAreNotOfferedWhereTheirCopiesCostMoreThanTheyCanSave) {
  KnowledgeBase kb(dir_ / "kb.sqlite");
  optimize_detail::Current current;
  current.file = "reference.py";
  auto graphs_offered = [&](double headroom, double copy_fraction) {
    current.signature = ProfileSignature::from_json(
        {{"total_ms", 1.0}, {"graph_headroom", headroom}, {"graph_copy_fraction", copy_fraction}});
    std::set<std::string> ids;
    for (const auto& t : optimize_detail::eligible_techniques(kb.techniques("cuda"), "model",
                                                              current, {}, {}, false)
                             .techniques) {
      if (t.id == "cuda/builtin-cuda-graph" || t.id == "cuda/builtin-torch-compile-cudagraphs")
        ids.insert(t.id);
    }
    return ids;
  };
  const std::set<std::string> both = {"cuda/builtin-cuda-graph",
                                      "cuda/builtin-torch-compile-cudagraphs"};
  EXPECT_EQ(graphs_offered(0.4, 0.05), both);
  // level3/17_SqueezeNetFireModule on an H100: no idle time, its 4.3 GB output cloned per call.
  EXPECT_EQ(graphs_offered(-0.2, 0.2),
            std::set<std::string>{"cuda/builtin-torch-compile-cudagraphs"});
  EXPECT_TRUE(graphs_offered(-0.6, 0.6).empty());
  const auto graph = kb.technique("cuda/builtin-cuda-graph");
  EXPECT_EQ(avoided_because(*graph, {{"graph_headroom", 0.01}}), "graph_headroom = 0.01 (< 0.02)");
  EXPECT_EQ(avoided_because(*graph, {}), "");  // unknown: offered
}

TEST_F(Eligibility, ACompileVariantReplacesTheCompiledModelOnItsAncestor) {
  KnowledgeBase kb(dir_ / "kb.sqlite");
  const auto all = kb.techniques("cuda");
  optimize_detail::Current current;
  current.file = "s001.py";
  current.is_reference = false;
  current.lineage = {"cuda/builtin-torch-compile"};
  current.ancestry = {"reference.py"};
  auto base_for = [&](const std::string& id) {
    const auto technique = kb.technique(id);
    EXPECT_TRUE(technique.has_value()) << id;
    return optimize_detail::builtin_base(*technique, all, current);
  };
  const auto autotune = base_for("cuda/builtin-torch-compile-max-autotune");
  ASSERT_TRUE(autotune.has_value());
  EXPECT_EQ(autotune->file, "reference.py");
  EXPECT_TRUE(autotune->is_reference());
  const auto graph = base_for("cuda/builtin-cuda-graph");
  ASSERT_TRUE(graph.has_value());
  EXPECT_EQ(graph->file, "s001.py");  // stacked on the compiled model
  EXPECT_EQ(graph->depth, 1u);
  EXPECT_FALSE(base_for("cuda/builtin-torch-compile").has_value());  // itself: the same candidate
  const auto ids = eligible(current.lineage, {}, current.ancestry);
  EXPECT_EQ(ids.count("cuda/builtin-torch-compile-max-autotune"), 1u);
  EXPECT_EQ(ids.count("cuda/builtin-torch-compile"), 0u);
  const auto chosen = optimize_detail::eligible_techniques(all, "model", current, {}, {}, false);
  EXPECT_EQ(chosen.base_for(*kb.technique("cuda/builtin-torch-compile-max-autotune"), current).file,
            "reference.py");
  EXPECT_EQ(chosen.base_for(*kb.technique("cuda/builtin-cuda-graph"), current).file, "s001.py");
}

TEST_F(Eligibility, AutotuningWaitsForTheDefaultCompileOfTheRun) {
  KnowledgeBase kb(dir_ / "kb.sqlite");
  const auto all = kb.techniques("cuda");
  optimize_detail::Current current;
  current.file = "reference.py";
  auto ids = [&](const optimize_detail::Tried& tried, const std::vector<std::string>& only) {
    std::set<std::string> found;
    for (const auto& t :
         optimize_detail::eligible_techniques(all, "model", current, tried, only, false).techniques)
      found.insert(t.id);
    return found;
  };
  const std::vector<std::string> autotuning = {"cuda/builtin-torch-compile-max-autotune",
                                               "cuda/builtin-torch-compile-coordinate-descent"};
  const auto fresh = ids({}, {});
  EXPECT_EQ(fresh.count("cuda/builtin-torch-compile"), 1u);
  for (const auto& id : autotuning) EXPECT_EQ(fresh.count(id), 0u) << id;
  // Judged once in the run, on any base and whatever its outcome: the variants open up.
  const auto judged = ids({{"s001-cuda_graph.py", "cuda/builtin-torch-compile"}}, {});
  for (const auto& id : autotuning) EXPECT_EQ(judged.count(id), 1u) << id;
  // A run restricted to the variant alone is not held back by a compile it cannot pick.
  EXPECT_EQ(ids({}, {autotuning[0]}).count(autotuning[0]), 1u);
}

TEST_F(Eligibility, ConvolutionBuiltinsNeedAConvolution) {
  const std::vector<std::string> conv_builtins = {"cuda/builtin-channels-last",
                                                  "cuda/builtin-cudnn-benchmark",
                                                  "cuda/builtin-channels-last-compile"};
  const auto elementwise = eligible({}, {"aten::mul", "aten::add", "aten::tanh"});
  const auto conv = eligible({}, {"aten::mul", "aten::cudnn_convolution"});
  const auto unknown = eligible({}, {});
  for (const auto& id : conv_builtins) {
    EXPECT_EQ(elementwise.count(id), 0u) << id;
    EXPECT_EQ(conv.count(id), 1u) << id;
    EXPECT_EQ(unknown.count(id), 1u) << id;  // no profile: nothing filtered
  }
  EXPECT_EQ(elementwise.count("cuda/builtin-torch-compile"), 1u);
  // Batch-norm folding needs a batch norm, not only a convolution.
  EXPECT_EQ(conv.count("cuda/builtin-batchnorm-fold"), 0u);
  EXPECT_EQ(eligible({}, {"aten::cudnn_convolution", "aten::cudnn_batch_norm"})
                .count("cuda/builtin-batchnorm-fold"),
            1u);
}

// A region's slot takes the built-ins that take a region, applied to the reference whatever the
// current implementation is; one tried in a region is still untried for the whole model.
TEST_F(Eligibility, ARegionSlotTakesRegionBuiltinsOnTheReference) {
  KnowledgeBase kb(dir_ / "kb.sqlite");
  const auto all = kb.techniques("cuda");
  optimize_detail::Current current;
  current.file = "s002.py";
  current.is_reference = false;
  current.lineage = {"cuda/builtin-cuda-graph"};
  current.ancestry = {"reference.py"};
  const std::string region = "region:conv1..relu";
  const auto chosen =
      optimize_detail::eligible_techniques(all, region, current, {}, {}, false, {"aten::conv2d"});
  std::set<std::string> ids;
  for (const auto& t : chosen.techniques) {
    if (t.implementer == "builtin") ids.insert(t.id);
  }
  EXPECT_EQ(ids,
            (std::set<std::string>{"cuda/builtin-torch-compile", "cuda/builtin-cudnn-benchmark",
                                   "cuda/builtin-channels-last"}));
  EXPECT_EQ(chosen.base_for(*kb.technique("cuda/builtin-torch-compile"), current).file,
            "reference.py");
  // Tried in the region: not again there, still for the whole model.
  const optimize_detail::Tried tried = {
      {"reference.py", optimize_detail::applied_name("cuda/builtin-torch-compile", region)}};
  auto has = [&](const std::string& slot, const std::string& id) {
    for (const auto& t : optimize_detail::eligible_techniques(all, slot, current, tried, {}, false,
                                                              {"aten::conv2d"})
                             .techniques) {
      if (t.id == id) return true;
    }
    return false;
  };
  EXPECT_FALSE(has(region, "cuda/builtin-torch-compile"));
  EXPECT_TRUE(has("model", "cuda/builtin-torch-compile"));
  // An implementation whose ancestry is unknown (an old run) gives a region no base.
  current.ancestry.clear();
  EXPECT_FALSE(has(region, "cuda/builtin-cudnn-benchmark"));
}

TEST_F(Eligibility, AWholeModelCompileReplacesARegionCompile) {
  KnowledgeBase kb(dir_ / "kb.sqlite");
  optimize_detail::Current current;
  current.file = "s001.py";
  current.is_reference = false;
  current.lineage = {
      optimize_detail::applied_name("cuda/builtin-torch-compile", "region:conv1..relu")};
  current.ancestry = {"reference.py"};
  const auto base = optimize_detail::builtin_base(*kb.technique("cuda/builtin-torch-compile"),
                                                  kb.techniques("cuda"), current);
  ASSERT_TRUE(base.has_value());  // not "in the lineage already": that was a region's compile
  EXPECT_EQ(base->file, "reference.py");
  EXPECT_EQ(optimize_detail::technique_of(current.lineage[0]), "cuda/builtin-torch-compile");
}

// Sibling merge and batch-norm folding trace the Model's own forward, so over built-ins they apply
// first, to the reference, with the lineage's built-ins applied again over them (in session 22's
// level-3 batch on the H200, 5 of 7 such steps came after a compile and were skipped).
TEST_F(Eligibility, AFoldIsStackedUnderTheBuiltinsOfTheLineage) {
  KnowledgeBase kb(dir_ / "kb.sqlite");
  const auto all = kb.techniques("cuda");
  const auto fold = *kb.technique("cuda/builtin-batchnorm-fold");
  optimize_detail::Current current;
  current.file = "s002.py";
  current.is_reference = false;
  current.lineage = {"cuda/builtin-channels-last", "cuda/builtin-torch-compile"};
  current.ancestry = {"reference.py", "s001.py"};
  auto then_of = [](const optimize_detail::Base& base) {
    std::vector<std::string> found;
    for (const auto& again : base.then) found.push_back(again.technique_id + ":" + again.transform);
    return found;
  };
  const auto base = optimize_detail::builtin_base(fold, all, current);
  ASSERT_TRUE(base.has_value());
  EXPECT_EQ(base->file, "reference.py");
  EXPECT_TRUE(base->is_reference());
  EXPECT_EQ(then_of(*base), (std::vector<std::string>{"cuda/builtin-channels-last:channels_last",
                                                      "cuda/builtin-torch-compile:torch_compile"}));
  // Tried on the reference alone, the fold is still untried under this lineage.
  const std::string stacked = optimize_detail::tried_name(fold.id, "model", *base);
  EXPECT_EQ(stacked,
            "cuda/builtin-batchnorm-fold+cuda/builtin-channels-last+cuda/builtin-torch-compile");
  auto offered = [&](const optimize_detail::Tried& tried) {
    for (const auto& t : optimize_detail::eligible_techniques(all, "model", current, tried, {},
                                                              false, {"aten::batch_norm"})
                             .techniques) {
      if (t.id == fold.id) return true;
    }
    return false;
  };
  EXPECT_TRUE(offered({{"reference.py", fold.id}}));
  EXPECT_FALSE(offered({{"reference.py", stacked}}));

  // The graph-first round's CUDA graph wraps every candidate and is no part of the file: not
  // applied again. A merge replaces the fold (one group) and keeps what followed it.
  current.lineage = {"cuda/builtin-cuda-graph", "cuda/builtin-torch-compile"};
  current.ancestry = {"reference.py", "reference.py"};
  EXPECT_EQ(then_of(*optimize_detail::builtin_base(fold, all, current)),
            std::vector<std::string>{"cuda/builtin-torch-compile:torch_compile"});
  current.lineage = {fold.id, "cuda/builtin-torch-compile"};
  current.ancestry = {"reference.py"};  // the compile applied again over the fold: no file
  const auto merge =
      optimize_detail::builtin_base(*kb.technique("cuda/builtin-sibling-merge"), all, current);
  ASSERT_TRUE(merge.has_value());
  EXPECT_EQ(then_of(*merge), std::vector<std::string>{"cuda/builtin-torch-compile:torch_compile"});
  EXPECT_FALSE(optimize_detail::builtin_base(fold, all, current).has_value());  // applied already

  // Over an LLM's kernel or a region's built-in there is nothing to apply again: not offered.
  current.lineage = {"cuda/shared-memory-tiling"};
  EXPECT_FALSE(optimize_detail::builtin_base(fold, all, current).has_value());
  current.lineage = {
      optimize_detail::applied_name("cuda/builtin-torch-compile", "region:conv1..relu")};
  EXPECT_FALSE(optimize_detail::builtin_base(fold, all, current).has_value());
}

ProgramRegions two_windows() {
  return ProgramRegions::from_json(
      {{"captured", true},
       {"ops",
        {{{"name", "conv1"}, {"op_type", "Conv2d"}},
         {{"name", "relu"}, {"op_type", "relu"}},
         {{"name", "linear"}, {"op_type", "Linear"}}}},
       {"windows",
        {{{"ops", {"conv1", "relu"}}, {"share", 0.6}, {"inputs", {"x"}}, {"outputs", {"relu"}}},
         {{"ops", {"linear"}},
          {"share", 0.3},
          {"inputs", {"flatten"}},
          {"outputs", {"linear"}}}}}});
}

// --regions: the windows become slots beside the whole model; once the whole model has nothing
// left to try, a step goes to a region, whose built-in gets the window's ops and the reference.
TEST_F(LoopTest, WithRegionsAStepAppliesARegionBuiltinToTheReference) {
  backend_.regions = two_windows();
  backend_.speedups = {{"torch_compile", 1.5}, {"torch_compile@conv1,relu", 1.2}};
  auto o = with_compile_transform("cuda/builtin-torch-compile", 3);
  o.regions = true;
  const auto summary = run_builtins(o);
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0]["slot"], "model");
  EXPECT_EQ(steps[1]["slot"], "region:conv1..relu");  // the larger window first
  EXPECT_EQ(steps[2]["slot"], "region:linear");
  ASSERT_EQ(backend_.builtin_calls.size(), 3u);
  EXPECT_TRUE(backend_.builtin_calls[0].region_ops.empty());
  EXPECT_EQ(backend_.builtin_calls[1].region_ops, (std::vector<std::string>{"conv1", "relu"}));
  EXPECT_TRUE(backend_.builtin_calls[1].is_reference);
  EXPECT_EQ(backend_.builtin_calls[2].region_ops, (std::vector<std::string>{"linear"}));
  EXPECT_DOUBLE_EQ(summary["best_speedup"].get<double>(), 1.5);  // the slower region lost
  EXPECT_EQ(summary["status"], "finished");
  EXPECT_EQ(run_dir().config()["regions"]["windows"].size(), 2u);
  // The regions' rewards stay out of the whole-model statistics.
  int rewarded = 0;
  for (const auto& attempt : attempts()) {
    const bool region = attempt["slot"].get<std::string>().starts_with("region:");
    EXPECT_EQ(attempt["reward"].is_null(), region) << attempt.dump();
    rewarded += attempt["reward"].is_null() ? 0 : 1;
  }
  EXPECT_EQ(rewarded, 1);
}

// two_windows() with what identifies them beyond the model (worker/mblast_regions/identity.py),
// the convolution's window holding `share` of the time under the op names `ops`.
ProgramRegions signed_windows(const std::string& key, double share,
                              const std::vector<std::string>& ops = {"conv1", "relu"},
                              const std::string& computation = "") {
  auto regions = two_windows();
  regions.windows[0].ops = ops;
  regions.windows[0].share = share;
  regions.windows[0].signature = "conv2d>relu|float32:2^20B";
  regions.windows[0].key = key;
  regions.windows[0].computation = computation.empty() ? "computation of " + key : computation;
  regions.windows[0].input_shapes = {"float32[2,3,8,8]"};
  regions.windows[1].signature = "linear|float32:2^12B";
  regions.windows[1].key = key + "-linear";
  return regions;
}

constexpr const char* kConvRegion = "conv2d>relu|float32:2^20B";

// A region step is rewarded as the region's own implied speedup, kept in the statistics of the
// region's signature and out of the whole model's.
TEST_F(LoopTest, RegionStepsAreRewardedAsTheRegionAndKeptPerSignature) {
  backend_.regions = signed_windows("k1", 0.6);
  backend_.speedups = {{"torch_compile", 1.5}, {"torch_compile@conv1,relu", 1.2}};
  auto o = with_compile_transform("cuda/builtin-torch-compile", 3);
  o.regions = true;
  run_builtins(o);
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 3u);
  ASSERT_EQ(steps[1]["slot"], "region:conv1..relu");
  const double region = std::log(0.6 / (0.6 - (1 - 1 / 1.2)));
  EXPECT_NEAR(steps[1]["region_reward"].get<double>(), region, 1e-9);
  EXPECT_FALSE(steps[0].contains("region_reward"));
  // Each decision names the statistics it was scored on.
  EXPECT_EQ(steps[0]["decision"]["statistics"], "model");
  EXPECT_EQ(steps[1]["decision"]["by"], "ucb");
  EXPECT_EQ(steps[1]["decision"]["statistics"], kConvRegion);
  EXPECT_EQ(steps[1]["decision"]["n_local"], 0);  // no region of this signature was tried before
  KnowledgeBase kb(dir_ / "kb.sqlite");
  std::int64_t model_attempts = 0;
  for (const auto& stat : kb.reward_stats("cuda")) model_attempts += stat.n;
  EXPECT_EQ(model_attempts, 1);
  const auto stats = kb.region_stats("cuda", steps[1]["state"], kConvRegion);
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_NEAR(stats[0].mean(), region, 1e-9);
  EXPECT_EQ(kb.region_stats("cuda", steps[2]["state"], "linear|float32:2^12B").at(0).mean(), -1);
  for (const auto& attempt : attempts()) {
    if (attempt["slot"] == "region:conv1..relu") {
      EXPECT_EQ(attempt["region_key"], "k1");
    }
  }
}

// A region built-in with nothing to change there judged nothing: it earns nothing, not a failure.
TEST_F(LoopTest, ARegionStepWithNothingToChangeEarnsNothing) {
  backend_.regions = signed_windows("k1", 0.6);
  backend_.speedups = {{"torch_compile", 1.5}};
  backend_.no_candidate_for = {"torch_compile@conv1,relu"};
  auto o = with_compile_transform("cuda/builtin-torch-compile", 2);
  o.regions = true;
  run_builtins(o);
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 2u);
  ASSERT_EQ(steps[1]["slot"], "region:conv1..relu");
  EXPECT_EQ(steps[1]["outcome"], "skipped");
  EXPECT_EQ(steps[1]["region_reward"], 0.0);
  KnowledgeBase kb(dir_ / "kb.sqlite");
  EXPECT_EQ(kb.region_stats("cuda", steps[1]["state"], kConvRegion).at(0).mean(), 0.0);
}

// The same computation in another task's model, at the same shapes (its exact key) or at other
// shapes (its computation key): the region first retries the built-in that sped it up there, and
// the step records that attempt, at which shapes, and whether it held.
class RegionReuseTest : public LoopTest, public ::testing::WithParamInterface<bool> {};

TEST_P(RegionReuseTest, ARegionFirstRetriesWhatSpedUpTheSameComputationInAnEarlierTask) {
  // The first task verifies a region compile of computation c1 (key k1); the second has a window
  // of c1 under other op names, at the same shapes (key k1) or at others (key k2).
  const bool same_shapes = GetParam();
  backend_.regions = signed_windows("k1", 0.6, {"conv1", "relu"}, "c1");
  backend_.speedups = {{"torch_compile", 1.5}, {"torch_compile@conv1,relu", 1.2}};
  auto first = with_compile_transform("cuda/builtin-torch-compile", 3);
  first.regions = true;
  run_builtins(first);
  const std::string verified = run_dir().steps()[1]["attempt_id"];

  backend_.regions = signed_windows(same_shapes ? "k1" : "k2", 0.9, {"conv9", "relu9"}, "c1");
  backend_.speedups = {{"torch_compile@conv9,relu9", 1.3}};
  run_ = std::make_unique<RunDir>(RunDir::create(dir_ / "run2"));
  run_->write_config({{"options", options_to_json(options(1))}});
  auto second = options(4);
  second.problem = fs::path(MBLAST_SOURCE_DIR) / "tests" / "problems" / "conv_small.py";
  second.techniques = {"cuda/builtin-torch-compile-max-autotune",
                       "cuda/builtin-torch-compile-coordinate-descent",
                       "cuda/builtin-torch-compile"};
  second.regions = true;
  run_builtins(second);
  std::optional<nlohmann::json> region_step;
  for (const auto& step : run_dir().steps()) {
    if (step["slot"] == "region:conv9..relu9") {
      region_step = step;
      break;
    }
  }
  ASSERT_TRUE(region_step.has_value());
  EXPECT_EQ((*region_step)["technique"], "cuda/builtin-torch-compile");
  EXPECT_EQ((*region_step)["reused_attempt"], verified);
  EXPECT_EQ((*region_step)["reuse_held"], true);
  EXPECT_EQ((*region_step)["decision"]["by"], "region reuse");
  EXPECT_EQ((*region_step)["reuse_shapes"], same_shapes ? "same" : "other");
}

INSTANTIATE_TEST_SUITE_P(SameOrOtherShapes, RegionReuseTest, ::testing::Bool());

// The actor working on a region is told its ops, its share and the shapes it reads.
TEST_F(LoopTest, TheActorOfARegionStepGetsTheShapesTheRegionReads) {
  backend_.regions = signed_windows("k1", 0.9);
  auto o = options(2);
  o.techniques = {"cuda/fuse-elementwise-into-producer"};
  o.regions = true;
  const std::string answer = "```python file=model_new.py\nclass ModelNew: pass\n```";
  auto actor = std::make_unique<FakeLlm>(std::deque<std::string>{answer, answer});
  std::vector<std::string> prompts;
  actor->during = [&](const LlmRequest& request) {
    std::string text;
    for (const auto& message : request.messages) text += message.content;
    prompts.push_back(text);
  };
  optimize_detail::Agents agents;
  agents.description = "fake";
  agents.actor = std::move(actor);
  std::string claim;
  {
    KnowledgeBase kb(o.kb);
    claim = kb.add_claim({.text = "Fusing the tail pays on a fake GPU",
                          .technique_id = "cuda/fuse-elementwise-into-producer",
                          .backend = "cuda"});
  }
  run(o, agents);
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 2u);
  ASSERT_EQ(steps[1]["slot"], "region:conv1..relu");
  ASSERT_EQ(prompts.size(), 2u);
  EXPECT_EQ(prompts[0].find("it reads float32[2,3,8,8]"), std::string::npos);  // the whole model
  // The claim in the KB was shown to the actor, and the step names it.
  EXPECT_EQ(steps[0]["claims_shown"], nlohmann::json::array({claim}));
  EXPECT_NE(prompts[1].find("conv1, relu takes 90% of the reference's time; it reads "
                            "float32[2,3,8,8]"),
            std::string::npos)
      << prompts[1];
}

// The actor and the fix agent of a region step read the region's code as torch.fx traced it.
TEST_F(LoopTest, TheAgentsOfARegionStepReadTheRegionsCode) {
  backend_.regions = signed_windows("k1", 0.9);
  backend_.regions->windows[0].code = "def forward(self, x):\n    conv1 = self.conv1(x)";
  auto o = options(2);
  o.techniques = {"cuda/fuse-elementwise-into-producer"};
  o.regions = true;
  o.fix_attempts = 1;
  const std::string answer = "```python file=model_new.py\nclass ModelNew: pass\n```";
  auto prompts_of = [](std::vector<std::string>& prompts) {
    return [&prompts](const LlmRequest& request) {
      std::string text;
      for (const auto& message : request.messages) text += message.content;
      prompts.push_back(text);
    };
  };
  std::vector<std::string> actor_prompts, fix_prompts;
  auto actor = std::make_unique<FakeLlm>(std::deque<std::string>{answer, answer});
  actor->during = prompts_of(actor_prompts);
  auto fix = std::make_unique<FakeLlm>(std::deque<std::string>{answer, answer});
  fix->during = prompts_of(fix_prompts);
  optimize_detail::Agents agents;
  agents.description = "fake";
  agents.actor = std::move(actor);
  agents.fix = std::move(fix);
  run(o, agents);  // the fake backend finds every LLM candidate wrong: each step asks for a fix
  ASSERT_EQ(run_dir().steps().at(1)["slot"], "region:conv1..relu");
  ASSERT_EQ(actor_prompts.size(), 2u);
  ASSERT_EQ(fix_prompts.size(), 2u);
  const std::string code = "def forward(self, x):\n    conv1 = self.conv1(x)";
  EXPECT_EQ(actor_prompts[0].find(code), std::string::npos);  // the whole model's step
  EXPECT_EQ(fix_prompts[0].find(code), std::string::npos);
  EXPECT_NE(actor_prompts[1].find(code), std::string::npos) << actor_prompts[1];
  EXPECT_NE(fix_prompts[1].find(code), std::string::npos) << fix_prompts[1];
  EXPECT_NE(fix_prompts[1].find("It works on the slot `region:conv1..relu`"), std::string::npos);
}

// A built-in that needs certain ops (cuDNN autotuning: a convolution) goes only to the regions
// that hold them.
TEST_F(LoopTest, ARegionBuiltinGoesOnlyWhereItsOpsAre) {
  backend_.regions = two_windows();
  auto o = options(4);
  o.techniques = {"cuda/builtin-cudnn-benchmark"};
  o.regions = true;
  run_builtins(o);
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0]["slot"], "model");
  EXPECT_EQ(steps[1]["slot"], "region:conv1..relu");  // region:linear holds no convolution
}

// --graph-first: the first step judges the whole model in a CUDA graph; where that is correct,
// later built-ins are judged as they are and inside one, and the next builds on the candidate
// without it.
TEST_F(LoopTest, AfterALegalGraphRoundBuiltinsAreJudgedInsideAGraph) {
  backend_.speedups = {{"cuda_graph", 1.3},
                       {"torch_compile", 1.2},
                       {"torch_compile+cuda_graph", 2.0},
                       {"cudnn_benchmark", 1.0},
                       {"cudnn_benchmark+cuda_graph", 2.1}};
  auto o = options(2);
  o.techniques = {"cuda/builtin-torch-compile", "cuda/builtin-cuda-graph",
                  "cuda/builtin-cudnn-benchmark"};
  o.graph_first = true;
  run_builtins(o);
  auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0]["technique"], "cuda/builtin-cuda-graph");
  EXPECT_EQ(steps[0]["inner"], steps[0]["base"]);  // the graph wrapped the reference
  EXPECT_EQ(steps[0]["decision"]["by"], "graph-first round");
  EXPECT_NE(steps[1]["candidate"].get<std::string>().find("+cuda_graph"), std::string::npos);
  EXPECT_NE(steps[1]["inner"].get<std::string>().find("-inner-"), std::string::npos);
  EXPECT_EQ(backend_.judged.back().rfind("# transform ", 0), 0u);
  EXPECT_NE(backend_.judged.back().find("+cuda_graph"), std::string::npos);
  // Resumed: the round is still legal, and the next candidate builds on the one without a graph.
  o.steps = 3;
  const auto summary = run_builtins(o);
  steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_NE(steps[2]["candidate"].get<std::string>().find("+cuda_graph"), std::string::npos);
  ASSERT_GE(backend_.builtin_calls.size(), 2u);
  const auto& inner_call = backend_.builtin_calls[backend_.builtin_calls.size() - 2];
  EXPECT_EQ(inner_call.file.filename().string(), steps[1]["inner"].get<std::string>());
  EXPECT_EQ(backend_.builtin_calls.back().transform, "cuda_graph");
  EXPECT_DOUBLE_EQ(summary["best_speedup"].get<double>(), 2.1);
}

// Without --graph-first: once the selector's CUDA graph is the best, later built-ins are made
// under a graph over the candidate without it, never as a compile over the graph's capture.
TEST_F(LoopTest, ACudaGraphThatBecomesTheBestStaysTheOutermostWrapper) {
  backend_.speedups = {{"cuda_graph", 1.3},
                       {"torch_compile", 1.2},
                       {"torch_compile+cuda_graph", 2.0},
                       {"cudnn_benchmark", 1.0},
                       {"cudnn_benchmark+cuda_graph", 2.1}};
  auto o = options(1);
  o.techniques = {"cuda/builtin-cuda-graph"};  // the graph first, then the others on resuming
  run_builtins(o);
  auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0]["technique"], "cuda/builtin-cuda-graph");
  EXPECT_EQ(steps[0]["inner"], steps[0]["base"]);  // the graph wrapped the reference
  EXPECT_EQ(steps[0]["decision"]["by"], "ucb");
  // Resumed: the next built-in is made on the reference and judged inside a graph.
  o.techniques = {"cuda/builtin-cuda-graph", "cuda/builtin-torch-compile",
                  "cuda/builtin-cudnn-benchmark"};
  o.steps = 2;
  run_builtins(o);
  steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1]["base"], steps[0]["base"]);
  EXPECT_NE(steps[1]["candidate"].get<std::string>().find("+cuda_graph"), std::string::npos);
  EXPECT_NE(backend_.judged.back().find("+cuda_graph"), std::string::npos);
  o.steps = 3;
  const auto summary = run_builtins(o);
  steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_NE(steps[2]["candidate"].get<std::string>().find("+cuda_graph"), std::string::npos);
  const auto& inner_call = backend_.builtin_calls[backend_.builtin_calls.size() - 2];
  EXPECT_EQ(inner_call.file.filename().string(), steps[1]["inner"].get<std::string>());
  EXPECT_DOUBLE_EQ(summary["best_speedup"].get<double>(), 2.1);
}

// A graph that is not the best leaves later candidates as they are.
TEST_F(LoopTest, AGraphThatLosesWrapsNothing) {
  backend_.speedups = {{"cuda_graph", 0.9}, {"torch_compile", 1.4}};
  auto o = options(2);
  o.techniques = {"cuda/builtin-cuda-graph", "cuda/builtin-torch-compile"};
  const auto summary = run_builtins(o);
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 2u);
  for (const auto& step : steps) {
    if (step["technique"] != "cuda/builtin-torch-compile") continue;
    EXPECT_EQ(step["candidate"].get<std::string>().find("+cuda_graph"), std::string::npos);
  }
  EXPECT_DOUBLE_EQ(summary["best_speedup"].get<double>(), 1.4);
}

// --prebuild: while a step is judged, the built-in the selector would choose next is made and
// handed to the backend to compile; where the step changed nothing, that is the next step's.
TEST_F(LoopTest, PrebuildHandsTheNextStepsBuiltinToTheBackendBeforeJudgingThisOne) {
  backend_.speedups = {{"torch_compile", 0.9}, {"cudnn_benchmark", 0.95}, {"channels_last", 0.8}};
  auto o = options(3);
  o.techniques = {"cuda/builtin-torch-compile", "cuda/builtin-cudnn-benchmark",
                  "cuda/builtin-channels-last"};
  o.prebuild = true;
  run_builtins(o);
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 3u);
  // Nothing became the best, so each guess was the next step's choice; the last step has none.
  ASSERT_EQ(backend_.prebuilt.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const std::string next = steps[i + 1]["candidate"].get<std::string>();
    const std::string made = backend_.prebuilt[i].substr(std::string("# transform ").size());
    const std::string stem = "s00" + std::to_string(i + 2) + "-" + made + "-";
    EXPECT_EQ(next.rfind(stem, 0), 0u) << next << " " << made;
  }
  EXPECT_TRUE(backend_.stopped_prebuilding);
  EXPECT_TRUE(fs::is_directory(run_dir().path() / "prebuild"));
  // The backend hears where each step begins, and each guess is made in the step before its own.
  EXPECT_EQ(backend_.steps_begun, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(backend_.prebuilt_in_step, (std::vector<int>{1, 2}));
  // The guesses are not the run's candidates.
  std::size_t judged = 0;
  for (const auto& entry : fs::directory_iterator(run_dir().path() / "candidates"))
    judged += entry.path().extension() == ".py" && entry.path().filename().string()[0] == 's';
  EXPECT_EQ(judged, 3u);
}

// Once the selector's graph is the best, the next step judges its candidate without the graph
// first: so the guess is that candidate.
TEST_F(LoopTest, PrebuildGuessesTheCandidateAsItIsJudgedFirst) {
  backend_.speedups = {{"cuda_graph", 1.3},
                       {"torch_compile", 1.1},
                       {"torch_compile+cuda_graph", 1.2},
                       {"cudnn_benchmark", 1.0},
                       {"cudnn_benchmark+cuda_graph", 1.25}};
  auto o = options(1);
  o.techniques = {"cuda/builtin-cuda-graph"};
  run_builtins(o);
  o.techniques = {"cuda/builtin-cuda-graph", "cuda/builtin-torch-compile",
                  "cuda/builtin-cudnn-benchmark"};
  o.steps = 3;
  o.prebuild = true;
  run_builtins(o);
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 3u);
  ASSERT_EQ(backend_.prebuilt.size(), 1u);  // step 2 guessed step 3; the last step guesses nothing
  const std::string made = backend_.prebuilt[0].substr(std::string("# transform ").size());
  EXPECT_EQ(made.find("+cuda_graph"), std::string::npos) << made;
  const std::string next = steps[2]["candidates"][0]["file"].get<std::string>();
  EXPECT_EQ(next.rfind("s003-" + made + "-", 0), 0u) << next << " " << made;
}

TEST_F(LoopTest, WithoutPrebuildNothingIsCompiledAhead) {
  backend_.speedups = {{"torch_compile", 0.9}, {"cudnn_benchmark", 0.95}};
  auto o = options(2);
  o.techniques = {"cuda/builtin-torch-compile", "cuda/builtin-cudnn-benchmark"};
  run_builtins(o);
  EXPECT_TRUE(backend_.prebuilt.empty());
  EXPECT_FALSE(fs::exists(run_dir().path() / "prebuild"));
}

TEST_F(LoopTest, WhereTheGraphRoundFailsCandidatesAreJudgedAsTheyAre) {
  backend_.speedups = {{"torch_compile", 1.4}};  // no speedup for cuda_graph: it fails
  auto o = graph_first_options(2);
  const auto summary = run_builtins(o);
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0]["technique"], "cuda/builtin-cuda-graph");
  EXPECT_NE(steps[0]["outcome"], "correct");
  EXPECT_EQ(steps[1]["candidate"].get<std::string>().find("+cuda_graph"), std::string::npos);
  EXPECT_EQ(backend_.judged.back(), "# transform torch_compile\n");
  EXPECT_DOUBLE_EQ(summary["best_speedup"].get<double>(), 1.4);
}

// A graph that is correct but slower than the reference is no baseline: later candidates are judged
// as they are, also after resuming.
TEST_F(LoopTest, AGraphRoundThatLosesLeavesCandidatesAsTheyAre) {
  backend_.speedups = {{"cuda_graph", 0.82},
                       {"torch_compile", 1.6},
                       {"torch_compile+cuda_graph", 1.2},
                       {"torch_compile+cudnn_benchmark", 1.7},
                       {"cudnn_benchmark+cuda_graph", 0.9}};
  auto o = graph_first_options(2);
  run_builtins(o);
  auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0]["technique"], "cuda/builtin-cuda-graph");
  EXPECT_EQ(steps[0]["outcome"], "correct");
  EXPECT_EQ(steps[1]["candidate"].get<std::string>().find("+cuda_graph"), std::string::npos);
  EXPECT_EQ(backend_.judged.back(), "# transform torch_compile\n");
  o.techniques = {"cuda/builtin-cudnn-benchmark"};
  o.steps = 3;
  run_builtins(o);
  steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[2]["technique"], "cuda/builtin-cudnn-benchmark");
  EXPECT_EQ(steps[2]["candidate"].get<std::string>().find("+cuda_graph"), std::string::npos);
  EXPECT_EQ(backend_.judged.back().find("+cuda_graph"), std::string::npos);
  const std::string logged = run_log();
  EXPECT_NE(logged.find("correct but not faster than the reference (0.820x)"), std::string::npos);
}

// Inside a legal round a built-in is judged as it is first; a graph over a candidate whose own
// profile leaves it nothing to remove (the compile fused the launches away) is not judged at all:
// SOL-ExecBench's triton/rmsnorm read 7.97x compiled and 4.01x compiled inside the graph (H100).
TEST_F(LoopTest, NoGraphOverACandidateWhoseProfileLeavesItNothingToRemove) {
  backend_.signature["graph_headroom"] = 0.4;
  backend_.signature_of["torch_compile"] = {
      {"total_ms", 0.125}, {"launch_overhead_fraction", 0.05}, {"graph_headroom", -0.6}};
  backend_.speedups = {
      {"cuda_graph", 1.28}, {"torch_compile", 7.97}, {"torch_compile+cuda_graph", 4.01}};
  auto o = graph_first_options(2);
  const auto summary = run_builtins(o);
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0]["technique"], "cuda/builtin-cuda-graph");
  EXPECT_EQ(steps[1]["candidates"].size(), 1u);
  EXPECT_EQ(steps[1]["candidate"].get<std::string>().find("+cuda_graph"), std::string::npos);
  EXPECT_EQ(backend_.judged.back(), "# transform torch_compile\n");
  EXPECT_EQ(summary["best_technique"], "cuda/builtin-torch-compile");
  EXPECT_DOUBLE_EQ(summary["best_speedup"].get<double>(), 7.97);
  const std::string logged = run_log();
  EXPECT_NE(logged.find("is not judged inside a CUDA graph too: the graph cannot pay over it "
                        "(graph_headroom = -0.6 (< 0.02))"),
            std::string::npos)
      << logged;
}

// Where the candidate's profile leaves the graph something to remove, both are judged and the
// step's candidate is the faster; the next step builds on the candidate without the graph either
// way. Not a fix: a built-in's step has none.
// The evaluation limit holds inside a step too: the candidate as it is was the last it allowed.
TEST_F(LoopTest, NoGraphIsJudgedPastTheEvaluationLimit) {
  backend_.speedups = {
      {"cuda_graph", 1.28}, {"torch_compile", 1.2}, {"torch_compile+cuda_graph", 2.0}};
  auto o = graph_first_options(3);
  o.max_evaluations = 3;  // the reference, the round's graph, the compile
  const auto summary = run_builtins(o);
  EXPECT_EQ(summary["evaluations"], 3);
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1]["candidates"].size(), 1u);
  EXPECT_NE(run_log().find("is not judged inside a CUDA graph too: the limit of 3 evaluations"),
            std::string::npos);
}

class GraphFasterTest : public LoopTest, public ::testing::WithParamInterface<bool> {};

TEST_P(GraphFasterTest, WhereBothAreJudgedTheFasterIsTheStepsCandidate) {
  const bool graph_faster = GetParam();
  backend_.speedups = {{"cuda_graph", 1.28},
                       {"torch_compile", graph_faster ? 1.2 : 7.97},
                       {"torch_compile+cuda_graph", graph_faster ? 2.0 : 4.01},
                       {"cudnn_benchmark", 1.0}};
  auto o = graph_first_options(2);
  const auto summary = run_builtins(o);
  const auto steps = run_dir().steps();
  ASSERT_EQ(steps.size(), 2u);
  ASSERT_EQ(steps[1]["candidates"].size(), 2u);
  EXPECT_EQ(steps[1]["fixes"], 0);
  // The step's candidate is listed last.
  const std::string candidate = steps[1]["candidate"];
  EXPECT_EQ(steps[1]["candidates"][1]["file"], candidate);
  EXPECT_EQ(candidate.find("+cuda_graph") != std::string::npos, graph_faster);
  const std::string plain = steps[1]["candidates"][graph_faster ? 0 : 1]["file"];
  EXPECT_EQ(plain.find("+cuda_graph"), std::string::npos);
  EXPECT_EQ(steps[1].contains("inner") && !steps[1]["inner"].get<std::string>().empty(),
            graph_faster);
  EXPECT_DOUBLE_EQ(summary["best_speedup"].get<double>(), graph_faster ? 2.0 : 7.97);
  o.techniques = {"cuda/builtin-cudnn-benchmark"};
  o.steps = 3;
  const std::size_t calls_before = backend_.builtin_calls.size();
  run_builtins(o);
  ASSERT_GT(backend_.builtin_calls.size(), calls_before);
  const auto& built_on = backend_.builtin_calls[calls_before];  // step 3's built-in
  EXPECT_EQ(built_on.transform, "cudnn_benchmark");
  EXPECT_EQ(built_on.file.filename().string(),
            graph_faster ? steps[1]["inner"].get<std::string>() : plain);
}

INSTANTIATE_TEST_SUITE_P(EitherWay, GraphFasterTest, ::testing::Bool());

// A model whose device is never idle between kernels gains nothing from a graph: no round is run.
TEST_F(LoopTest, NoGraphRoundWhereAGraphCannotPay) {
  backend_.signature["launch_overhead_fraction"] = 0.0;
  backend_.signature["graph_headroom"] = -0.22;
  backend_.speedups = {{"cuda_graph", 0.82}, {"torch_compile", 1.6}};
  const auto steps = graph_first_one_step();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0]["technique"], "cuda/builtin-torch-compile");
  const std::string logged = run_log();
  EXPECT_NE(
      logged.find("a whole-model CUDA graph cannot pay here (graph_headroom = -0.22 (< 0.02))"),
      std::string::npos)
      << logged;
}

// The round takes the graph built-in only where the technique selector would: not a deprecated one.
TEST_F(LoopTest, ADeprecatedGraphBuiltinStartsNoGraphRound) {
  KnowledgeBase(dir_ / "kb.sqlite").deprecate_technique("cuda/builtin-cuda-graph");
  backend_.speedups = {{"cuda_graph", 1.3}, {"torch_compile", 1.4}};
  const auto steps = graph_first_one_step();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0]["technique"], "cuda/builtin-torch-compile");
}

TEST(ProgramRegions, WindowsReadTheirOpsKindsAndRoundTrip) {
  const ProgramRegions regions = two_windows();
  ASSERT_EQ(regions.windows.size(), 2u);
  EXPECT_EQ(regions.windows[0].op_kinds, (std::vector<std::string>{"conv2d", "relu"}));
  EXPECT_EQ(regions.windows[0].slot_id(), "region:conv1..relu");
  EXPECT_EQ(regions.windows[1].slot_id(), "region:linear");
  const ProgramRegions again = ProgramRegions::from_json(regions.to_json());
  EXPECT_EQ(again.windows[0].op_kinds, regions.windows[0].op_kinds);
  EXPECT_EQ(again.windows[1].inputs, (std::vector<std::string>{"flatten"}));
  EXPECT_TRUE(ProgramRegions::from_json({{"captured", false}, {"failure", "no"}}).windows.empty());
  EXPECT_FALSE(ProgramRegions::from_json(nlohmann::json::array()).failure.empty());
}

TEST_F(LoopTest, AModelThatIsNoGraphIsKeptWhole) {
  ProgramRegions none;
  none.failure = "torch.fx could not trace the model: TraceError: data-dependent control flow";
  backend_.regions = none;
  backend_.speedups = {{"torch_compile", 1.5}};
  auto o = with_compile_transform("cuda/builtin-torch-compile", 3);
  o.regions = true;
  const auto summary = run_builtins(o);
  EXPECT_EQ(run_dir().steps().size(), 1u);  // the whole model's compile, then nothing left
  ASSERT_EQ(backend_.builtin_calls.size(), 1u);
  EXPECT_TRUE(backend_.builtin_calls[0].region_ops.empty());
  EXPECT_EQ(summary["status"], "exhausted");            // nothing left to try: no region to go to
  const auto recorded = run_dir().config()["regions"];  // the reason, kept with the run
  EXPECT_EQ(recorded["captured"], false);
  EXPECT_NE(recorded["failure"].get<std::string>().find("data-dependent control flow"),
            std::string::npos);
}

}  // namespace
}  // namespace mblast
