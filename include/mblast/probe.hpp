#pragma once
// Probing the machine for `mblast doctor`: running a tool briefly and reading what it printed.
// A probe never throws; a program that cannot start is a failed run.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mblast/doctor_check.hpp"
#include "mblast/process.hpp"

namespace mblast::probing {

DoctorCheck make_check(const char* name, bool required);
DoctorCheck& pass(DoctorCheck& check, std::string detail);
DoctorCheck& fail(DoctorCheck& check, std::string detail, std::string fix);

ProcessResult probe(std::vector<std::string> argv,
                    std::chrono::milliseconds timeout = std::chrono::seconds(10));
// "exit 1: <the most telling line of its output>", short enough for one line of doctor output.
std::string failure_text(const ProcessResult& result, bool last_line = false);
// The word after `marker` in `text` (e.g. the version after "release "), or empty.
std::string word_after(const std::string& text, std::string_view marker);
std::vector<std::string> lines_of(const std::string& text);
std::string trim(std::string_view text);
std::optional<std::filesystem::path> find_tool(const std::string& name,
                                               const std::string& fallback_dir);

}  // namespace mblast::probing
