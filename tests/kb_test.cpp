#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "kb/sqlite.hpp"
#include "mblast/error.hpp"
#include "mblast/kb.hpp"
#include "mblast/policy.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

using testing::TempDir;

AttemptRow attempt(const std::string& task, const std::string& state, const std::string& technique,
                   double reward, std::int64_t step) {
  AttemptRow row;
  row.task = task;
  row.state_id = state;
  row.technique_id = technique;
  row.backend = "cuda";
  row.hardware = "NVIDIA H200";
  row.step = step;
  row.outcome = reward > -1 ? "correct" : "incorrect";
  row.reward = reward;
  row.speedup = reward > -1 ? 1.5 : 0.0;
  return row;
}

std::string first_technique(KnowledgeBase& kb, const std::string& backend) {
  return kb.techniques(backend).at(0).id;
}

std::string export_text(const KnowledgeBase& kb) {
  std::ostringstream out;
  kb.export_jsonl(out);
  return out.str();
}

TEST(KnowledgeBase, FreshFileHasLatestSchemaSeedWalAndForeignKeys) {
  TempDir dir;
  KnowledgeBase kb(dir / "nested" / "kb.sqlite");
  EXPECT_EQ(kb.schema_version(), KnowledgeBase::latest_schema_version());
  EXPECT_GE(KnowledgeBase::latest_schema_version(), 2);
  EXPECT_GE(kb.states().size(), 15u);
  EXPECT_GE(kb.techniques().size(), 40u);
  for (const char* backend : {"cuda", "opencl", "rvv"}) {
    EXPECT_GE(kb.techniques(backend).size(), 8u) << backend;
  }
  // Every state's parent exists and the four bound classes are roots.
  std::set<std::string> ids;
  for (const auto& s : kb.states()) ids.insert(s.id);
  for (const auto& s : kb.states()) {
    if (s.parent_id) {
      EXPECT_TRUE(ids.count(*s.parent_id)) << s.id;
    }
  }
  for (const char* root : {"launch-bound", "memory-bound", "compute-bound", "near-roofline"}) {
    EXPECT_TRUE(ids.count(root)) << root;
  }
  // Every technique a state ranks first exists, and a launch-bound model tries a graph first.
  std::set<std::string> techniques;
  for (const auto& t : kb.techniques()) techniques.insert(t.id);
  for (const auto& s : kb.states()) {
    for (const auto& t : s.try_first) EXPECT_TRUE(techniques.count(t)) << s.id << ": " << t;
  }
  const auto states = kb.states();
  const auto launch = std::find_if(states.begin(), states.end(), [](const StateRow& s) {
    return s.id == "launch-bound/many-small-kernels";
  });
  ASSERT_NE(launch, states.end());
  ASSERT_FALSE(launch->try_first.empty());
  EXPECT_EQ(launch->try_first.front(), "cuda/builtin-cuda-graph");
  EXPECT_EQ(kb.db().scalar_int("PRAGMA foreign_keys"), 1);
  auto mode = kb.db().prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode.step());
  EXPECT_EQ(mode.get_text(0), "wal");
  EXPECT_EQ(kb.integrity_check(), "ok");
}

TEST(KnowledgeBase, EveryBuiltinOfTheSeedNamesItsTransformTyped) {
  TempDir dir;
  KnowledgeBase kb(dir / "kb.sqlite");
  std::size_t builtins = 0;
  for (const auto& t : kb.techniques()) {
    if (t.implementer != "builtin") continue;
    ++builtins;
    ASSERT_TRUE(t.builtin.has_value()) << t.id;
    EXPECT_FALSE(t.builtin->transform.empty()) << t.id;
  }
  EXPECT_GE(builtins, 10u);
  const auto tf32 = kb.techniques("cuda");
  const auto graph = std::find_if(tf32.begin(), tf32.end(), [](const TechniqueRow& t) {
    return t.builtin && !t.builtin->requirements.empty() && !t.builtin->groups.empty();
  });
  EXPECT_NE(graph, tf32.end());  // requires and groups read from the catalogue
}

