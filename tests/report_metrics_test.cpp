// mblast report's library: loading run and batch directories and KernelBench's metrics.
#include <gtest/gtest.h>

#include <cmath>

#include "mblast/report.hpp"
#include "report/load_support.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;
using report::ProblemRow;

const fs::path kFixtures = fs::path(MBLAST_SOURCE_DIR) / "tests" / "fixtures" / "report";

const ProblemRow& row_named(const report::Report& r, const std::string& name) {
  for (const auto& row : r.rows) {
    if (row.name == name) return row;
  }
  throw std::runtime_error("no row " + name);
}

TEST(ReportMetrics, FastPCountsOnlyCorrectAndStrictlyFasterOverAllProblems) {
  const std::vector<double> speedups = {0.5, 1.0, 1.5, 3.0};
  EXPECT_DOUBLE_EQ(report::fast_p(speedups, 8, 0), 4.0 / 8);
  EXPECT_DOUBLE_EQ(report::fast_p(speedups, 8, 1), 2.0 / 8);  // 1.0 is not > 1
  EXPECT_DOUBLE_EQ(report::fast_p(speedups, 8, 1.5), 1.0 / 8);
  EXPECT_DOUBLE_EQ(report::fast_p(speedups, 8, 3), 0.0);
  EXPECT_DOUBLE_EQ(report::fast_p({}, 0, 1), 0.0);
  EXPECT_DOUBLE_EQ(*report::geometric_mean({2.0, 8.0}), 4.0);
  EXPECT_DOUBLE_EQ(*report::geometric_mean({0.5, 2.0}), 1.0);
  EXPECT_FALSE(report::geometric_mean({}).has_value());
}

TEST(ReportMetrics, BatchMetricsMatchKernelBenchDefinitions) {
  const auto r = report::load_report(kFixtures / "batch");
  EXPECT_EQ(r.kind, "batch");
  ASSERT_EQ(r.rows.size(), 6u);
  // batch.json's order; the problem without a run folder counts as not run.
  const std::vector<std::string> order = {"1_Square", "2_Relu", "3_Softmax",
                                          "4_Conv",   "5_Norm", "10_Gemm"};
  for (std::size_t i = 0; i < order.size(); ++i) EXPECT_EQ(r.rows[i].name, order[i]);
  EXPECT_EQ(row_named(r, "4_Conv").status, "not run");
  EXPECT_EQ(row_named(r, "4_Conv").task, "level1/4_Conv");
  EXPECT_EQ(row_named(r, "5_Norm").status, "unfinished");
  EXPECT_FALSE(row_named(r, "5_Norm").correct);

  const auto m = report::compute_metrics(r.rows);
  EXPECT_EQ(m.problems, 6);
  EXPECT_EQ(m.ran, 4);
  EXPECT_EQ(m.not_run, 1);
  EXPECT_EQ(m.unfinished, 1);
  EXPECT_EQ(m.correct, 3);
  EXPECT_DOUBLE_EQ(m.correctness_rate, 0.5);

  // Eager: 2.5, 0.8 and 1.5 over all 6 problems.
  EXPECT_EQ(m.vs_eager.baseline, "eager");
  EXPECT_EQ(m.vs_eager.problems, 6);
  EXPECT_EQ(m.vs_eager.correct, 3);
  EXPECT_DOUBLE_EQ(m.vs_eager.fast_p.at("fast_0"), 3.0 / 6);
  EXPECT_DOUBLE_EQ(m.vs_eager.fast_p.at("fast_1"), 2.0 / 6);
  EXPECT_DOUBLE_EQ(m.vs_eager.fast_p.at("fast_1.5"), 1.0 / 6);  // 1.5 is not > 1.5
  EXPECT_DOUBLE_EQ(m.vs_eager.fast_p.at("fast_2"), 1.0 / 6);
  EXPECT_DOUBLE_EQ(*m.vs_eager.geomean, std::cbrt(2.5 * 0.8 * 1.5));

  // torch.compile: known for 1_Square, 3_Softmax (wrong) and 10_Gemm; speedups 1.25 and 3.
  EXPECT_EQ(m.vs_compile.problems, 3);
  EXPECT_EQ(m.vs_compile.correct, 2);
  EXPECT_DOUBLE_EQ(m.vs_compile.fast_p.at("fast_0"), 2.0 / 3);
  EXPECT_DOUBLE_EQ(m.vs_compile.fast_p.at("fast_1"), 2.0 / 3);
  EXPECT_DOUBLE_EQ(m.vs_compile.fast_p.at("fast_1.5"), 1.0 / 3);
  EXPECT_DOUBLE_EQ(m.vs_compile.fast_p.at("fast_2"), 1.0 / 3);
  EXPECT_DOUBLE_EQ(*m.vs_compile.geomean, std::sqrt(1.25 * 3.0));

  EXPECT_EQ(m.policies.at("eager-widened"), 4);
  EXPECT_EQ(m.policies.at("user"), 1);
  EXPECT_EQ(m.widened_by_eager, 1);
  EXPECT_EQ(m.hardware.at("NVIDIA H100 80GB HBM3"), 5);
  EXPECT_EQ(m.tokens, 3000 + 2000 + 4000 + 5000 + 900);
  EXPECT_EQ(m.evaluations, 7 + 5 + 6 + 9 + 2);
  EXPECT_NEAR(*m.cost_usd, 0.12 + 0.08 + 0.16 + 0.01, 1e-12);
}

