// mblast report beside the batch's best-of controls (baselines.jsonl): loading, metrics and the
// Markdown and JSON that show them.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "mblast/report.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;
using report::ProblemRow;
using testing::run_mblast;
using testing::TempDir;

const fs::path kFixtures = fs::path(MBLAST_SOURCE_DIR) / "tests" / "fixtures" / "report";

// mblast's speedups in the batch fixture: 1_Square 2.5, 2_Relu 0.8, 3_Softmax incorrect,
// 4_Conv not run, 5_Norm unfinished, 10_Gemm 1.5.
constexpr const char* kControls[] = {
    R"({"task": "level1/1_Square", "baseline": "torch_compile", "correct": true, "speedup": 1.25})",
    R"({"task": "level1/1_Square", "baseline": "cuda_graph", "correct": true, "speedup": 1.6})",
    // An incorrect control's speedup does not count.
    R"({"task": "level1/1_Square", "baseline": "torch_compile_max_autotune", "correct": false,)"
    R"( "speedup": 9.0})",
    // Every control slower than eager: eager is the best-of.
    R"({"task": "level1/2_Relu", "baseline": "cuda_graph", "correct": true, "speedup": 0.9})",
    R"({"task": "level1/2_Relu", "baseline": "torch_compile", "correct": true, "speedup": 0.5})",
    R"({"task": "level1/3_Softmax", "baseline": "torch_compile", "correct": true, "speedup": 1.6})",
    R"({"task": "level1/4_Conv", "baseline": "cuda_graph", "correct": true, "speedup": 1.1})",
};

// The batch fixture, copied, with baselines.jsonl holding `lines`.
struct BestOfBatch {
  TempDir dir;
  fs::path batch = dir / "batch";

  explicit BestOfBatch(const std::vector<std::string>& lines) {
    fs::copy(kFixtures / "batch", batch, fs::copy_options::recursive);
    std::ofstream out(batch / "baselines.jsonl");
    for (const auto& line : lines) out << line << "\n";
  }
  BestOfBatch()
      : BestOfBatch(std::vector<std::string>(std::begin(kControls), std::end(kControls))) {}
};

const ProblemRow& row_named(const report::Report& r, const std::string& name) {
  for (const auto& row : r.rows) {
    if (row.name == name) return row;
  }
  throw std::runtime_error("no row " + name);
}