TEST(BuiltinSpecs, ReadLenientlyAndWrittenBackAsTheyCame) {
  const nlohmann::json raw = {{"transform", "cuda_graph"},
                              {"requires", {"torch_compile", 3}},
                              {"groups", "not a list"},
                              {"after", {"cuda/builtin-torch-compile"}},
                              {"note", "kept"}};
  const auto spec = BuiltinSpec::from_json(raw);
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->transform, "cuda_graph");
  EXPECT_EQ(spec->requirements, std::vector<std::string>{"torch_compile"});
  EXPECT_TRUE(spec->groups.empty() && spec->needs_ops.empty());
  EXPECT_EQ(spec->after, std::vector<std::string>{"cuda/builtin-torch-compile"});
  EXPECT_EQ(spec->to_json(), raw);
  EXPECT_FALSE(BuiltinSpec::from_json(nullptr).has_value());
  EXPECT_FALSE(BuiltinSpec::from_json("cuda_graph").has_value());
}

TEST(KnowledgeBase, ReopeningDoesNotDuplicateSeed) {
  TempDir dir;
  std::size_t techniques = 0;
  {
    KnowledgeBase kb(dir / "kb.sqlite");
    techniques = kb.techniques().size();
  }
  KnowledgeBase again(dir / "kb.sqlite");
  EXPECT_EQ(again.techniques().size(), techniques);
}

// Issue 27: a KB made under the catalogue that classified by "latency-bound" upgrades in place;
// that state is retired, never assigned again, and what was recorded under it stays.
TEST(KnowledgeBase, AnUpgradeRetiresDroppedSeedStatesAndKeepsTheirHistory) {
  TempDir dir;
  auto path = dir / "v6.sqlite";
  {
    KnowledgeBase v6(path, {.read_only = false, .target_version = 6, .seed = false});
    v6.db().exec(
        "INSERT INTO states (id, name, description, conditions, origin, created_at) VALUES "
        "('latency-bound', 'Latency-bound', 'd', "
        "'[{\"metric\": \"sol_fraction\", \"op\": \"<\", \"value\": 0.5}]', 'seed', 't'),"
        "('mine', 'Mine', 'a user state', '[]', 'user', 't');"
        "INSERT INTO techniques (id, name, description, backends, implementer, created_at) "
        "VALUES ('t', 'T', 'd', '[\"cuda\"]', 'llm', 't');"
        "INSERT INTO attempts (id, task, state_id, technique_id, backend, hardware, outcome, "
        "reward, created_at) VALUES ('a1', 'task', 'latency-bound', 't', 'cuda', 'h', 'correct', "
        "0.5, 't1');");
  }
  KnowledgeBase upgraded(path);
  EXPECT_EQ(upgraded.schema_version(), KnowledgeBase::latest_schema_version());
  std::set<std::string> live;
  for (const auto& s : upgraded.states()) live.insert(s.id);
  EXPECT_FALSE(live.count("latency-bound"));
  EXPECT_TRUE(live.count("mine"));  // only seed states retire
  EXPECT_TRUE(live.count("memory-bound/below-bandwidth"));
  // A signature latency-bound used to take (every fraction low) is memory-bound now.
  const Signature layer_norm = {
      {"sol_fraction", 0.017}, {"memory_sol_fraction", 0.017},     {"compute_sol_fraction", 0.0},
      {"ridge_ratio", 0.02},   {"launch_overhead_fraction", 0.01}, {"kernel_count", 1}};
  EXPECT_EQ(classify(upgraded.states(), layer_norm).state_id, "memory-bound");
  EXPECT_EQ(upgraded.reward_stats("cuda", "latency-bound").size(), 1u);
  EXPECT_EQ(upgraded.attempts_for_task("task").size(), 1u);
  const auto shown = upgraded.show("latency-bound");
  ASSERT_TRUE(shown.has_value());
  EXPECT_EQ((*shown)["row"]["retired"], 1);
}

