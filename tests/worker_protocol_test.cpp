// The driver's side of the worker protocol against its one description,
// worker/protocol.schema.json: every request the CUDA judge writes conforms, and a
// conforming response is read into EvalResult's typed fields (tests/python/test_protocol_schema.py
// checks the worker's side against the same file).
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cuda/cuda_eval.hpp"
#include "cuda/device_ceilings.hpp"
#include "mblast/eval_result.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const json& schema() {
  static const json loaded = [] {
    std::ifstream in(fs::path(MBLAST_SOURCE_DIR) / "worker/protocol.schema.json");
    return json::parse(in);
  }();
  return loaded;
}

bool is_kind(const json& value, const std::string& kind) {
  if (kind == "null") return value.is_null();
  if (kind == "boolean") return value.is_boolean();
  if (kind == "integer") return value.is_number_integer();
  if (kind == "number") return value.is_number();
  if (kind == "string") return value.is_string();
  if (kind == "array") return value.is_array();
  if (kind == "object") return value.is_object();
  ADD_FAILURE() << "unknown type " << kind << " in the schema";
  return false;
}

// Every way `value` breaks `rule`: the keywords the schema's $comment lists, and no others.
void check(const json& value, const json& rule, const std::string& where,
           std::vector<std::string>& found) {
  static const std::set<std::string> known = {
      "type",     "enum",     "properties", "required", "additionalProperties",
      "items",    "minItems", "minimum",    "anyOf",    "$ref",
      "$comment", "default"};
  for (const auto& [keyword, unused] : rule.items()) {
    if (!known.count(keyword)) found.push_back(where + ": unchecked keyword " + keyword);
  }
  if (rule.contains("$ref")) {
    const std::string ref = rule["$ref"];
    check(value, schema()["$defs"][ref.substr(std::string("#/$defs/").size())], where, found);
  }
  if (rule.contains("anyOf")) {
    bool any = false;
    for (const auto& option : rule["anyOf"]) {
      std::vector<std::string> mismatches;
      check(value, option, where, mismatches);
      any = any || mismatches.empty();
    }
    if (!any) found.push_back(where + ": matches no anyOf option");
  }
  if (rule.contains("type")) {
    const json kinds = rule["type"].is_array() ? rule["type"] : json::array({rule["type"]});
    bool any = false;
    for (const auto& kind : kinds) any = any || is_kind(value, kind.get<std::string>());
    if (!any) {
      found.push_back(where + ": " + value.dump() + " is not " + kinds.dump());
      return;
    }
  }
  if (rule.contains("enum") &&
      std::find(rule["enum"].begin(), rule["enum"].end(), value) == rule["enum"].end())
    found.push_back(where + ": " + value.dump() + " is not one of " + rule["enum"].dump());
  if (rule.contains("minimum") && value.is_number() &&
      value.get<double>() < rule["minimum"].get<double>())
    found.push_back(where + ": below the minimum");
  if (value.is_array()) {
    if (value.size() < rule.value("minItems", std::size_t{0}))
      found.push_back(where + ": too few items");
    if (rule.contains("items")) {
      for (std::size_t i = 0; i < value.size(); ++i)
        check(value[i], rule["items"], where + "[" + std::to_string(i) + "]", found);
    }
  }
  if (value.is_object()) {
    const json properties = rule.value("properties", json::object());
    for (const auto& key : rule.value("required", json::array())) {
      if (!value.contains(key.get<std::string>()))
        found.push_back(where + ": " + key.get<std::string>() + " is missing");
    }
    const json extra = rule.value("additionalProperties", json(true));
    for (const auto& [key, item] : value.items()) {
      if (properties.contains(key)) {
        check(item, properties[key], where + "." + key, found);
      } else if (extra.is_boolean() && !extra.get<bool>()) {
        found.push_back(where + ": " + key + " is not a field of the protocol");
      } else if (extra.is_object()) {
        check(item, extra, where + "." + key, found);
      }
    }
  }
}

