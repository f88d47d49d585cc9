#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "mblast/error.hpp"
#include "mblast/kb.hpp"
#include "mblast/policy.hpp"
#include "test_support.hpp"

namespace mblast {
namespace {

using testing::TempDir;

std::vector<StateRow> seed_states() {
  TempDir dir;
  KnowledgeBase kb(dir / "kb.sqlite");
  return kb.states();
}

const StateRow& find_state(const std::vector<StateRow>& states, const std::string& id) {
  for (const auto& s : states) {
    if (s.id == id) return s;
  }
  throw std::runtime_error("no state " + id);
}

// A signature that satisfies every condition on the path from the root to `id` and says nothing
// about any other metric.
Signature satisfying(const std::vector<StateRow>& states, const std::string& id) {
  struct Bounds {
    double lower = -std::numeric_limits<double>::infinity();
    double upper = std::numeric_limits<double>::infinity();
    bool lower_strict = false, upper_strict = false;
    std::optional<double> exact;
  };
  std::map<std::string, Bounds> bounds;
  for (const StateRow* s = &find_state(states, id); s;) {
    for (const auto& c : s->conditions) {
      auto& b = bounds[c["metric"].get<std::string>()];
      const double v = c["value"].get<double>();
      const std::string op = c["op"];
      if (op == ">" || op == ">=") {
        if (v >= b.lower) b.lower_strict = op == ">", b.lower = v;
      } else if (op == "<" || op == "<=") {
        if (v <= b.upper) b.upper_strict = op == "<", b.upper = v;
      } else {
        b.exact = v;
      }
    }
    s = s->parent_id ? &find_state(states, *s->parent_id) : nullptr;
  }
  Signature signature;
  for (const auto& [metric, b] : bounds) {
    if (b.exact) {
      signature[metric] = *b.exact;
    } else if (std::isfinite(b.lower) && std::isfinite(b.upper)) {
      signature[metric] = (b.lower + b.upper) / 2;
    } else if (std::isfinite(b.lower)) {
      signature[metric] = b.lower_strict ? b.lower + 1 : b.lower;
    } else {
      signature[metric] = b.upper_strict ? b.upper - 0.01 : b.upper;
    }
  }
  return signature;
}

TEST(StateClassifier, EverySeedStateIsChosenForASignatureThatSatisfiesIt) {
  const auto states = seed_states();
  ASSERT_GE(states.size(), 15u);
  for (const auto& state : states) {
    const Signature signature = satisfying(states, state.id);
    const Classification c = classify(states, signature);
    EXPECT_EQ(c.state_id, state.id) << "signature built for " << state.id << ": " << c.explain();
    for (const auto& e : c.evidence) EXPECT_TRUE(e.holds) << e.metric;
  }
}

TEST(StateClassifier, FallsBackToUnclassifiedAndExplainsItsEvidence) {
  const auto states = seed_states();
  EXPECT_EQ(classify(states, {}).state_id, "unclassified");

  // An eager KernelBench level-2 chain: many short kernels, the GPU idle half of the time.
  const Signature chain = {{"sol_fraction", 0.12},        {"launch_overhead_fraction", 0.47},
                           {"kernel_count", 12},          {"mean_kernel_us", 6.5},
                           {"arithmetic_intensity", 3.0}, {"total_ms", 0.09}};
  const Classification c = classify(states, chain);
  EXPECT_EQ(c.state_id, "launch-bound/many-small-kernels");
  EXPECT_EQ(c.depth, 1);
  EXPECT_NE(c.explain().find("launch_overhead_fraction = 0.47 (>= 0.3)"), std::string::npos)
      << c.explain();
}

TEST(StateClassifier, TheRootDecidesFirstThenTheDeepestStateUnderIt) {
  auto rule = [](const char* metric, const char* op, double value) {
    return nlohmann::json{{"metric", metric}, {"op", op}, {"value", value}};
  };
  std::vector<StateRow> states = {
      {.id = "a", .name = "A", .description = "", .conditions = {rule("x", ">", 1)}},
      {.id = "b", .name = "B", .description = "", .conditions = {rule("x", ">", 0)}},
      {.id = "b/deep",
       .parent_id = "b",
       .name = "B deep",
       .description = "",
       .conditions = {rule("y", "<", 5)}},
      {.id = "c",
       .name = "C",
       .description = "",
       .conditions = {rule("x", ">", 0), rule("z", "==", 1)}},
  };
  EXPECT_EQ(classify(states, {{"x", 2}}).state_id, "a");                   // a before b: order
  EXPECT_EQ(classify(states, {{"x", 2}, {"z", 1}}).state_id, "c");         // more evidence
  EXPECT_EQ(classify(states, {{"x", 0.5}, {"y", 1}}).state_id, "b/deep");  // depth under b
  EXPECT_EQ(classify(states, {{"x", 0.5}, {"y", 9}}).state_id, "b");       // child fails
  // b/deep holds too, but the root a decided first: depth never changes the kind.
  EXPECT_EQ(classify(states, {{"x", 2}, {"y", 1}}).state_id, "a");
  EXPECT_THROW(classify(states, {{"x", -1}}), Error);  // nothing matches
}

TechniqueRow technique(const std::string& id, const std::string& implementer = "llm",
                       std::vector<std::string> states = {}) {
  TechniqueRow t;
  t.id = id;
  t.name = id;
  t.backends = {"cuda"};
  t.implementer = implementer;
  t.states = std::move(states);
  return t;
}

RewardStat stat(const std::string& technique, const std::string& hardware, std::int64_t n,
                double mean, double best) {
  return {"memory-bound",
          technique,
          "cuda",
          hardware,
          n,
          mean * static_cast<double>(n),
          mean * mean * static_cast<double>(n),
          best};
}

const std::string kHw = "NVIDIA H200";

TEST(TechniqueSelector, ExploresAnArmNothingIsKnownOfOverArmsThatGainLittle) {
  std::vector<TechniqueRow> arms = {technique("a"), technique("b"), technique("c")};
  std::vector<RewardStat> stats = {stat("a", kHw, 5, 0.1, 0.2), stat("b", kHw, 5, 0.05, 0.2)};
  auto selection = select_technique(arms, stats, "memory-bound", "cuda", kHw, {}, 1);
  EXPECT_EQ(selection.technique_id, "c");
  // The neutral prior: no gain assumed, with the seed prior's weight; the bonus is finite.
  EXPECT_DOUBLE_EQ(selection.arms.front().mean, 0.0);
  EXPECT_DOUBLE_EQ(selection.arms.front().n_prior, 0.5);
  EXPECT_FALSE(std::isinf(selection.arms.front().bonus));
}

TEST(TechniqueSelector, ALaterTaskExploitsWhatPaidOffInTheStateBeforeTheUntriedArms) {
  // Two earlier tasks in this state: the CUDA graph gave 2.9x, reduce-overhead 3.0x (rewards are
  // log speedups). A third task in the same state starts with one of them, not with the
  // ancestor's third choice nor with the arms nothing is known of, whatever the seed.
  std::vector<TechniqueRow> arms = {technique("graph", "builtin"), technique("ro", "builtin"),
                                    technique("compile", "builtin")};
  for (int i = 0; i < 8; ++i) arms.push_back(technique("other" + std::to_string(i), "builtin"));
  SelectorConfig config;
  config.try_first = {"graph", "ro", "compile"};
  const std::vector<RewardStat> stats = {stat("graph", kHw, 1, std::log(2.9), std::log(2.9)),
                                         stat("ro", kHw, 1, std::log(3.0), std::log(3.0))};
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    auto selection = select_technique(arms, stats, "memory-bound", "cuda", kHw, config, seed);
    EXPECT_TRUE(selection.technique_id == "graph" || selection.technique_id == "ro")
        << selection.technique_id;
  }
  // Had they gained little, the untried ranked arm would come next.
  const std::vector<RewardStat> small = {stat("graph", kHw, 1, 0.02, 0.02),
                                         stat("ro", kHw, 1, 0.01, 0.01)};
  EXPECT_EQ(select_technique(arms, small, "memory-bound", "cuda", kHw, config, 1).technique_id,
            "compile");
}

TEST(TechniqueSelector, ExploitsTheBestMeanWhenCountsAreEqual) {
  std::vector<TechniqueRow> arms = {technique("a"), technique("b")};
  std::vector<RewardStat> stats = {stat("a", kHw, 10, 0.05, 0.2), stat("b", kHw, 10, 0.4, 0.6)};
  auto selection = select_technique(arms, stats, "memory-bound", "cuda", kHw, {}, 1);
  EXPECT_EQ(selection.technique_id, "b");
  // With many more pulls, a little-tried arm's exploration bonus wins over a slightly better
  // mean: this is what keeps the search from locking in early.
  stats = {stat("a", kHw, 2, 0.3, 0.5), stat("b", kHw, 200, 0.35, 0.6)};
  EXPECT_EQ(select_technique(arms, stats, "memory-bound", "cuda", kHw, {}, 1).technique_id, "a");
}

TEST(TechniqueSelector, StatisticsFromOtherHardwareArePriors) {
  std::vector<TechniqueRow> arms = {technique("a"), technique("b")};
  // Locally both were tried four times with the same result; elsewhere "b" paid off many times.
  std::vector<RewardStat> stats = {stat("a", kHw, 4, 0.1, 0.1), stat("b", kHw, 4, 0.1, 0.1),
                                   stat("b", "NVIDIA H100", 20, 0.6, 0.9)};
  auto with_transfer = select_technique(arms, stats, "memory-bound", "cuda", kHw, {}, 1);
  EXPECT_EQ(with_transfer.technique_id, "b");
  EXPECT_DOUBLE_EQ(with_transfer.arms.front().n_prior, 10.0);  // 20 discounted by 0.5
  SelectorConfig no_transfer;
  no_transfer.other_hardware_weight = 0.0;
  auto without = select_technique(arms, stats, "memory-bound", "cuda", kHw, no_transfer, 1);
  EXPECT_DOUBLE_EQ(without.arms[0].score, without.arms[1].score);
}

TEST(TechniqueSelector, SeedListingIsASmallPrior) {
  std::vector<TechniqueRow> arms = {technique("listed", "llm", {"memory-bound"}),
                                    technique("other")};
  std::vector<RewardStat> stats = {stat("other", kHw, 1, 0.0, 0.0)};
  auto selection = select_technique(arms, stats, "memory-bound", "cuda", kHw, {}, 1);
  const auto& listed = *std::find_if(selection.arms.begin(), selection.arms.end(),
                                     [](const ArmScore& a) { return a.technique_id == "listed"; });
  EXPECT_DOUBLE_EQ(listed.n_prior, 0.5);
  EXPECT_DOUBLE_EQ(listed.mean, 0.05);
  EXPECT_EQ(selection.technique_id, "listed");
}

TEST(TechniqueSelector, PriorsOrderTheUntriedArms) {
  // Nothing tried here yet: the arm the KB lists for the state comes first, then arms nothing is
  // known of, and an arm that failed on other hardware last, whatever the shuffle's seed.
  std::vector<TechniqueRow> arms = {technique("plain"),
                                    technique("listed", "llm", {"memory-bound"}),
                                    technique("failed-elsewhere")};
  std::vector<RewardStat> stats = {stat("failed-elsewhere", "NVIDIA H100", 4, -1.0, -1.0)};
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    auto selection = select_technique(arms, stats, "memory-bound", "cuda", kHw, {}, seed);
    ASSERT_EQ(selection.arms.size(), 3u);
    EXPECT_EQ(selection.arms[0].technique_id, "listed");
    EXPECT_EQ(selection.arms[1].technique_id, "plain");
    EXPECT_EQ(selection.arms[2].technique_id, "failed-elsewhere");
    for (const auto& arm : selection.arms) EXPECT_FALSE(std::isinf(arm.bonus)) << arm.technique_id;
  }
}