TEST(KnowledgeBase, UpgradesVersionOneInPlaceKeepingData) {
  TempDir dir;
  auto path = dir / "old.sqlite";
  {
    KnowledgeBase v1(path, {.read_only = false, .target_version = 1, .seed = false});
    ASSERT_EQ(v1.schema_version(), 1);
    v1.db().exec(
        "INSERT INTO states (id, name, description, created_at) VALUES ('s', 'S', 'd', 't');"
        "INSERT INTO techniques (id, name, description, backends, implementer, created_at) "
        "VALUES ('t', 'T', 'd', '[\"cuda\"]', 'llm', 't');"
        "INSERT INTO attempts (id, task, state_id, technique_id, backend, hardware, outcome, "
        "reward, created_at) VALUES ('a1', 'task', 's', 't', 'cuda', 'h', 'correct', 0.5, 't1'),"
        "('a2', 'task', 's', 't', 'cuda', 'h', 'correct', 0.25, 't2');");
    EXPECT_THROW(v1.db().scalar_int("SELECT count(*) FROM reward_stats"), Error);
  }
  KnowledgeBase upgraded(path);
  EXPECT_EQ(upgraded.schema_version(), KnowledgeBase::latest_schema_version());
  auto stats = upgraded.reward_stats("cuda", "s");
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].n, 2);
  EXPECT_DOUBLE_EQ(stats[0].mean(), 0.375);
  EXPECT_EQ(upgraded.attempts_for_task("task").size(), 2u);
  EXPECT_GE(upgraded.techniques().size(), 40u);  // the seed arrives with the upgrade
  std::size_t ranked = 0;
  for (const auto& state : upgraded.states()) {
    if (state.id == "s") {
      EXPECT_TRUE(state.try_first.empty());  // a user's state: none given
    }
    ranked += state.try_first.empty() ? 0 : 1;
  }
  EXPECT_GE(ranked, 10u);  // seed states gained their ranked techniques in place
}

TEST(KnowledgeBase, RefusesSchemaNewerThanBinary) {
  TempDir dir;
  auto path = dir / "future.sqlite";
  { KnowledgeBase kb(path); }
  {
    sql::Db raw(path, sql::Db::Mode::read_write);
    raw.exec("PRAGMA user_version = 999");
  }
  try {
    KnowledgeBase kb(path);
    FAIL() << "a newer schema must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("upgrade mblast"), std::string::npos);
  }
}

TEST(KnowledgeBase, CorruptFileIsAClearInputError) {
  TempDir dir;
  auto path = dir / "corrupt.sqlite";
  std::ofstream(path) << std::string(8192, 'x');
  try {
    KnowledgeBase kb(path);
    FAIL() << "a corrupt file must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos);
    EXPECT_FALSE(e.hint().empty());
  }
}

