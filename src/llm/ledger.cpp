// Tokens and cost per role, and the budget that stops a run.
#include <cstdio>

#include "mblast/llm.hpp"

namespace mblast {

namespace {

void add_to(LlmLedger::Totals& totals, const LlmResponse& response,
            const std::optional<double>& cost) {
  totals.input_tokens += response.input_tokens;
  totals.output_tokens += response.output_tokens;
  totals.calls += 1;
  totals.tokens_estimated = totals.tokens_estimated || response.tokens_estimated;
  if (totals.cost_usd && cost) {
    *totals.cost_usd += *cost;
  } else {
    totals.cost_usd.reset();
  }
}

nlohmann::json totals_json(const LlmLedger::Totals& totals) {
  return {{"calls", totals.calls},
          {"input_tokens", totals.input_tokens},
          {"output_tokens", totals.output_tokens},
          {"tokens_estimated", totals.tokens_estimated},
          {"cost_usd", totals.cost_usd ? nlohmann::json(*totals.cost_usd) : nlohmann::json()}};
}

std::string dollars(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "$%.4f", value);
  return text;
}

}  // namespace

LlmBudgetExhausted::LlmBudgetExhausted(const std::string& reason)
    : Error(ExitCode::job_failed, "LLM budget exhausted: " + reason,
            "raise --max-tokens / --max-cost, or resume the run with a larger budget") {}

LlmLedger::LlmLedger(std::map<std::string, Price> prices) : prices_(std::move(prices)) {}

void LlmLedger::add(const std::string& role, const LlmResponse& response) {
  std::optional<double> cost;
  if (const auto price = prices_.find(response.provider + ":" + response.model);
      price != prices_.end()) {
    cost = (static_cast<double>(response.input_tokens) * price->second.input_per_mtok +
            static_cast<double>(response.output_tokens) * price->second.output_per_mtok) /
           1e6;
  }
  std::lock_guard lock(mutex_);
  add_to(total_, response, cost);
  add_to(by_role_[role], response, cost);
}

LlmLedger::Totals LlmLedger::total() const {
  std::lock_guard lock(mutex_);
  return total_;
}

std::map<std::string, LlmLedger::Totals> LlmLedger::by_role() const {
  std::lock_guard lock(mutex_);
  return by_role_;
}

void LlmLedger::set_budget(std::optional<std::int64_t> max_tokens, std::optional<double> max_cost) {
  std::lock_guard lock(mutex_);
  max_tokens_ = max_tokens;
  max_cost_ = max_cost;
}

bool LlmLedger::exhausted() const {
  std::lock_guard lock(mutex_);
  return !reason_locked().empty();
}

std::string LlmLedger::exhausted_reason() const {
  std::lock_guard lock(mutex_);
  return reason_locked();
}

std::string LlmLedger::reason_locked() const {
  const std::int64_t used = total_.input_tokens + total_.output_tokens;
  if (max_tokens_ && used >= *max_tokens_) {
    return "token budget reached: " + std::to_string(used) + " of " + std::to_string(*max_tokens_) +
           " tokens used";
  }
  if (max_cost_ && !total_.cost_usd) {
    return "the cost of the calls so far is unknown (a model without a price in the config) "
           "and --max-cost is set";
  }
  if (max_cost_ && *total_.cost_usd >= *max_cost_) {
    return "cost budget reached: " + dollars(*total_.cost_usd) + " of " + dollars(*max_cost_) +
           " spent";
  }
  return "";
}

nlohmann::json LlmLedger::to_json() const {
  std::lock_guard lock(mutex_);
  nlohmann::json json = totals_json(total_);
  json["by_role"] = nlohmann::json::object();
  for (const auto& [role, totals] : by_role_) json["by_role"][role] = totals_json(totals);
  json["budget"] = {{"max_tokens", max_tokens_ ? nlohmann::json(*max_tokens_) : nlohmann::json()},
                    {"max_cost_usd", max_cost_ ? nlohmann::json(*max_cost_) : nlohmann::json()}};
  const std::string reason = reason_locked();
  json["exhausted"] = !reason.empty();
  json["exhausted_reason"] = reason.empty() ? nlohmann::json() : nlohmann::json(reason);
  return json;
}

BudgetClient::BudgetClient(std::unique_ptr<LlmClient> inner, std::shared_ptr<LlmLedger> ledger)
    : inner_(std::move(inner)), ledger_(std::move(ledger)) {}

LlmResponse BudgetClient::complete(const LlmRequest& request) {
  if (const std::string reason = ledger_->exhausted_reason(); !reason.empty()) {
    throw LlmBudgetExhausted(reason);
  }
  LlmResponse response = inner_->complete(request);
  ledger_->add(request.role_tag, response);
  return response;
}

}  // namespace mblast