TEST(TechniqueSelector, TryFirstRanksTheUntriedArms) {
  // The state's ranked list goes before the flat listing and before arms without a prior, in its
  // own order, whatever the shuffle's seed; once tried, an arm's own results decide.
  std::vector<TechniqueRow> arms = {technique("plain"),
                                    technique("listed", "llm", {"memory-bound"}),
                                    technique("second"), technique("first")};
  SelectorConfig config;
  config.try_first = {"first", "second", "not-an-arm"};
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    auto selection = select_technique(arms, {}, "memory-bound", "cuda", kHw, config, seed);
    ASSERT_EQ(selection.arms.size(), 4u);
    EXPECT_EQ(selection.arms[0].technique_id, "first");
    EXPECT_EQ(selection.arms[1].technique_id, "second");
    EXPECT_EQ(selection.arms[2].technique_id, "listed");
    EXPECT_EQ(selection.arms[3].technique_id, "plain");
  }
  auto selection = select_technique(arms, {stat("first", kHw, 1, -1.0, -1.0)}, "memory-bound",
                                    "cuda", kHw, config, 1);
  EXPECT_EQ(selection.technique_id, "second");
  EXPECT_EQ(selection.arms.back().technique_id, "first");
}

TEST(TechniqueSelector, TryFirstFollowsTheStateThenItsAncestors) {
  StateRow root{.id = "launch-bound", .try_first = {"graph", "compile"}};
  StateRow child{.id = "launch-bound/many-small-kernels",
                 .parent_id = "launch-bound",
                 .try_first = {"compile-graphs", "graph"}};
  StateRow other{.id = "memory-bound", .try_first = {"fuse"}};
  const std::vector<StateRow> states = {root, child, other};
  EXPECT_EQ(try_first_of(states, "launch-bound/many-small-kernels"),
            (std::vector<std::string>{"compile-graphs", "graph", "compile"}));
  EXPECT_EQ(try_first_of(states, "memory-bound"), std::vector<std::string>{"fuse"});
  EXPECT_TRUE(try_first_of(states, "unknown").empty());
}

