// Reading run and batch directories into report rows.
#include "mblast/error.hpp"
#include "mblast/report.hpp"
#include "report/json_util.hpp"
#include "report/load_support.hpp"

namespace mblast::report {

namespace fs = std::filesystem;

namespace {

constexpr const char* kDirHint =
    "give a run directory (written by `mblast optimize --out DIR`, it holds run.json) or a batch "
    "directory (written by scripts/run_kernelbench.sh, it holds results.jsonl or runs/)";

bool is_run_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "run.json", ec) || fs::is_regular_file(dir / "config.json", ec);
}

bool has_run_dirs(const fs::path& runs) {
  std::error_code ec;
  if (!fs::is_directory(runs, ec)) return false;
  for (const auto& entry : fs::directory_iterator(runs, ec)) {
    if (entry.is_directory(ec) && is_run_dir(entry.path())) return true;
  }
  return false;
}

Report load_single(const fs::path& dir) {
  Report report;
  report.dir = dir;
  report.kind = "run";
  report.rows.push_back(load_run_dir(dir, report.warnings).row);
  return report;
}

}  // namespace

Report load_report(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw input_error("no such directory: " + dir.string(), kDirHint);
  if (!fs::is_directory(dir, ec)) throw input_error(dir.string() + " is not a directory", kDirHint);
  const bool batch = fs::is_regular_file(dir / "results.jsonl", ec) ||
                     fs::is_regular_file(dir / "batch.json", ec) || has_run_dirs(dir / "runs");
  if (batch) return load_batch(dir);
  if (is_run_dir(dir)) return load_single(dir);
  throw input_error(dir.string() + " holds no run.json, results.jsonl, batch.json or runs/",
                    kDirHint);
}

}  // namespace mblast::report
