// `mblast report` as users and scripts run it: Markdown, --json, --html, --kb, exit codes.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "mblast/kb.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;
using testing::run_mblast;
using testing::TempDir;

const fs::path kFixtures = fs::path(MBLAST_SOURCE_DIR) / "tests" / "fixtures" / "report";

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

std::string page_text(const fs::path& page) {
  std::ifstream in(page);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Empty when every element opened is closed, in order (void and self-closing ones aside).
std::string unbalanced(const std::string& html) {
  static const std::set<std::string> void_elements = {"meta", "br", "hr", "img", "link"};
  std::vector<std::string> open;
  for (std::size_t at = html.find('<'); at != std::string::npos; at = html.find('<', at)) {
    const std::size_t end = html.find('>', at);
    if (end == std::string::npos) return "a tag never ends";
    const std::string tag = html.substr(at + 1, end - at - 1);
    at = end + 1;
    if (tag.empty() || tag[0] == '!') continue;
    const bool closing = tag[0] == '/';
    std::string name = tag.substr(closing ? 1 : 0);
    name = name.substr(0, name.find_first_of(" \t\n/"));
    if (tag.back() == '/' || void_elements.count(name)) continue;
    if (!closing) {
      open.push_back(name);
    } else if (open.empty() || open.back() != name) {
      return "</" + name + "> closes " + (open.empty() ? "nothing" : "<" + open.back() + ">");
    } else {
      open.pop_back();
    }
  }
  return open.empty() ? "" : "<" + open.back() + "> is never closed";
}

TEST(ReportCli, MarkdownShowsMetricsAndEveryProblem) {
  auto result = run_mblast({"report", (kFixtures / "batch").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  for (const char* text :
       {"# mblast report", "Batch of 6 problems: 4 run, 1 unfinished, 1 not run (level 1)",
        "| fast_1 | 33.3% | 66.7% |", "| correct | 3 (50.0%) | 2 (66.7%) |",
        "| level1/4_Conv | not run | no |", "| level1/10_Gemm | budget | yes | 1.5x | 3x |",
        "eager-widened (4), user (1)", "torch.compile time known for 3 of 6 problems",
        "results.jsonl:5 is not a JSON object"}) {
    EXPECT_NE(result.out.find(text), std::string::npos) << text << "\n" << result.out;
  }
}

TEST(ReportCli, JsonHoldsMetricsRowsAndCurves) {
  auto result = run_mblast({"report", (kFixtures / "batch").string(), "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto j = nlohmann::json::parse(result.out);
  EXPECT_EQ(j["kind"], "batch");
  EXPECT_EQ(j["problems"], 6);
  EXPECT_EQ(j["ran"], 4);
  EXPECT_EQ(j["not_run"], 1);
  EXPECT_EQ(j["correct"], 3);
  EXPECT_DOUBLE_EQ(j["correctness_rate"].get<double>(), 0.5);
  EXPECT_EQ(j["vs_eager"]["baseline"], "eager");
  EXPECT_DOUBLE_EQ(j["vs_eager"]["fast_p"]["fast_1"].get<double>(), 2.0 / 6);
  EXPECT_DOUBLE_EQ(j["vs_eager"]["fast_p"]["fast_1.5"].get<double>(), 1.0 / 6);
  EXPECT_NEAR(j["vs_eager"]["geomean_speedup"].get<double>(), std::cbrt(3.0), 1e-12);
  EXPECT_EQ(j["vs_compile"]["problems"], 3);
  EXPECT_DOUBLE_EQ(j["vs_compile"]["fast_p"]["fast_2"].get<double>(), 1.0 / 3);
  EXPECT_NEAR(j["vs_compile"]["geomean_speedup"].get<double>(), std::sqrt(3.75), 1e-12);
  const auto& curve = j["vs_eager"]["fast_p_curve"];
  ASSERT_EQ(curve.size(), 31u);
  EXPECT_DOUBLE_EQ(curve[0]["fast_p"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(curve[30]["p"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(curve[30]["fast_p"].get<double>(), 0.0);
  EXPECT_EQ(j["precision"]["policies"]["eager-widened"], 4);
  EXPECT_EQ(j["precision"]["widened_by_eager"], 1);
  EXPECT_EQ(j["hardware"]["NVIDIA H100 80GB HBM3"], 5);
  EXPECT_EQ(j["totals"]["tokens"], 14900);

  ASSERT_EQ(j["rows"].size(), 6u);
  const auto& not_run = j["rows"][3];
  EXPECT_EQ(not_run["task"], "level1/4_Conv");
  EXPECT_EQ(not_run["status"], "not run");
  EXPECT_EQ(not_run["correct"], false);
  EXPECT_TRUE(not_run["speedup"].is_null());
  const auto& gemm = j["rows"][5];
  for (const char* field : {"task", "status", "correct", "speedup", "speedup_vs_compile",
                            "evaluations", "tokens", "cost_usd", "best_technique", "trajectory"}) {
    EXPECT_TRUE(gemm.contains(field)) << field;
  }
  EXPECT_DOUBLE_EQ(gemm["speedup_vs_compile"].get<double>(), 3.0);
  EXPECT_EQ(gemm["best_technique"], "cuda/register-tiling");
  // The runs' KB (/cluster/kb.sqlite) is not on this machine: said, not fatal.
  EXPECT_EQ(j["techniques"]["scope"], "runs");
  EXPECT_TRUE(j["techniques"]["rows"].empty());
  ASSERT_FALSE(j["techniques"]["notes"].empty());
  EXPECT_NE(j["techniques"]["notes"][0].get<std::string>().find("--kb"), std::string::npos);
}

TEST(ReportCli, HtmlIsOneSelfContainedPageWithFourPlots) {
  TempDir dir;
  const fs::path page = dir / "out" / "report.html";
  auto result = run_mblast({"report", (kFixtures / "batch").string(), "--html", page.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("## KernelBench metrics"), std::string::npos);  // still Markdown
  const std::string html = read_file(page);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(unbalanced(html), "");
  EXPECT_EQ(count(html, "<svg"), 4u);
  EXPECT_EQ(count(html, "</svg>"), 4u);
  for (const char* title : {"Speedup distribution", "fast_p over p", "Best speedup per evaluation",
                            "Technique win rates by state", "level1/4_Conv", "not run"}) {
    EXPECT_NE(html.find(title), std::string::npos) << title;
  }
  for (const char* external : {"<script", "<link", " src=", " href=", "url(", "@import"}) {
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  }
  EXPECT_FALSE(fs::exists(page.string() + ".partial"));

  // A single run renders too, with its own baseline's name.
  auto native = run_mblast({"report", (kFixtures / "run_native").string(), "--html",
                            (dir / "native.html").string(), "--json"});
  ASSERT_EQ(native.exit_code, 0) << native.err;
  EXPECT_EQ(nlohmann::json::parse(native.out)["vs_eager"]["baseline"], "scalar_c_O2");
  const std::string native_html = read_file(dir / "native.html");
  EXPECT_EQ(unbalanced(native_html), "");
  EXPECT_NE(native_html.find("vs scalar_c_O2"), std::string::npos);
}

struct KbFixture {
  TempDir dir;
  fs::path kb_path = dir / "kb.sqlite";
  fs::path run_dir = dir / "run";

  KbFixture() {
    std::string run_id, other_id;
    {
      KnowledgeBase kb(kb_path);
      RunRow run;
      run.task = "level1/19_ReLU";
      run.backend = "cuda";
      run.hardware = "NVIDIA H100 80GB HBM3";
      run_id = kb.add_run(run);
      other_id = kb.add_run(run);
      std::int64_t step = 0;
      auto attempt = [&](const std::string& id, const std::string& state,
                         const std::string& technique, const std::string& outcome,
                         std::optional<double> reward) {
        AttemptRow row;
        row.run_id = id;
        row.task = run.task;
        row.state_id = state;
        row.technique_id = technique;
        row.backend = "cuda";
        row.hardware = run.hardware;
        row.step = ++step;
        row.outcome = outcome;
        row.reward = reward;
        kb.add_attempt(row);
      };
      attempt(run_id, "memory-bound", "cuda/builtin-cuda-graph", "correct", 0.4);
      attempt(run_id, "memory-bound", "cuda/builtin-cuda-graph", "correct", -0.1);
      attempt(run_id, "memory-bound", "cuda/coalescing-fix", "compile_error", std::nullopt);
      attempt(run_id, "memory-bound", "cuda/coalescing-fix", "incorrect", -1.0);
      attempt(other_id, "compute-bound", "cuda/register-tiling", "correct", 0.2);
    }
    fs::copy(kFixtures / "run_relu", run_dir, fs::copy_options::recursive);
    auto run = nlohmann::json::parse(read_file(run_dir / "run.json"));
    run["run_id"] = run_id;
    run["kb"] = kb_path.string();
    std::ofstream(run_dir / "run.json") << run.dump(2);
  }
};

TEST(ReportCli, TechniqueWinRatesCountTheseRunsOrTheWholeKb) {
  KbFixture f;
  auto result = run_mblast({"report", f.run_dir.string(), "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto techniques = nlohmann::json::parse(result.out)["techniques"];
  EXPECT_EQ(techniques["scope"], "runs");
  ASSERT_EQ(techniques["rows"].size(), 2u) << techniques.dump(2);
  const auto& graph = techniques["rows"][0];  // most tried first
  EXPECT_EQ(graph["state"], "memory-bound");
  EXPECT_EQ(graph["technique"], "cuda/builtin-cuda-graph");
  EXPECT_EQ(graph["tries"], 2);
  EXPECT_EQ(graph["correct"], 2);
  EXPECT_EQ(graph["improved"], 1);
  EXPECT_DOUBLE_EQ(graph["win_rate"].get<double>(), 0.5);
  const auto& fix = techniques["rows"][1];  // the attempt before its fix carries no reward
  EXPECT_EQ(fix["technique"], "cuda/coalescing-fix");
  EXPECT_EQ(fix["tries"], 1);
  EXPECT_EQ(fix["improved"], 0);

  auto whole = run_mblast({"report", f.run_dir.string(), "--json", "--kb", f.kb_path.string()});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  techniques = nlohmann::json::parse(whole.out)["techniques"];
  EXPECT_EQ(techniques["scope"], "kb");
  EXPECT_EQ(techniques["rows"].size(), 3u);

  TempDir out;
  auto html = run_mblast({"report", f.run_dir.string(), "--html", (out / "r.html").string()});
  ASSERT_EQ(html.exit_code, 0) << html.err;
  const std::string page = read_file(out / "r.html");
  EXPECT_NE(page.find("1/2"), std::string::npos);  // the heatmap cell: improved / tries
  EXPECT_EQ(unbalanced(page), "");
}

TEST(ReportCli, StatesShowWhereTheStepsWereClassifiedWithTheirEvidence) {
  const TempDir dir;
  const fs::path run = dir / "run";
  fs::copy(kFixtures / "run_relu", run, fs::copy_options::recursive);
  std::ofstream steps(run / "steps.jsonl", std::ios::trunc);
  const std::pair<const char*, const char*> classified[] = {
      {"latency-bound", "sol_fraction = 0.1 (< 0.5)"},
      {"near-roofline/bandwidth", "sol_fraction = 0.9 (>= 0.8)"},
      {"near-roofline/bandwidth", "sol_fraction = 0.95 (>= 0.8)"}};
  int step = 0;
  for (const auto& [state, evidence] : classified) {
    nlohmann::json line = {{"global_step", ++step}, {"state", state}, {"state_evidence", evidence}};
    // The graph-first round decides the first step; the selector's own first choice is the
    // second step's, the run's winner (run.json best_technique).
    line["technique"] = step == 2 ? "cuda/builtin-cuda-graph" : "cuda/builtin-torch-compile";
    line["decision"] = {{"by", step == 1 ? "graph-first round" : "ucb"}};
    if (step == 1) {
      line["ncu_state"] = "memory-bound/below-bandwidth";
      line["ncu_evidence"] = "dram_throughput_fraction = 0.1";
    }
    steps << line.dump() << "\n";
  }
  steps.close();

  auto markdown = run_mblast({"report", run.string()});
  ASSERT_EQ(markdown.exit_code, 0) << markdown.err;
  EXPECT_NE(markdown.out.find("## States"), std::string::npos) << markdown.out;
  EXPECT_NE(markdown.out.find("| latency-bound | 1 | 1 | sol_fraction = 0.1 (< 0.5) |"),
            std::string::npos)
      << markdown.out;
  EXPECT_NE(markdown.out.find("| near-roofline/bandwidth | 2 | 2 | sol_fraction = 0.9 (>= 0.8) | "
                              "- |  |"),
            std::string::npos)
      << markdown.out;
  EXPECT_NE(markdown.out.find("| state Nsight Compute implies | its numbers |"), std::string::npos)
      << markdown.out;
  EXPECT_NE(markdown.out.find("memory-bound/below-bandwidth | dram_throughput_fraction = 0.1 |"),
            std::string::npos)
      << markdown.out;
  EXPECT_NE(markdown.out.find("first choice was the winner"), std::string::npos) << markdown.out;

  const fs::path page = dir / "report.html";
  ASSERT_EQ(run_mblast({"report", run.string(), "--html", page.string()}).exit_code, 0);
  const std::string html = page_text(page);
  EXPECT_NE(html.find("<h2>States</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td>latency-bound</td><td class=\"n\">1</td><td class=\"n\">1</td>"
                      "<td>sol_fraction = 0.1 (&lt; 0.5)</td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<th>state Nsight Compute implies</th>"), std::string::npos);
  EXPECT_EQ(unbalanced(html), "");

  auto json = run_mblast({"report", run.string(), "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto states = nlohmann::json::parse(json.out)["rows"][0]["states"];
  ASSERT_EQ(states.size(), 2u) << states.dump();
  EXPECT_EQ(states[1]["state"], "near-roofline/bandwidth");
  EXPECT_EQ(states[1]["steps"], 2);
  EXPECT_EQ(states[1]["first_step"], 2);
  EXPECT_EQ(states[1]["evidence"], "sol_fraction = 0.9 (>= 0.8)");
  EXPECT_EQ(states[0]["ncu_state"], "memory-bound/below-bandwidth");
  EXPECT_FALSE(states[1].contains("ncu_state"));
  const auto report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["rows"][0]["first_choice"], "cuda/builtin-cuda-graph");
  EXPECT_EQ(report["first_choice"], (nlohmann::json{{"runs", 1}, {"won", 1}}));
}

TEST(ReportCli, FailedStepsAreGroupedByTheirCauseWithoutEachRunsDetails) {
  const TempDir dir;
  const fs::path batch = dir / "batch";
  const std::vector<std::string> errors[] = {
      {"/runs/a/candidates/s002-torch_compile.py: forward raised OSError: [Errno 30] Read-only "
       "file system: '/tmp/mblast-worker-SHcS8M'",
       "seed 1: output 0 differs at index [8, 10]: candidate 0.17, reference 0.18 (tolerance "
       "atol 0.00272 + rtol 0.00272*|ref|) [flags: precision_drop]"},
      {"/runs/b/candidates/s004-cuda_graph.py: forward raised OSError: [Errno 30] Read-only file "
       "system: '/tmp/mblast-worker-QYwqaA'"}};
  int run_number = 0;
  for (const auto& run_errors : errors) {
    const fs::path run = batch / "runs" / ("p" + std::to_string(++run_number));
    fs::create_directories(run.parent_path());
    fs::copy(kFixtures / "run_relu", run, fs::copy_options::recursive);
    auto summary = nlohmann::json::parse(std::ifstream(run / "run.json"));
    summary["problem"] = "/kb/level1/" + std::to_string(run_number) + "_P.py";
    summary["run_id"] = "run-" + std::to_string(run_number);
    std::ofstream(run / "run.json", std::ios::trunc) << summary.dump();
    std::ofstream steps(run / "steps.jsonl", std::ios::trunc);
    int step = 0;
    steps << nlohmann::json{{"global_step", ++step},
                            {"outcome", "correct"},
                            {"technique", "cuda/builtin-torch-compile"}}
                 .dump()
          << "\n";
    for (const auto& error : run_errors) {
      const bool wrong = error.rfind("seed", 0) == 0;
      steps << nlohmann::json{{"global_step", ++step},
                              {"outcome", wrong ? "incorrect" : "runtime_error"},
                              {"technique", wrong ? "cuda/builtin-channels-last"
                                                  : "cuda/builtin-torch-compile-max-autotune"},
                              {"error", error}}
                   .dump()
            << "\n";
    }
  }

  auto markdown = run_mblast({"report", batch.string()});
  ASSERT_EQ(markdown.exit_code, 0) << markdown.err;
  EXPECT_NE(markdown.out.find("## Failed steps, by cause"), std::string::npos) << markdown.out;
  EXPECT_NE(markdown.out.find("| runtime_error | forward raised OSError: [Errno N] Read-only file "
                              "system: 'PATH' | 2 | 1_P, 2_P | "
                              "cuda/builtin-torch-compile-max-autotune |"),
            std::string::npos)
      << markdown.out;
  EXPECT_NE(markdown.out.find("| incorrect | an output differs from the reference [flags: "
                              "precision_drop] | 1 | 1_P | cuda/builtin-channels-last |"),
            std::string::npos)
      << markdown.out;

  const fs::path page = dir / "report.html";
  ASSERT_EQ(run_mblast({"report", batch.string(), "--html", page.string()}).exit_code, 0);
  const std::string html = page_text(page);
  EXPECT_NE(html.find("<h2>Failed steps, by cause</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td>runtime_error</td><td>forward raised OSError: [Errno N] Read-only file "
                      "system: &#39;PATH&#39;</td><td class=\"n\">2</td><td>1_P, 2_P</td>"),
            std::string::npos)
      << html;
  EXPECT_EQ(unbalanced(html), "");

  auto json = run_mblast({"report", batch.string(), "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto report = nlohmann::json::parse(json.out);
  ASSERT_EQ(report["failure_causes"].size(), 2u) << report["failure_causes"].dump();
  EXPECT_EQ(report["failure_causes"][0]["steps"], 2);
  EXPECT_EQ(report["failure_causes"][0]["problems"], nlohmann::json({"1_P", "2_P"}));
  const auto& failures = report["rows"][0]["failures"];
  ASSERT_EQ(failures.size(), 2u) << failures.dump();
  EXPECT_EQ(failures[0]["step"], 2);
  EXPECT_EQ(failures[0]["error"], errors[0][0]);  // the judge's own words stay in the row
}

TEST(ReportCli, ARunWithoutFailedStepsHasNoFailureSection) {
  auto markdown = run_mblast({"report", (kFixtures / "run_native").string()});
  ASSERT_EQ(markdown.exit_code, 0) << markdown.err;
  EXPECT_EQ(markdown.out.find("## Failed steps"), std::string::npos) << markdown.out;
}

TEST(ReportCli, AgainstAnotherBatchShowsBothSidesInEveryRendering) {
  TempDir dir;
  const auto batch = (kFixtures / "batch").string();
  auto text = run_mblast({"report", batch, "--against", batch});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("## Against " + batch), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("| level1/1_Square | 7 | 7 | 2.5x | 2.5x |"), std::string::npos)
      << text.out;
  auto json = run_mblast({"report", batch, "--against", batch, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto parsed = nlohmann::json::parse(json.out);
  const auto& all = parsed.at("comparison").at("groups").back();
  EXPECT_EQ(all.at("group"), "all");
  EXPECT_EQ(all.at("problems"), 3);
  EXPECT_DOUBLE_EQ(all.at("evaluations_ratio").get<double>(), 1.0);
  const auto page = dir / "r.html";
  ASSERT_EQ(run_mblast({"report", batch, "--against", batch, "--html", page.string()}).exit_code,
            0);
  std::ifstream in(page);
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("Best speedup per evaluation, side by side"), std::string::npos);
}

TEST(ReportCli, BadInputExitsTwoWithAFix) {
  TempDir dir;
  fs::create_directories(dir / "empty");
  std::ofstream(dir / "file.txt") << "not a folder";
  fs::create_directories(dir / "broken");
  std::ofstream(dir / "broken" / "run.json") << "{\"status\": ";
  const std::vector<std::vector<std::string>> bad = {
      {"report"},
      {"report", (dir / "missing").string()},
      {"report", (dir / "empty").string()},
      {"report", (dir / "file.txt").string()},
      {"report", (dir / "broken").string()},
      {"report", (kFixtures / "run_relu").string(), "--kb", (dir / "no-kb.sqlite").string()},
      {"report", (kFixtures / "run_relu").string(), "--html",
       (dir / "file.txt" / "r.html").string()},
      {"report", (kFixtures / "run_relu").string(), "--against", (dir / "missing").string()},
  };
  for (const auto& args : bad) {
    auto result = run_mblast(args);
    const std::string joined = args.size() > 1 ? args[1] : args[0];
    EXPECT_EQ(result.exit_code, 2) << joined << "\n" << result.err;
    EXPECT_NE(result.err.find("fix:"), std::string::npos) << joined << "\n" << result.err;
    EXPECT_TRUE(result.out.empty()) << joined;
  }
  auto help = run_mblast({"report", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* word :
       {"DIR", "--html", "--json", "--kb", "fast_p", "baselines.jsonl", "--against", "5 %"}) {
    EXPECT_NE(help.out.find(word), std::string::npos) << word;
  }
}

}  // namespace
}  // namespace mblast