TEST(TechniqueSelector, ConstraintsRemoveArms) {
  TechniqueRow deprecated = technique("old");
  deprecated.deprecated = true;
  TechniqueRow tf32 = technique("tf32", "builtin");
  tf32.builtin = BuiltinSpec::from_json({{"transform", "tf32"}, {"requires", {"allow_tf32"}}});
  std::vector<TechniqueRow> arms = {technique("broken"), deprecated, tf32, technique("llm"),
                                    technique("graph", "builtin")};
  std::vector<RewardStat> stats = {stat("broken", kHw, 3, -1.0, -1.0)};
  SelectorConfig config;
  config.llm_available = false;
  auto selection = select_technique(arms, stats, "memory-bound", "cuda", kHw, config, 1);
  EXPECT_EQ(selection.technique_id, "graph");
  for (const auto& arm : selection.arms) {
    EXPECT_EQ(arm.removed, arm.technique_id != "graph") << arm.technique_id;
  }
  config.allowed_requirements = {"allow_tf32"};
  stats.push_back(stat("graph", kHw, 4, 0.0, 0.1));
  EXPECT_EQ(select_technique(arms, stats, "memory-bound", "cuda", kHw, config, 1).technique_id,
            "tf32");
  // A success among the failures keeps the arm.
  stats[0] = stat("broken", kHw, 3, -0.5, 0.5);
  config.llm_available = true;
  auto kept = select_technique(arms, stats, "memory-bound", "cuda", kHw, config, 1);
  for (const auto& arm : kept.arms) {
    if (arm.technique_id == "broken") {
      EXPECT_FALSE(arm.removed);
    }
  }
}

