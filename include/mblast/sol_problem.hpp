#pragma once
// SOL-ExecBench problems (a directory with definition.json and workload.jsonl; its formats are
// docs/definition.md, workload.md and solution.md of that project), judged as one
// KernelBench-style problem file per workload that worker/mblast_sol writes: the Model, inputs
// and tolerance of that workload.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mblast {

struct SolWorkload {
  std::string uuid;
  std::filesystem::path file;  // its problem file
  nlohmann::json axes;         // every axis's value
  nlohmann::json tolerance;    // as the workload gives it (docs/workload.md)
};

struct SolProblem {
  std::string name;  // the definition's
  std::filesystem::path directory;
  std::vector<SolWorkload> workloads;  // at least one (mblast_sol refuses a problem without)

  // The manifest `python3 -m mblast_sol problem` writes; throws nlohmann::json::exception when
  // it lacks a field.
  static SolProblem from_manifest(const nlohmann::json& manifest);
};

// A directory holding definition.json, or a file named definition.json.
bool is_sol_problem(const std::filesystem::path& path);
// The problem's directory (absolute): `path` itself, or the folder of its definition.json.
std::filesystem::path sol_problem_directory(const std::filesystem::path& path);

// Writes the problem files of `problem` (a SOL-ExecBench directory or its definition.json) into
// `out_dir`. Throws input_error naming the file and field a bad problem breaks, job_error when
// the worker fails otherwise.
SolProblem write_sol_problem(const std::filesystem::path& problem,
                             const std::filesystem::path& out_dir);

// Where `mblast eval` keeps a problem's files: a folder of cache_dir per problem directory.
std::filesystem::path sol_problem_cache(const std::filesystem::path& cache_dir,
                                        const std::filesystem::path& problem);

// Writes `solution` (a solution.json of `problem`) as a candidate file at `out` and returns it; a
// solution in a C++ language is built ahead into `extension_cache` (the CUDA build cache,
// cache_dir/cuda, where the sandboxed worker finds it), its build error left for the judge. Throws
// input_error for a malformed solution or one mblast cannot run (saying why).
std::filesystem::path write_sol_candidate(const std::filesystem::path& problem,
                                          const std::filesystem::path& solution,
                                          const std::filesystem::path& out,
                                          const std::filesystem::path& extension_cache);

}  // namespace mblast
