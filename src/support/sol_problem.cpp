#include "mblast/sol_problem.hpp"

#include <chrono>

#include <spdlog/spdlog.h>

#include "mblast/error.hpp"
#include "mblast/probe.hpp"
#include "mblast/process.hpp"
#include "mblast/python.hpp"
#include "mblast/support.hpp"

namespace mblast {

namespace fs = std::filesystem;

namespace {

constexpr std::chrono::seconds kSolWorkerTimeout{120};
// A C++ solution's build ahead: a torch extension with nvcc takes a minute or two.
constexpr std::chrono::seconds kSolBuildTimeout{900};
constexpr int kFormatError = 2;  // mblast_sol's exit codes
constexpr int kUnsupported = 3;
const char* const kFormatHint =
    "fix the file or field named above (SOL-ExecBench's docs/definition.md, workload.md and "
    "solution.md give the formats)";

// `python3 -m mblast_sol ARGS`: its stdout as JSON.
nlohmann::json run_sol_worker(const std::vector<std::string>& args,
                              std::chrono::seconds timeout = kSolWorkerTimeout) {
  ProcessSpec spec;
  spec.argv = {require_torch_python().string(), "-m", "mblast_sol"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env["PYTHONPATH"] = worker_directory().string();
  spec.timeout = timeout;
  const ProcessResult result = run_process(spec);
  const std::string err = probing::trim(result.err);
  if (!result.timed_out && result.exit_code == kFormatError) throw input_error(err, kFormatHint);
  if (!result.timed_out && result.exit_code == kUnsupported) {
    throw input_error(err, "judge a solution in a Python language (pytorch, triton, ...)");
  }
  if (!result.ok()) {
    throw job_error("the SOL-ExecBench worker failed (" + result.describe() + "): " + err,
                    "run `python3 -m mblast_sol` with the same arguments to see why");
  }
  try {
    return nlohmann::json::parse(result.out);
  } catch (const nlohmann::json::exception& e) {
    throw job_error(std::string("the SOL-ExecBench worker wrote no JSON: ") + e.what(),
                    "report this with the problem directory");
  }
}

}  // namespace

SolProblem SolProblem::from_manifest(const nlohmann::json& manifest) {
  SolProblem problem;
  problem.name = manifest.at("name").get<std::string>();
  problem.directory = manifest.at("directory").get<std::string>();
  for (const auto& w : manifest.at("workloads")) {
    problem.workloads.push_back({w.at("uuid").get<std::string>(), w.at("file").get<std::string>(),
                                 w.at("axes"), w.at("tolerance")});
  }
  return problem;
}

bool is_sol_problem(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return fs::is_regular_file(path / "definition.json", ec);
  return path.filename() == "definition.json" && fs::is_regular_file(path, ec);
}

fs::path sol_problem_directory(const fs::path& path) {
  const fs::path absolute = fs::absolute(path);
  return fs::is_directory(absolute) ? absolute : absolute.parent_path();
}

SolProblem write_sol_problem(const fs::path& problem, const fs::path& out_dir) {
  const nlohmann::json manifest = run_sol_worker(
      {"problem", fs::absolute(problem).string(), "--out", fs::absolute(out_dir).string()});
  try {
    return SolProblem::from_manifest(manifest);
  } catch (const nlohmann::json::exception& e) {
    throw job_error(std::string("the SOL-ExecBench manifest is incomplete: ") + e.what(),
                    "report this with the problem directory");
  }
}

fs::path sol_problem_cache(const fs::path& cache_dir, const fs::path& problem) {
  const fs::path directory = sol_problem_directory(problem);
  return cache_dir / "sol" /
         (directory.filename().string() + "-" + sha256_hex(directory.string()).substr(0, 12));
}

fs::path write_sol_candidate(const fs::path& problem, const fs::path& solution, const fs::path& out,
                             const fs::path& extension_cache) {
  const nlohmann::json answer = run_sol_worker(
      {"solution", fs::absolute(problem).string(), fs::absolute(solution).string(), "--out",
       fs::absolute(out).string(), "--build-cache", fs::absolute(extension_cache).string()},
      kSolBuildTimeout);
  if (answer.value("built_ahead", true) == false) {
    spdlog::warn("{} did not build: the judge will report why",
                 fs::path(solution).filename().string());
  }
  return answer.at("candidate").get<std::string>();
}

}  // namespace mblast