TEST(ReportMetrics, BatchFindsRunFoldersMovedFromTheClusterAndSaysWhatItSkipped) {
  const auto r = report::load_report(kFixtures / "batch");
  // run_dir in results.jsonl names a cluster path; the trajectory comes from runs/<name>.
  const auto& square = row_named(r, "1_Square");
  const std::vector<std::pair<double, double>> expected = {{5, 1.2}, {7, 2.5}};
  EXPECT_EQ(square.trajectory, expected);
  EXPECT_EQ(fs::path(square.run_dir), kFixtures / "batch" / "runs" / "1_Square");
  // runs/1_Square/run.json is the same run as its results.jsonl line: one row, not two.
  EXPECT_EQ(std::count_if(r.rows.begin(), r.rows.end(),
                          [](const ProblemRow& row) { return row.name == "1_Square"; }),
            1);
  bool truncated_line = false, unfinished = false;
  for (const auto& warning : r.warnings) {
    if (warning.find("results.jsonl:5") != std::string::npos) truncated_line = true;
    if (warning.find("5_Norm has no run.json") != std::string::npos) unfinished = true;
  }
  EXPECT_TRUE(truncated_line);
  EXPECT_TRUE(unfinished);
}

// Issue 27, item 4: how often the selector's first choice was the run's eventual winner, over the
// runs that had both; a run whose best stayed the reference had no winner to choose.
TEST(ReportMetrics, TheFirstChoiceCountsWhereItWasTheWinner) {
  auto row = [](std::string first, std::string best) {
    report::ProblemRow r;
    r.ran = true;
    r.status = "finished";
    r.first_choice = std::move(first);
    r.best_technique = std::move(best);
    return r;
  };
  const auto m = report::compute_metrics(
      {row("cuda/builtin-torch-compile", "cuda/builtin-torch-compile"),
       row("cuda/builtin-cuda-graph", "cuda/builtin-torch-compile"),
       row("cuda/builtin-torch-compile", "reference"), row("", "cuda/builtin-torch-compile")});
  EXPECT_EQ(m.first_choice_runs, 2);
  EXPECT_EQ(m.first_choice_won, 1);
}

