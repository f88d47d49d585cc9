#pragma once
// A run directory: everything one `mblast optimize` run produces, and enough to resume it.
//
//   config.json         the options, versions and hardware (written once)
//   steps.jsonl         one line per finished step, appended and flushed (the resume log)
//   evaluations.jsonl   one line per evaluation actually run (resume must never repeat one)
//   candidates/NAME.py  every candidate; NAME.json next to it is its judge's result
//   best.py, best_kernelbench.py, run.json, log.txt
//
// Files are written atomically (temporary file + rename) or appended line by line with fsync,
// so a kill -9 at any moment leaves a directory that resume can read.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/eval_result.hpp"

namespace mblast {

class RunDir {
 public:
  // Creates the directory (refusing one that already holds a run: exit 2).
  static RunDir create(const std::filesystem::path& path);
  // Opens an existing run; exit 2 when `path` holds none.
  static RunDir open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path log_file() const { return path_ / "log.txt"; }

  void write_config(const nlohmann::json& config) const;
  nlohmann::json config() const;

  // Steps recorded so far, in order. A torn last line (a kill during the write) is ignored.
  std::vector<nlohmann::json> steps() const;
  void append_step(const nlohmann::json& step) const;

  // Writes `source` as candidates/<stem>-<hash12><extension> unless it is there; returns its path.
  std::filesystem::path save_candidate(const std::string& stem, const std::string& source,
                                       const std::string& extension = ".py") const;
  // A candidate made ahead of its step (--prebuild) under prebuild/: never judged from there, so
  // nothing of the run (reports, resumes) reads it. Empty when it could not be written.
  std::filesystem::path save_prebuilt(const std::string& stem, const std::string& source,
                                      const std::string& extension) const;

  // The judge's result stored for a candidate file, if it was judged.
  std::optional<EvalResult> stored_result(const std::filesystem::path& candidate) const;
  // Stores the result next to the candidate and appends to evaluations.jsonl.
  void store_result(const std::filesystem::path& candidate, const EvalResult& result) const;
  std::vector<nlohmann::json> evaluations() const;

  void write_json(const std::string& name, const nlohmann::json& value) const;
  void write_text(const std::string& name, const std::string& text) const;

 private:
  explicit RunDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

// Appends one line and fsyncs it.
void append_line(const std::filesystem::path& path, const std::string& line);
// The JSON objects of a JSON Lines file; unparsable lines (a torn last write) are skipped.
std::vector<nlohmann::json> read_json_lines(const std::filesystem::path& path);

}  // namespace mblast