std::vector<std::string> mismatches(const json& value, const std::string& definition) {
  std::vector<std::string> found;
  check(value, schema()["$defs"][definition], "$", found);
  return found;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

TEST(WorkerProtocol, EveryRequestTheJudgeWritesConforms) {
  EvalOptions options;
  options.problem = "/problems/p.py";
  const json ceilings = {{"bandwidth_gbs", 4000.0},
                         {"peak_tflops", 60.0},
                         {"peak_tflops_tf32", 400.0},
                         {"device_name", "H200"},
                         {"measured_at", "2026-12-03T00:00:00Z"}};
  auto request = worker_eval_request(options, "/c.py", "/cache", ceilings);
  EXPECT_EQ(joined(mismatches(request, "request")), "") << request.dump(2);
  options.timing = false;
  options.compile_baseline = true;
  options.tolerance_policy = "strict";
  options.allow_tf32 = true;
  options.profile = true;
  options.profile_reference = false;
  request = worker_eval_request(options, "/c.py", "/cache", nullptr);
  EXPECT_EQ(joined(mismatches(request, "request")), "") << request.dump(2);
  EXPECT_EQ(request["profile_reference"], false);
  EXPECT_EQ(joined(mismatches(worker_ceilings_request("cuda:0"), "request")), "");
  request["hold"] = true;  // an evaluation ahead (primer.hpp)
  EXPECT_EQ(joined(mismatches(request, "request")), "") << request.dump(2);
  options.workloads = {"/problems/w2.py", "/problems/w3.py"};  // a SOL-ExecBench problem's
  request = worker_eval_request(options, "/c.py", "/cache", nullptr);
  EXPECT_EQ(joined(mismatches(request, "request")), "") << request.dump(2);
  EXPECT_EQ(request["workloads"], json({"/problems/w2.py", "/problems/w3.py"}));
}

// --timeout bounds each problem's judging: a request with two more workloads gets it thrice.
TEST(WorkerProtocol, ARequestWithWorkloadsGetsTheTimeoutOncePerProblem) {
  EvalOptions options;
  options.timeout = std::chrono::seconds(10);
  EXPECT_EQ(call_limits(options).total, std::chrono::seconds(10));
  options.workloads = {"/problems/w2.py", "/problems/w3.py"};
  EXPECT_EQ(call_limits(options).total, std::chrono::seconds(30));
}

TEST(WorkerProtocol, TheCheckerFindsWhatBreaksTheSchema) {
  const json wrong = {{"op", "evaluate"}, {"seeds", json::array()}, {"colour", "red"}};
  const std::string found = joined(mismatches(wrong, "request"));
  EXPECT_NE(found.find("$.op"), std::string::npos) << found;
  EXPECT_NE(found.find("$.seeds: too few items"), std::string::npos) << found;
  EXPECT_NE(found.find("colour is not a field"), std::string::npos) << found;
}

// A response as the worker writes it: every field present, null where it does not apply.
json conforming_response() {
  json response = json::object();
  for (const auto& [key, rule] : schema()["$defs"]["response"]["properties"].items()) {
    const json kinds = rule["type"].is_array() ? rule["type"] : json::array({rule["type"]});
    if (std::find(kinds.begin(), kinds.end(), "null") != kinds.end()) {
      response[key] = nullptr;
    } else if (kinds[0] == "array") {
      response[key] = json::array();
    } else if (kinds[0] == "boolean") {
      response[key] = false;
    } else {
      response[key] = 0;
    }
  }
  return response;
}

TEST(WorkerProtocol, AConformingResponseIsReadIntoTypedFields) {
  json response = conforming_response();
  ASSERT_EQ(joined(mismatches(response, "response")), "");
  response.update({{"ok", true},
                   {"correct", true},
                   {"ref_ms", 2.0},
                   {"cand_ms", 0.5},
                   {"speedup", 4.0},
                   {"flags", {"slow_first_call"}},
                   {"tolerance",
                    {{"atol", 1e-3},
                     {"rtol", 1e-3},
                     {"policy", "eager-widened"},
                     {"widened_by_eager", true}}}});
  ASSERT_EQ(joined(mismatches(response, "response")), "");
  const EvalResult result = EvalResult::from_json(response);
  EXPECT_TRUE(result.correct);
  EXPECT_EQ(result.speedup, 4.0);
  EXPECT_EQ(result.cand_ms, 0.5);
  EXPECT_EQ(result.flags, std::vector<std::string>{"slow_first_call"});
  ASSERT_TRUE(result.tolerance.has_value());
  EXPECT_TRUE(result.tolerance->widened_by_eager);
  EXPECT_EQ(result.tolerance->policy, "eager-widened");
  EXPECT_EQ(result.outcome(), Outcome::correct);
}

TEST(WorkerProtocol, AResponseCarriesItsFurtherWorkloadsResponses) {
  json response = conforming_response();
  response["more_workloads"] = json::array({conforming_response(), conforming_response()});
  EXPECT_EQ(joined(mismatches(response, "response")), "");
  response["more_workloads"][1]["colour"] = "red";
  EXPECT_NE(joined(mismatches(response, "response")).find("$.more_workloads[1]: colour"),
            std::string::npos);
}

TEST(SplitWorkloads, TheFirstResultThenEachFurtherWorkloadsOwn) {
  const json result = {
      {"candidate", "/c.py"},
      {"correct", true},
      {"ref_ms", 1.0},
      {"more_workloads",
       {{{"correct", true}, {"ref_ms", 2.0}}, {{"correct", false}, {"error", "off"}}}}};
  const auto results = split_workloads(result);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_FALSE(results[0].contains("more_workloads"));
  EXPECT_EQ(results[0]["ref_ms"], 1.0);
  EXPECT_EQ(results[1]["ref_ms"], 2.0);
  EXPECT_EQ(results[2]["error"], "off");
  EXPECT_EQ(split_workloads({{"correct", true}}).size(), 1u);
}

// A worker that crashed during its third workload had judged the first two correct.
TEST(SplitWorkloads, AWorkerLostDuringAWorkloadPassedTheOnesBefore) {
  const json crashed = {{"candidate", "/c.py"},
                        {"correct", false},
                        {"error", "worker crashed: killed by SIGSEGV (signal 11)"},
                        {"error_kind", "crash"},
                        {"workload_index", 2}};
  const auto results = split_workloads(crashed);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0]["correct"].get<bool>());
  EXPECT_TRUE(results[1]["correct"].get<bool>());
  EXPECT_TRUE(results[1]["ref_ms"].is_null() || !results[1].contains("ref_ms"));
  EXPECT_EQ(results[2]["error_kind"], "crash");
}

}  // namespace
}  // namespace mblast
