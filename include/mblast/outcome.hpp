#pragma once
// What judging one candidate came to: the loop, the agents and the critic decide on it; the KB's
// attempt rows, step records and prompts hold its name (to_string), the one place it is text.
#include <array>
#include <optional>
#include <string_view>
#include <utility>

namespace mblast {

enum class Outcome { correct, incorrect, compile_error, runtime_error, timeout, cheat, skipped };

inline constexpr std::array<std::pair<Outcome, std::string_view>, 7> kOutcomeNames{{
    {Outcome::correct, "correct"},
    {Outcome::incorrect, "incorrect"},
    {Outcome::compile_error, "compile_error"},
    {Outcome::runtime_error, "runtime_error"},
    {Outcome::timeout, "timeout"},
    {Outcome::cheat, "cheat"},
    {Outcome::skipped, "skipped"},
}};

constexpr std::string_view to_string(Outcome outcome) {
  for (const auto& [value, name] : kOutcomeNames) {
    if (value == outcome) return name;
  }
  return "incorrect";
}

// The outcome a stored name stands for; nullopt for a name this build does not know.
constexpr std::optional<Outcome> outcome_from(std::string_view name) {
  for (const auto& [value, known] : kOutcomeNames) {
    if (known == name) return value;
  }
  return std::nullopt;
}

}  // namespace mblast