// A region's attempts feed the statistics of its signature, not the whole model's; the correct
// ones that sped it up are found again by its exact key, best first; both survive export and
// import (region_stats is derived by the trigger, like reward_stats).
TEST(KnowledgeBase, RegionAttemptsFeedRegionStatsAndAreFoundByTheirKey) {
  TempDir dir;
  KnowledgeBase kb(dir / "kb.sqlite");
  const auto technique = first_technique(kb, "cuda");
  auto region = [&](double reward, std::int64_t step, const std::string& key) {
    auto row = attempt("resnet", "memory-bound", technique, reward, step);
    row.slot = "region:conv1..relu";
    row.region = "conv2d>batchnorm2d>relu|float32:2^20B";
    row.region_key = key;
    row.computation_key = "c-" + key.substr(0, 1);  // k1 and k2: one computation at two sizes
    return row;
  };
  kb.add_attempt(region(0.2, 1, "k1"));
  kb.add_attempt(region(0.5, 2, "k1"));
  kb.add_attempt(region(-1.0, 3, "k1"));
  kb.add_attempt(region(0.9, 4, "k2"));
  kb.add_attempt(attempt("resnet", "memory-bound", technique, 0.1, 5));  // the whole model's
  const auto model = kb.reward_stats("cuda", "memory-bound");
  ASSERT_EQ(model.size(), 1u);
  EXPECT_EQ(model[0].n, 1);
  const auto stats =
      kb.region_stats("cuda", "memory-bound", "conv2d>batchnorm2d>relu|float32:2^20B");
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].n, 4);
  EXPECT_NEAR(stats[0].mean(), 0.15, 1e-12);
  EXPECT_TRUE(kb.region_stats("cuda", "memory-bound", "relu|float32:2^20B").empty());
  using Match = KnowledgeBase::RegionMatch;
  const auto verified = kb.verified_regions(Match::same_shapes, "k1", "cuda", "NVIDIA H200");
  ASSERT_EQ(verified.size(), 2u);  // the failure is no verified implementation
  EXPECT_DOUBLE_EQ(*verified[0].reward, 0.5);
  EXPECT_EQ(verified[0].region_key, "k1");
  EXPECT_TRUE(kb.verified_regions(Match::same_shapes, "k1", "cuda", "other GPU").empty());
  // By the computation key: both sizes, best first.
  const auto any = kb.verified_regions(Match::any_shapes, "c-k", "cuda", "NVIDIA H200");
  ASSERT_EQ(any.size(), 3u);
  EXPECT_EQ(any[0].region_key, "k2");
  const auto rows = kb.query({.kind = "regions", .region = "batchnorm2d"});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["n"], 4);

  KnowledgeBase copy(dir / "copy.sqlite");
  std::istringstream in(export_text(kb));
  copy.import_jsonl(in);
  EXPECT_EQ(
      copy.region_stats("cuda", "memory-bound", "conv2d>batchnorm2d>relu|float32:2^20B").at(0).n,
      4);
  EXPECT_EQ(copy.verified_regions(Match::same_shapes, "k2", "cuda", "NVIDIA H200").size(), 1u);
  EXPECT_EQ(copy.verified_regions(Match::any_shapes, "c-k", "cuda", "NVIDIA H200").size(), 3u);
}

TEST(KnowledgeBase, AttemptsFeedRewardStatsAndAreIdempotent) {
  TempDir dir;
  KnowledgeBase kb(dir / "kb.sqlite");
  auto technique = first_technique(kb, "cuda");
  auto run_id = kb.add_run({.task = "relu", .backend = "cuda", .hardware = "NVIDIA H200"});
  auto a = attempt("relu", "memory-bound", technique, 0.4, 1);
  a.run_id = run_id;
  a.created_at = "2026-11-29T00:00:00.000Z";
  auto id1 = kb.add_attempt(a);
  auto id2 = kb.add_attempt(a);  // the same attempt recorded twice is one row
  EXPECT_EQ(id1, id2);
  auto b = attempt("relu", "memory-bound", technique, -1.0, 2);
  b.run_id = run_id;
  kb.add_attempt(b);
  auto stats = kb.reward_stats("cuda", "memory-bound");
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].n, 2);
  EXPECT_NEAR(stats[0].mean(), -0.3, 1e-12);
  EXPECT_DOUBLE_EQ(stats[0].best_reward, 0.4);
  EXPECT_EQ(kb.attempts_for_task("relu").size(), 2u);
  EXPECT_TRUE(kb.reward_stats("opencl").empty());

  RunRow finished = *kb.run(run_id);
  finished.status = "finished";
  finished.best_speedup = 1.5;
  finished.finished_at = utc_now();
  kb.update_run(finished);
  EXPECT_EQ(kb.run(run_id)->status, "finished");
}

