#pragma once
// Finding the Python that runs the worker, and the worker's files.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mblast {

// Interpreters to try, in order: $MBLAST_PYTHON, python3 on PATH, /usr/bin/python3.
std::vector<std::string> python_candidates();

// The first candidate with PyTorch installed (checked without importing it, so this is fast).
// `tried` receives what was tried when none fits.
std::optional<std::filesystem::path> find_torch_python(std::string* tried = nullptr);

// find_torch_python, or an input error that says what was tried and how to get PyTorch.
std::filesystem::path require_torch_python();

// The Python worker package folder (PYTHONPATH for `python3 -m mblast_worker`): $MBLAST_WORKER_DIR
// if set, else the copy compiled into this binary, written once to
// default_cache_dir()/worker-<content hash> ($XDG_CACHE_HOME/mblast, else ~/.cache/mblast).
std::filesystem::path worker_directory();

// `python3 -m mblast_regions PROBLEM --device DEVICE`: the problem's Model as torch.fx ops with
// their time shares and region windows (worker/mblast_regions), its JSON answer. The problem's
// own code runs in a plain process without the environment's secrets. Throws input_error when the
// problem cannot be loaded, job_error when the worker fails, times out or answers no JSON.
nlohmann::json run_regions_worker(const std::filesystem::path& problem, const std::string& device,
                                  std::chrono::milliseconds timeout);

}  // namespace mblast