bool has_warning(const report::Report& r, const std::string& part) {
  for (const auto& warning : r.warnings) {
    if (warning.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(ReportBestOf, BestOfIsTheFastestOfEagerAndTheCorrectControls) {
  const BestOfBatch f;
  const auto r = report::load_report(f.batch);
  const auto& square = row_named(r, "1_Square");
  ASSERT_TRUE(square.best_of.has_value());
  EXPECT_DOUBLE_EQ(*square.best_of, 1.6);  // not the incorrect 9.0
  const std::vector<std::string> measured = {"cuda_graph", "torch_compile",
                                             "torch_compile_max_autotune"};
  EXPECT_EQ(square.best_of_measured, measured);
  EXPECT_DOUBLE_EQ(*square.speedup_vs_best_of, 2.5 / 1.6);

  const auto& relu = row_named(r, "2_Relu");
  EXPECT_DOUBLE_EQ(*relu.best_of, 1.0);  // both controls slower than eager
  EXPECT_DOUBLE_EQ(*relu.speedup_vs_best_of, 0.8);

  const auto& softmax = row_named(r, "3_Softmax");  // mblast was not correct
  EXPECT_DOUBLE_EQ(*softmax.best_of, 1.6);
  EXPECT_FALSE(softmax.speedup_vs_best_of.has_value());

  const auto& gemm = row_named(r, "10_Gemm");  // no line
  EXPECT_FALSE(gemm.best_of.has_value());
  EXPECT_TRUE(gemm.best_of_measured.empty());
  EXPECT_FALSE(gemm.speedup_vs_best_of.has_value());
}

TEST(ReportBestOf, MetricsCountEveryProblemWhoseBestOfIsKnown) {
  const BestOfBatch f;
  const auto m = report::compute_metrics(report::load_report(f.batch).rows);
  // Known for 1_Square, 2_Relu, 3_Softmax (not correct) and 4_Conv (not run); not 10_Gemm.
  EXPECT_EQ(m.vs_best_of.baseline, "best-of");
  EXPECT_EQ(m.vs_best_of.problems, 4);
  EXPECT_EQ(m.vs_best_of.correct, 2);
  EXPECT_DOUBLE_EQ(m.vs_best_of.fast_p.at("fast_1"), 1.0 / 4);    // 2.5 / 1.6 only
  EXPECT_DOUBLE_EQ(m.vs_best_of.fast_p.at("fast_1.5"), 1.0 / 4);  // 1.5625 > 1.5
  EXPECT_DOUBLE_EQ(m.vs_best_of.fast_p.at("fast_2"), 0.0);
  EXPECT_NEAR(*m.vs_best_of.geomean, std::sqrt(2.5 / 1.6 * 0.8), 1e-12);
  ASSERT_TRUE(m.best_of_geomean.has_value());
  EXPECT_NEAR(*m.best_of_geomean, std::pow(1.6 * 1.0 * 1.6 * 1.1, 0.25), 1e-12);
  // The other metrics do not change.
  EXPECT_EQ(m.vs_eager.problems, 6);
  EXPECT_EQ(m.vs_compile.problems, 3);
}

TEST(ReportBestOf, LinesThatCannotBeReadAreWarningsAndTheRestCount) {
  const BestOfBatch f({
      R"({"task": "level1/1_Square", "baseline": "cuda_graph", "correct": false, "speedup": null})",
      R"({"task": "level1/1_Square", "baseline": "cuda_graph", "correct": true, "speedup": 2.0})",
      R"({"task": "level1/2_Relu", "correct": true, "speedup": 5.0})",
      R"({"baseline": "cuda_graph", "correct": true, "speedup": 5.0})",
      R"({"task": "level1/2_Relu", "baseline": "torch_com)",
      R"({"task": "level1/99_Missing", "baseline": "cuda_graph", "correct": true, "speedup": 3})",
  });
  const auto r = report::load_report(f.batch);
  EXPECT_TRUE(has_warning(r, "baselines.jsonl:5 is not a JSON object"));
  EXPECT_TRUE(has_warning(r, "baselines.jsonl: a line without \"task\" and \"baseline\""));
  EXPECT_TRUE(has_warning(r, "cuda_graph for level1/1_Square appears more than once"));
  EXPECT_TRUE(has_warning(r, "level1/99_Missing"));
  EXPECT_DOUBLE_EQ(*row_named(r, "1_Square").best_of, 2.0);  // the last line counts
  EXPECT_FALSE(row_named(r, "2_Relu").best_of.has_value());  // its lines were skipped
  EXPECT_EQ(report::compute_metrics(r.rows).vs_best_of.problems, 1);
}

TEST(ReportBestOf, WithoutBaselinesNoProblemHasABestOf) {
  const auto r = report::load_report(kFixtures / "batch");
  for (const auto& row : r.rows) EXPECT_FALSE(row.best_of.has_value()) << row.name;
  const auto m = report::compute_metrics(r.rows);
  EXPECT_EQ(m.vs_best_of.problems, 0);
  EXPECT_EQ(m.vs_best_of.correct, 0);
  EXPECT_FALSE(m.best_of_geomean.has_value());

  auto markdown = run_mblast({"report", (kFixtures / "batch").string()});
  ASSERT_EQ(markdown.exit_code, 0) << markdown.err;
  EXPECT_NE(markdown.out.find("| task | status | correct | vs eager | vs compile | evals |"),
            std::string::npos)
      << markdown.out;
  EXPECT_EQ(markdown.out.find("best-of"), std::string::npos) << markdown.out;
}

TEST(ReportBestOf, MarkdownJsonAndHtmlShowTheBestOf) {
  const BestOfBatch f;
  auto markdown = run_mblast({"report", f.batch.string()});
  ASSERT_EQ(markdown.exit_code, 0) << markdown.err;
  for (const char* text :
       {"| task | status | correct | vs eager | vs compile | best-of | evals |",
        "| level1/1_Square | finished | yes | 2.5x | 1.25x | 1.6x |",
        "| level1/10_Gemm | budget | yes | 1.5x | 3x | - |",
        "vs best-of (per problem the fastest of eager and its correct controls, judged in this "
        "batch; known for 4 of 6 problems): fast_1 25.0%, fast_1.5 25.0%, geomean 1.12x",
        "mblast geomean over eager 1.44x (correct problems) beside best-of geomean over eager "
        "1.3x (4 problems)"}) {
    EXPECT_NE(markdown.out.find(text), std::string::npos) << text << "\n" << markdown.out;
  }

  const fs::path page = f.dir / "report.html";
  auto json = run_mblast({"report", f.batch.string(), "--json", "--html", page.string()});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["vs_best_of"]["baseline"], "best-of");
  EXPECT_EQ(j["vs_best_of"]["problems"], 4);
  EXPECT_DOUBLE_EQ(j["vs_best_of"]["fast_p"]["fast_1"].get<double>(), 0.25);
  EXPECT_NEAR(j["vs_best_of"]["geomean_speedup"].get<double>(), std::sqrt(1.25), 1e-12);
  EXPECT_EQ(j["vs_best_of"]["fast_p_curve"].size(), 31u);
  EXPECT_NEAR(j["best_of_geomean"].get<double>(), std::pow(2.816, 0.25), 1e-12);
  const auto& square = j["rows"][0];
  EXPECT_DOUBLE_EQ(square["best_of"].get<double>(), 1.6);
  EXPECT_EQ(square["best_of_measured"].size(), 3u);
  EXPECT_DOUBLE_EQ(square["speedup_vs_best_of"].get<double>(), 2.5 / 1.6);
  const auto& gemm = j["rows"][5];
  EXPECT_TRUE(gemm["best_of"].is_null());
  EXPECT_TRUE(gemm["best_of_measured"].empty());
  EXPECT_TRUE(gemm["speedup_vs_best_of"].is_null());

  std::ifstream in(page);
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("beside best-of geomean over eager 1.3x"), std::string::npos);
  EXPECT_NE(html.find("<th class=\"n\">best-of</th>"), std::string::npos);
}