TEST(KnowledgeBase, UnknownReferencesAreRejectedAndRolledBack) {
  TempDir dir;
  KnowledgeBase kb(dir / "kb.sqlite");
  auto bad = attempt("relu", "no-such-state", first_technique(kb, "cuda"), 0.1, 1);
  EXPECT_THROW(kb.add_attempt(bad), Error);
  EXPECT_TRUE(kb.attempts_for_task("relu").empty());
  // A failing body rolls back everything written in the same transaction.
  EXPECT_THROW(kb.transaction([&] {
    kb.add_attempt(attempt("relu", "memory-bound", first_technique(kb, "cuda"), 0.1, 2));
    kb.add_attempt(bad);
  }),
               Error);
  EXPECT_TRUE(kb.attempts_for_task("relu").empty());
}

TEST(KnowledgeBase, ClaimsCountTheirEvidence) {
  TempDir dir;
  KnowledgeBase kb(dir / "kb.sqlite");
  auto technique = first_technique(kb, "cuda");
  auto claim = kb.add_claim({.text = "Tiling pays when rows are reused.",
                             .state_id = "memory-bound",
                             .technique_id = technique,
                             .backend = "cuda"});
  EXPECT_EQ(claim, kb.add_claim({.text = "Tiling pays when rows are reused.",
                                 .state_id = "memory-bound",
                                 .technique_id = technique,
                                 .backend = "cuda"}));
  auto a = kb.add_attempt(attempt("mm", "memory-bound", technique, 0.3, 1));
  kb.add_evidence(claim, a, "support", "1.35x on mm");
  kb.add_evidence(claim, a, "support", "1.35x on mm");  // duplicate evidence counts once
  kb.add_evidence(claim, std::nullopt, "refute", "slower on small sizes");
  auto claims = kb.claims("memory-bound", technique);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].support, 1);
  EXPECT_EQ(claims[0].refute, 1);
  EXPECT_THROW(kb.add_evidence(claim, a, "maybe", ""), Error);
  kb.deprecate_claim(claim);
  EXPECT_TRUE(kb.claims("memory-bound", technique).empty());
}