TEST(ReportMetrics, SingleRunsUseTheirOwnBaseline) {
  const auto relu = report::load_report(kFixtures / "run_relu");
  EXPECT_EQ(relu.kind, "run");
  ASSERT_EQ(relu.rows.size(), 1u);
  const auto m = report::compute_metrics(relu.rows);
  EXPECT_DOUBLE_EQ(m.correctness_rate, 1.0);
  EXPECT_DOUBLE_EQ(*m.vs_eager.geomean, 1.6);
  EXPECT_DOUBLE_EQ(*m.vs_compile.geomean, 1.28);
  EXPECT_EQ(relu.rows[0].trajectory.size(), 3u);

  const auto native = report::load_report(kFixtures / "run_native");
  const auto n = report::compute_metrics(native.rows);
  EXPECT_EQ(n.vs_eager.baseline, "scalar_c_O2");
  EXPECT_EQ(n.vs_compile.problems, 0);
  EXPECT_FALSE(n.vs_compile.geomean.has_value());
  EXPECT_DOUBLE_EQ(n.vs_eager.fast_p.at("fast_2"), 1.0);
}

TEST(ReportMetrics, BadDirectoriesAreInputErrorsWithAHint) {
  testing::TempDir dir;
  for (const auto& bad : {dir / "missing", dir.path()}) {
    const auto e = testing::error_of([&] { report::load_report(bad); });
    EXPECT_EQ(e.code(), ExitCode::bad_input) << bad;
    EXPECT_NE(e.hint().find("run.json"), std::string::npos);
  }
}

TEST(ReportMetrics, NaturalOrderPutsTwoBeforeTen) {
  EXPECT_TRUE(report::natural_less("level1/2_Relu", "level1/10_Gemm"));
  EXPECT_FALSE(report::natural_less("level1/10_Gemm", "level1/2_Relu"));
  EXPECT_TRUE(report::natural_less("a", "b"));
  EXPECT_TRUE(report::natural_less("x1", "x01a"));
  EXPECT_FALSE(report::natural_less("same", "same"));
}

}  // namespace
}  // namespace mblast

namespace mblast {
namespace {

TEST(ReportMetrics, TheSolScoreMedianIsOverTheCorrectProblemsWithAScore) {
  std::vector<report::ProblemRow> rows(4);
  const double scores[] = {0.5, 0.9, 0.6, 0.99};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].ran = true;
    rows[i].status = "finished";
    rows[i].correct = i != 3;  // a wrong problem's score does not count
    rows[i].speedup = 1.0;
    rows[i].sol_score = scores[i];
  }
  rows[1].sol_score.reset();  // no estimate for this one
  const auto m = report::compute_metrics(rows);
  EXPECT_EQ(m.sol_scored, 2);
  EXPECT_NEAR(*m.sol_score_median, 0.55, 1e-12);
  EXPECT_FALSE(report::compute_metrics({rows[1]}).sol_score_median.has_value());
}

}  // namespace
}  // namespace mblast

namespace mblast::report {
namespace {

TEST(ReportFailures, ACauseLeavesOutPathsNumbersAndWhereAnOutputDiffered) {
  EXPECT_EQ(failure_cause("/r/candidates/s001-x.py: forward raised RuntimeError: CUDA out of "
                          "memory. Tried to allocate 2.50 GiB (GPU 0; 79.1 GiB total)"),
            "forward raised RuntimeError: CUDA out of memory. Tried to allocate N GiB (GPU N; N GiB "
            "total)");
  EXPECT_EQ(failure_cause("seed 3: output 1 differs at index [4, 2]: candidate 1.5, reference 2"),
            "an output differs from the reference");
  EXPECT_EQ(failure_cause("nvcc failed: /tmp/x/k.cu(12): error: identifier undefined\nmore"),
            "nvcc failed: PATH(N): error: identifier undefined");
  EXPECT_EQ(failure_cause(""), "no error text");
  EXPECT_EQ(failure_cause(std::string(500, 'x')).size(), 160u);
}

}  // namespace
}  // namespace mblast::report