TEST(TechniqueSelector, DeterministicForASeed) {
  std::vector<TechniqueRow> arms;
  for (int i = 0; i < 12; ++i) arms.push_back(technique("t" + std::to_string(i)));
  std::set<std::string> firsts;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    auto one = select_technique(arms, {}, "memory-bound", "cuda", kHw, {}, seed);
    auto two = select_technique(arms, {}, "memory-bound", "cuda", kHw, {}, seed);
    EXPECT_EQ(one.technique_id, two.technique_id);
    firsts.insert(one.technique_id);
  }
  EXPECT_GT(firsts.size(), 3u);  // equal arms are not always taken in the same order
}

TEST(OperatorSelector, PriorityFollowsTheDocumentedFormula) {
  OperatorSelectorConfig config;
  Slot slot{.id = "conv", .time_share = 0.6, .steps_without_gain = 2, .visits = 3};
  const double expected = 0.6 * std::pow(0.7, 2) + 0.1 * std::sqrt(std::log(10.0 + 1) / 4.0);
  EXPECT_DOUBLE_EQ(slot_priority(slot, 10, config), expected);
}

TEST(OperatorSelector, StallsMoveWorkToTheNextSlot) {
  OperatorSelectorConfig config;
  std::vector<Slot> slots = {{.id = "gemm", .time_share = 0.7, .visits = 1},
                             {.id = "softmax", .time_share = 0.3, .visits = 1}};
  EXPECT_EQ(select_slot(slots, config), 0u);
  slots[0].steps_without_gain = 3;  // 0.7 * 0.343 = 0.24 < 0.3
  EXPECT_EQ(select_slot(slots, config), 1u);
  // A never-visited slot gets the larger exploration bonus.
  std::vector<Slot> even = {{.id = "a", .time_share = 0.5, .visits = 5},
                            {.id = "b", .time_share = 0.5, .visits = 0}};
  EXPECT_EQ(select_slot(even, config), 1u);
  EXPECT_THROW(select_slot({}, config), Error);
}