// A run whose eager times lay far apart is named under the problems table and carries its range
// in the JSON; one within the margin, or without a range (older runs), is not.
TEST(ReportEagerRange, ProblemsWhoseEagerVariedAreNamedWithTheirRange) {
  const BestOfBatch f;
  // The batch's results.jsonl holds each run's summary, run.json's form, a line each.
  const auto with_range = [&](double min_ms, double max_ms) {
    const fs::path file = f.batch / "results.jsonl";
    std::ifstream in(file);
    std::string lines, text;
    while (std::getline(in, text)) {
      auto j = nlohmann::json::parse(text, nullptr, false);  // the fixture holds a broken line
      if (j.is_object() && j["problem"] == "1_Square") {
        j["eager_range"] = {{"min_ms", min_ms}, {"max_ms", max_ms}, {"evaluations", 4}};
        text = j.dump();
      }
      lines += text + "\n";
    }
    in.close();
    std::ofstream(file) << lines;
  };
  const std::string line = "Eager's time differed by more than 20 % between the evaluations of ";
  with_range(1.96, 4.61);
  const auto markdown = run_mblast({"report", f.batch.string()});
  ASSERT_EQ(markdown.exit_code, 0) << markdown.err;
  EXPECT_NE(markdown.out.find(line + "1 problem (each speedup is over the eager timed in its own "
                                     "evaluation): 1_Square 1.96-4.61 ms over 4."),
            std::string::npos)
      << markdown.out;
  const auto json = run_mblast({"report", f.batch.string(), "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto rows = nlohmann::json::parse(json.out)["rows"];
  EXPECT_EQ(rows[0]["eager_range"]["max_ms"], 4.61);
  EXPECT_TRUE(rows[5]["eager_range"].is_null());

  with_range(1.0, 1.1);
  const auto narrow = run_mblast({"report", f.batch.string()});
  ASSERT_EQ(narrow.exit_code, 0) << narrow.err;
  EXPECT_EQ(narrow.out.find(line), std::string::npos) << narrow.out;
}

}  // namespace
}  // namespace mblast
