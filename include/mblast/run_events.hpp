#pragma once
// What a running `mblast optimize` reports before its steps: the run it starts and the reference's
// own evaluation. Built by the loop, printed by the CLI's progress line; to_json() is the form the
// run directory's log.txt records.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/run_summary.hpp"

namespace mblast {

struct RunStart {
  std::string task;
  std::string run_dir;
  std::string kb;
  std::string backend;
  std::string device;
  std::string llm;            // the configured LLM, or why there is none
  bool builtin_only = false;  // no LLM: built-in techniques only
  std::size_t resumed_steps = 0;

  nlohmann::json to_json() const;
};

struct RunBaseline {
  std::optional<double> ref_ms;    // eager's time, where the judge times one
  std::optional<double> ref_cost;  // the cost model's figure (RVV)
  std::vector<BaselineFigure> baselines;
  std::string hardware;
  std::vector<std::string> slots;  // where the steps may work: "model" or op names

  std::string slot_list() const;  // "model" or "aten::mm, aten::relu"
  nlohmann::json to_json() const;
};

}  // namespace mblast