TEST(Slots, SingleOpProblemHasOneModelSlot) {
  const nlohmann::json signature = {{"regions",
                                     {{{"name", "aten::_softmax"}, {"share", 0.97}},
                                      {{"name", "aten::empty"}, {"share", 0.03}}}}};
  const auto slots = slots_from_signature(ProfileSignature::from_json(signature), true);
  ASSERT_EQ(slots.size(), 1u);
  EXPECT_EQ(slots[0].id, "model");
  EXPECT_DOUBLE_EQ(slots[0].time_share, 1.0);
}

TEST(Slots, MultiOpProblemGetsOpSlotsLargestFirstAndAModelSlot) {
  const nlohmann::json signature = {{"ops", {{{"name", "aten::clamp_min"}, {"share", 0.9}}}},
                                    {"regions",
                                     {{{"name", "aten::add"}, {"share", 0.1}},
                                      {{"name", "aten::conv2d"}, {"share", 0.7}},
                                      {{"name", "aten::relu"}, {"share", 0.17}},
                                      {{"name", "aten::view"}, {"share", 0.03}}}}};
  const auto slots = slots_from_signature(ProfileSignature::from_json(signature), true);
  ASSERT_EQ(slots.size(), 4u);  // regions win over ops; view is under min_share
  EXPECT_EQ(slots[0].id, "model");
  EXPECT_DOUBLE_EQ(slots[0].time_share, 0.3);  // 1 - the largest op's share
  EXPECT_EQ(slots[1].id, "aten::conv2d");
  EXPECT_EQ(slots[2].id, "aten::relu");
  EXPECT_EQ(slots[3].id, "aten::add");
  EXPECT_EQ(select_slot(slots, OperatorSelectorConfig{}), 1u);  // the conv goes first
  // Without per-op work (no LLM: only whole-model built-ins), the model alone.
  EXPECT_EQ(slots_from_signature(ProfileSignature::from_json(signature), false).size(), 1u);
  // The model slot keeps a floor when one op dominates.
  const nlohmann::json dominated = {
      {"regions",
       {{{"name", "aten::mm"}, {"share", 0.95}}, {{"name", "aten::add"}, {"share", 0.05}}}}};
  EXPECT_DOUBLE_EQ(slots_from_signature(ProfileSignature::from_json(dominated), true)[0].time_share,
                   0.2);
}