TEST(KnowledgeBase, TopImplementationsAreOrderedBySpeedup) {
  TempDir dir;
  KnowledgeBase kb(dir / "kb.sqlite");
  for (double speedup : {1.2, 3.0, 2.0}) {
    kb.add_implementation({.task = "relu",
                           .task_signature = "sig",
                           .backend = "cuda",
                           .hardware = "h",
                           .language = "cuda",
                           .source = "// " + std::to_string(speedup),
                           .speedup = speedup});
  }
  auto top = kb.top_implementations("sig", "cuda", 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_DOUBLE_EQ(*top[0].speedup, 3.0);
  EXPECT_DOUBLE_EQ(*top[1].speedup, 2.0);
}

TEST(KnowledgeBase, QueryFiltersAndShowFindsByPrefix) {
  TempDir dir;
  KnowledgeBase kb(dir / "kb.sqlite");
  auto cuda = kb.query({.kind = "techniques", .backend = "cuda", .limit = 500});
  ASSERT_FALSE(cuda.empty());
  for (const auto& row : cuda) {
    auto backends = row["backends"].get<std::vector<std::string>>();
    EXPECT_NE(std::find(backends.begin(), backends.end(), "cuda"), backends.end());
  }
  auto memory = kb.query({.kind = "states", .state = "memory-bound", .limit = 500});
  ASSERT_GE(memory.size(), 2u);
  for (const auto& row : memory) {
    EXPECT_EQ(row["id"].get<std::string>().rfind("memory-bound", 0), 0u);
  }
  EXPECT_EQ(kb.query({.kind = "techniques", .limit = 3}).size(), 3u);
  EXPECT_THROW(kb.query({.kind = "nonsense"}), Error);

  auto id = kb.add_attempt(attempt("relu", "memory-bound", first_technique(kb, "cuda"), 0.2, 1));
  auto shown = kb.show(id.substr(0, 10));
  ASSERT_TRUE(shown.has_value());
  EXPECT_EQ((*shown)["kind"], "attempt");
  EXPECT_EQ((*shown)["row"]["id"], id);
  EXPECT_EQ((*kb.show("memory-bound"))["kind"], "state");
  EXPECT_FALSE(kb.show("ffffffffffff").has_value());
  EXPECT_EQ(kb.query({.kind = "attempts", .task = "relu"}).size(), 1u);
  EXPECT_TRUE(kb.query({.kind = "attempts", .task = "other"}).empty());
}

// Two KBs with overlapping content, as two machines would write them.
void fill(KnowledgeBase& kb, const std::string& machine, const AttemptRow& shared) {
  auto technique = first_technique(kb, "cuda");
  auto run = kb.add_run({.task = "relu", .backend = "cuda", .hardware = machine});
  for (int step = 0; step < 5; ++step) {
    auto a = attempt("relu-" + machine, "memory-bound", technique, 0.1 * step, step);
    a.run_id = run;
    kb.add_attempt(a);
  }
  kb.add_attempt(shared);
  auto claim = kb.add_claim({.text = "shared claim",
                             .state_id = "memory-bound",
                             .technique_id = technique,
                             .backend = "cuda"});
  kb.add_evidence(claim, std::nullopt, "support", "seen on " + machine);
  kb.add_evidence(claim, std::nullopt, "support", "seen everywhere");
}

TEST(KnowledgeBase, MergeIsIdempotentAndCountsEvidenceOnce) {
  TempDir dir;
  AttemptRow shared;
  {
    KnowledgeBase a(dir / "a.sqlite");
    shared = attempt("shared", "memory-bound", first_technique(a, "cuda"), 0.7, 9);
    shared.created_at = "2026-11-01T00:00:00.000Z";
    fill(a, "A", shared);
    KnowledgeBase b(dir / "b.sqlite");
    fill(b, "B", shared);
  }
  KnowledgeBase out(dir / "out.sqlite");
  auto first_a = out.merge_from(dir / "a.sqlite");
  auto first_b = out.merge_from(dir / "b.sqlite");
  EXPECT_GT(first_a.inserted, 0);
  EXPECT_GT(first_b.inserted, 0);
  auto attempts = out.db().scalar_int("SELECT count(*) FROM attempts");
  EXPECT_EQ(attempts, 11);  // 5 + 5 + the shared one once
  auto claims = out.claims("memory-bound", "");
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].support, 3);  // "seen on A", "seen on B", "seen everywhere"
  auto stats = out.reward_stats("cuda", "memory-bound");
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].n, 11);

  auto before = export_text(out);
  EXPECT_EQ(out.merge_from(dir / "a.sqlite").inserted, 0);
  EXPECT_EQ(out.merge_from(dir / "b.sqlite").inserted, 0);
  EXPECT_EQ(export_text(out), before);
  EXPECT_EQ(out.reward_stats("cuda", "memory-bound")[0].n, 11);
  EXPECT_THROW(out.merge_from(dir / "out.sqlite"), Error);
  EXPECT_EQ(out.integrity_check(), "ok");
}

