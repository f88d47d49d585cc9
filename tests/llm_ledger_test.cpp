// Token and cost accounting, and the budget that stops a run.
#include <gtest/gtest.h>

#include "mblast/llm.hpp"

namespace mblast {
namespace {

// Answers every request with fixed usage.
class FixedClient : public LlmClient {
 public:
  FixedClient(std::string provider, std::string model, std::int64_t in, std::int64_t out)
      : provider_(std::move(provider)), model_(std::move(model)), in_(in), out_(out) {}
  LlmResponse complete(const LlmRequest&) override {
    ++calls;
    LlmResponse response;
    response.text = "ok";
    response.input_tokens = in_;
    response.output_tokens = out_;
    response.provider = provider_;
    response.model = model_;
    return response;
  }
  std::string name() const override { return provider_ + ":" + model_; }
  int calls = 0;

 private:
  std::string provider_, model_;
  std::int64_t in_, out_;
};

LlmResponse usage(const std::string& provider, const std::string& model, std::int64_t in,
                  std::int64_t out) {
  LlmResponse response;
  response.provider = provider;
  response.model = model;
  response.input_tokens = in;
  response.output_tokens = out;
  return response;
}

TEST(LlmLedger, SumsTokensAndCostPerRole) {
  LlmLedger ledger({{"openai:gpt-4o", {2.5, 10}}});
  ledger.add("actor", usage("openai", "gpt-4o", 1'000'000, 100'000));
  ledger.add("actor", usage("openai", "gpt-4o", 200'000, 0));
  ledger.add("critic", usage("openai", "gpt-4o", 0, 50'000));

  const auto total = ledger.total();
  EXPECT_EQ(total.calls, 3);
  EXPECT_EQ(total.input_tokens, 1'200'000);
  EXPECT_EQ(total.output_tokens, 150'000);
  ASSERT_TRUE(total.cost_usd);
  EXPECT_NEAR(*total.cost_usd, 2.5 + 1.0 + 0.5 + 0.5, 1e-9);

  const auto roles = ledger.by_role();
  ASSERT_EQ(roles.size(), 2u);
  EXPECT_EQ(roles.at("actor").calls, 2);
  EXPECT_NEAR(*roles.at("actor").cost_usd, 4.0, 1e-9);
  EXPECT_NEAR(*roles.at("critic").cost_usd, 0.5, 1e-9);
  EXPECT_FALSE(ledger.exhausted());
  EXPECT_EQ(ledger.exhausted_reason(), "");
}

TEST(LlmLedger, CostIsUnknownWithoutAPrice) {
  LlmLedger ledger({{"openai:gpt-4o", {2.5, 10}}});
  ledger.add("actor", usage("openai", "gpt-4o", 10, 10));
  ledger.add("fix", usage("anthropic", "claude-x", 10, 10));
  EXPECT_FALSE(ledger.total().cost_usd);
  EXPECT_TRUE(ledger.by_role().at("actor").cost_usd);
  EXPECT_FALSE(ledger.by_role().at("fix").cost_usd);
  const auto json = ledger.to_json();
  EXPECT_TRUE(json["cost_usd"].is_null());
  EXPECT_EQ(json["input_tokens"], 20);
  EXPECT_TRUE(json["by_role"]["fix"]["cost_usd"].is_null());
  EXPECT_TRUE(json["by_role"]["actor"]["cost_usd"].is_number());

  ledger.set_budget(std::nullopt, 1.0);
  EXPECT_TRUE(ledger.exhausted());
  EXPECT_NE(ledger.exhausted_reason().find("unknown"), std::string::npos);
}

TEST(LlmBudget, TokenBudgetStopsFurtherCalls) {
  auto ledger = std::make_shared<LlmLedger>();
  ledger->set_budget(250, std::nullopt);
  auto inner = std::make_unique<FixedClient>("openai", "m", 60, 40);
  FixedClient* fixed = inner.get();
  BudgetClient client(std::move(inner), ledger);
  EXPECT_EQ(client.name(), "openai:m");

  LlmRequest request;
  request.role_tag = "fix";
  for (int i = 0; i < 3; ++i) client.complete(request);  // 300 tokens: the third call crosses
  EXPECT_TRUE(ledger->exhausted());
  try {
    client.complete(request);
    FAIL() << "the budget did not stop the call";
  } catch (const LlmBudgetExhausted& e) {
    EXPECT_EQ(e.code(), ExitCode::job_failed);
    EXPECT_NE(std::string(e.what()).find("300 of 250 tokens"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fixed->calls, 3);
  EXPECT_EQ(ledger->by_role().at("fix").calls, 3);

  const auto json = ledger->to_json();
  EXPECT_EQ(json["budget"]["max_tokens"], 250);
  EXPECT_TRUE(json["budget"]["max_cost_usd"].is_null());
  EXPECT_EQ(json["exhausted"], true);
  EXPECT_TRUE(json["exhausted_reason"].is_string());
}

TEST(LlmBudget, CostBudgetStopsFurtherCalls) {
  auto ledger = std::make_shared<LlmLedger>(std::map<std::string, Price>{{"openai:m", {1, 2}}});
  ledger->set_budget(std::nullopt, 0.5);
  BudgetClient client(std::make_unique<FixedClient>("openai", "m", 100'000, 100'000), ledger);
  LlmRequest request;
  client.complete(request);  // $0.30
  EXPECT_FALSE(ledger->exhausted());
  client.complete(request);  // $0.60
  EXPECT_TRUE(ledger->exhausted());
  EXPECT_NE(ledger->exhausted_reason().find("$0.6000 of $0.5000"), std::string::npos)
      << ledger->exhausted_reason();
  EXPECT_THROW(client.complete(request), LlmBudgetExhausted);
  EXPECT_EQ(ledger->total().calls, 2);
}

}  // namespace
}  // namespace mblast