TEST(Reward, CorrectnessGatedLogSpeedupOverTheCurrentBest) {
  EXPECT_DOUBLE_EQ(step_reward(true, 2.0, 1.0), std::log(2.0));
  EXPECT_DOUBLE_EQ(step_reward(true, 1.5, 3.0), std::log(0.5));  // slower than the best: < 0
  EXPECT_DOUBLE_EQ(step_reward(false, 5.0, 1.0), -1.0);          // wrong answers earn nothing
  EXPECT_DOUBLE_EQ(step_reward(true, std::nullopt, 1.0, -2.0), -2.0);
  EXPECT_DOUBLE_EQ(step_reward(true, 0.0, 1.0), -1.0);
}

// The whole model 1.2x faster with a region of 60 % of its time: the region went from 0.6 to
// 0.6 - (1 - 1/1.2) of the time.
TEST(Reward, ARegionStepEarnsTheRegionsOwnImpliedSpeedup) {
  EXPECT_NEAR(region_reward(true, 1.2, 1.0, 0.6), std::log(0.6 / (0.6 - (1 - 1 / 1.2))), 1e-12);
  // The same model gain on a smaller region is a larger gain of the region.
  EXPECT_GT(region_reward(true, 1.2, 1.0, 0.3), region_reward(true, 1.2, 1.0, 0.6));
  // Built on a candidate at 2x, the step is judged against that candidate's time.
  EXPECT_NEAR(region_reward(true, 2.4, 2.0, 0.6), region_reward(true, 1.2, 1.0, 0.6), 1e-12);
  // More gain than the region's whole time (noise on a small share): capped; slower: bounded.
  EXPECT_DOUBLE_EQ(region_reward(true, 2.0, 1.0, 0.1), std::log(16.0));
  EXPECT_DOUBLE_EQ(region_reward(true, 0.25, 1.0, 0.1), std::log(1.0 / 16.0));
  EXPECT_DOUBLE_EQ(region_reward(false, 1.5, 1.0, 0.6), -1.0);
  EXPECT_DOUBLE_EQ(region_reward(true, 1.5, 1.0, 0.0), std::log(1.5));  // no share: the step's
}

TEST(ProfileSignatures, NumbersAreMetricsListsAreTimeSharesAndTheJsonComesBackAsItCame) {
  const nlohmann::json raw = {{"kernel_count", 3},
                              {"ops", {{{"name", "aten::mm"}, {"share", 0.75}}, {{"share", 0.25}}}},
                              {"kernels", "not a list"},
                              {"name", "x"}};
  const auto signature = ProfileSignature::from_json(raw);
  ASSERT_EQ(signature.metrics().size(), 1u);
  EXPECT_EQ(signature.metric("kernel_count"), 3.0);
  EXPECT_FALSE(signature.metric("sol_fraction").has_value());
  ASSERT_EQ(signature.ops().size(), 1u);  // an entry without a name is no time share
  EXPECT_EQ(signature.ops()[0].name, "aten::mm");
  EXPECT_DOUBLE_EQ(signature.ops()[0].share, 0.75);
  EXPECT_TRUE(signature.kernels().empty());
  EXPECT_EQ(signature.to_json(), raw);
  const auto none = ProfileSignature::from_json(nullptr);
  EXPECT_TRUE(none.metrics().empty() && none.ops().empty() && none.regions().empty());
  EXPECT_FALSE(signature.lists_regions() || none.lists_regions());
}

TEST(Slots, AnEmptyRegionListMeansTheJudgeFoundNoRegionsNotThatOpsStandForThem) {
  const nlohmann::json ops = {{"aten::conv2d", 0.6}, {"aten::relu", 0.4}};
  nlohmann::json signature = {{"ops", nlohmann::json::array()}};
  for (const auto& [name, share] : ops.items()) {
    signature["ops"].push_back({{"name", name}, {"share", share}});
  }
  EXPECT_EQ(slots_from_signature(ProfileSignature::from_json(signature), true).size(), 3u);
  signature["regions"] = nlohmann::json::array();
  const auto listed = ProfileSignature::from_json(signature);
  EXPECT_TRUE(listed.lists_regions());
  EXPECT_EQ(slots_from_signature(listed, true).size(), 1u);  // the model alone
  EXPECT_TRUE(ProfileSignature::from_json(nullptr).to_json().is_null());
}

}  // namespace
}  // namespace mblast