// Two machines' KBs merged decide as one KB that saw both machines' runs: the selector reads the
// same statistics, per (state, technique, hardware), and picks the same arms.
TEST(KnowledgeBase, AMergedKbDecidesAsOneThatSawBothRuns) {
  TempDir dir;
  std::vector<AttemptRow> on_a, on_b;
  {
    KnowledgeBase probe(dir / "probe.sqlite");
    const auto techniques = probe.techniques("cuda");
    for (std::int64_t i = 0; i < 12; ++i) {
      auto row = attempt("task" + std::to_string(i % 3), i % 2 ? "memory-bound" : "compute-bound",
                         techniques.at(static_cast<std::size_t>(i % 4)).id,
                         0.1 * static_cast<double>(i % 5) - 0.15, i);
      row.created_at = "2026-11-01T00:00:" + std::to_string(10 + i) + ".000Z";
      row.hardware = i % 3 ? "NVIDIA H200" : "cpu: AMD EPYC";
      (i < 7 ? on_a : on_b).push_back(row);
    }
  }
  {
    KnowledgeBase a(dir / "a.sqlite"), b(dir / "b.sqlite"), both(dir / "both.sqlite");
    for (const auto& row : on_a) a.add_attempt(row);
    for (const auto& row : on_b) b.add_attempt(row);
    for (const auto& row : on_a) both.add_attempt(row);
    for (const auto& row : on_b) both.add_attempt(row);
  }
  KnowledgeBase merged(dir / "merged.sqlite");
  merged.merge_from(dir / "a.sqlite");
  merged.merge_from(dir / "b.sqlite");
  KnowledgeBase both(dir / "both.sqlite");
  auto rows = [](const std::vector<RewardStat>& stats) {
    std::vector<std::string> out;
    for (const auto& s : stats) {
      out.push_back(s.state_id + " " + s.technique_id + " " + s.hardware + " " +
                    std::to_string(s.n) + " " + std::to_string(s.sum_reward));
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(rows(merged.reward_stats("cuda")), rows(both.reward_stats("cuda")));
  EXPECT_EQ(merged.query({.kind = "rewards"}), both.query({.kind = "rewards"}));
  const auto techniques = both.techniques("cuda");
  for (const std::string state : {"memory-bound", "compute-bound"}) {
    for (const std::uint64_t seed : {1u, 2u, 3u}) {
      const auto from_merged = select_technique(techniques, merged.reward_stats("cuda", state),
                                                state, "cuda", "NVIDIA H200", {}, seed);
      const auto from_both = select_technique(techniques, both.reward_stats("cuda", state), state,
                                              "cuda", "NVIDIA H200", {}, seed);
      EXPECT_EQ(from_merged.technique_id, from_both.technique_id) << state << " " << seed;
      ASSERT_EQ(from_merged.arms.size(), from_both.arms.size());
      for (std::size_t i = 0; i < from_both.arms.size(); ++i) {
        EXPECT_DOUBLE_EQ(from_merged.arms[i].score, from_both.arms[i].score);
      }
    }
  }
}

TEST(KnowledgeBase, MergeUpgradesAnOldSourceWithoutTouchingIt) {
  TempDir dir;
  { KnowledgeBase v1(dir / "v1.sqlite", {.read_only = false, .target_version = 1, .seed = false}); }
  KnowledgeBase out(dir / "out.sqlite");
  out.merge_from(dir / "v1.sqlite");
  sql::Db raw(dir / "v1.sqlite", sql::Db::Mode::read_only);
  EXPECT_EQ(raw.scalar_int("PRAGMA user_version"), 1);
}

TEST(KnowledgeBase, AMergeIsAllOrNothing) {
  TempDir dir;
  {
    KnowledgeBase a(dir / "a.sqlite");
    fill(a, "A", attempt("one", "memory-bound", first_technique(a, "cuda"), 0.7, 9));
  }
  {
    std::ofstream corrupt(dir / "corrupt.sqlite");
    corrupt << "this is not a database, but longer than a header would be........................"
               "..................................................................\n";
  }
  {
    KnowledgeBase newer(dir / "newer.sqlite");
    newer.db().exec("PRAGMA user_version = 999");
  }
  // A corrupt or newer input, after a good one: no output appears at all.
  for (const char* bad : {"corrupt.sqlite", "newer.sqlite"}) {
    EXPECT_THROW(merge_knowledge_bases(dir / "fresh.sqlite", {dir / "a.sqlite", dir / bad}), Error)
        << bad;
    EXPECT_FALSE(std::filesystem::exists(dir / "fresh.sqlite")) << bad;
  }
  // Into an existing output: unchanged by the failed merge, and no staged file left beside it.
  merge_knowledge_bases(dir / "out.sqlite", {dir / "a.sqlite"});
  std::string before;
  {
    KnowledgeBase out(dir / "out.sqlite");
    before = export_text(out);
  }
  {
    KnowledgeBase b(dir / "b.sqlite");
    fill(b, "B", attempt("two", "memory-bound", first_technique(b, "cuda"), 0.5, 9));
  }
  EXPECT_THROW(
      merge_knowledge_bases(dir / "out.sqlite", {dir / "b.sqlite", dir / "corrupt.sqlite"}), Error);
  {
    KnowledgeBase out(dir / "out.sqlite");
    EXPECT_EQ(export_text(out), before);
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".merging-"), std::string::npos)
        << entry.path();
  }
  EXPECT_THROW(merge_knowledge_bases(dir / "out.sqlite", {dir / "out.sqlite"}), Error);
  // All inputs good: everything goes in.
  const auto results = merge_knowledge_bases(dir / "out.sqlite", {dir / "b.sqlite"});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_GT(results[0].inserted, 0);
  KnowledgeBase out(dir / "out.sqlite");
  EXPECT_NE(export_text(out), before);
  EXPECT_EQ(out.integrity_check(), "ok");
}

TEST(KnowledgeBase, ExportImportRoundTripIsExact) {
  TempDir dir;
  KnowledgeBase a(dir / "a.sqlite");
  AttemptRow shared = attempt("shared", "memory-bound", first_technique(a, "cuda"), 0.7, 9);
  fill(a, "A", shared);
  a.add_implementation({.task = "relu",
                        .task_signature = "sig",
                        .backend = "cuda",
                        .hardware = "h",
                        .language = "cuda",
                        .source = "__global__ void k(){}",
                        .speedup = 2.0});
  auto exported = export_text(a);

  KnowledgeBase b(dir / "b.sqlite");
  std::istringstream in(exported);
  auto result = b.import_jsonl(in);
  EXPECT_GT(result.read, 0);
  EXPECT_EQ(export_text(b), exported);
  EXPECT_EQ(b.claims("memory-bound", "")[0].support, 2);
  EXPECT_EQ(b.reward_stats("cuda")[0].n, a.reward_stats("cuda")[0].n);

  std::istringstream again(exported);
  EXPECT_EQ(b.import_jsonl(again).inserted, 0);

  std::istringstream broken("{\"table\": \"attempts\", \"row\": {\"id\": \"x\"}}\nnot json\n");
  auto attempts_before = b.db().scalar_int("SELECT count(*) FROM attempts");
  EXPECT_THROW(b.import_jsonl(broken), Error);
  EXPECT_EQ(b.db().scalar_int("SELECT count(*) FROM attempts"), attempts_before);

  // A row without a required field is named by its line, table and field, not by SQLite's text.
  std::istringstream missing("\n{\"table\": \"attempts\", \"row\": {\"id\": \"x\"}}\n");
  const Error e = testing::error_of([&] { b.import_jsonl(missing); });
  EXPECT_EQ(e.code(), ExitCode::bad_input);
  EXPECT_NE(std::string(e.what()).find("line 2 of the import: the attempts row has no '"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(std::string(e.what()).find("constraint"), std::string::npos) << e.what();
}

TEST(KnowledgeBase, TwoProcessesWritingAtOnceLoseNothing) {
  TempDir dir;
  auto path = dir / "shared.sqlite";
  std::string technique;
  {
    KnowledgeBase kb(path);
    technique = first_technique(kb, "cuda");
  }
  constexpr int kPerProcess = 300;
  std::vector<pid_t> children;
  for (int writer = 0; writer < 2; ++writer) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        KnowledgeBase kb(path);
        for (int i = 0; i < kPerProcess; ++i) {
          kb.add_attempt(
              attempt("task-" + std::to_string(writer), "memory-bound", technique, 0.01 * i, i));
        }
      } catch (...) {
        status = 1;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  KnowledgeBase kb(path);
  EXPECT_EQ(kb.db().scalar_int("SELECT count(*) FROM attempts"), 2 * kPerProcess);
  EXPECT_EQ(kb.reward_stats("cuda", "memory-bound").at(0).n, 2 * kPerProcess);
  EXPECT_EQ(kb.integrity_check(), "ok");
}

}  // namespace
}  // namespace mblast
