#include "mblast/error.hpp"
#include "mblast/probe.hpp"
#include "mblast/process.hpp"
#include "mblast/python.hpp"

namespace mblast {

namespace fs = std::filesystem;

nlohmann::json run_regions_worker(const fs::path& problem, const std::string& device,
                                  std::chrono::milliseconds timeout) {
  if (!fs::is_regular_file(problem)) {
    throw input_error("no such file: " + problem.string(), "check the path");
  }
  ProcessSpec spec;
  spec.argv = {require_torch_python().string(), "-m",       "mblast_regions",
               fs::absolute(problem).string(),  "--device", device};
  spec.env["PYTHONPATH"] = worker_directory().string();
  spec.timeout = timeout;
  const ProcessResult result = run_process(spec);
  if (!result.timed_out && result.exit_code == 2) {
    throw input_error("the problem could not be loaded: " + probing::trim(result.err),
                      "check that it defines Model, get_inputs and get_init_inputs");
  }
  if (!result.ok()) {
    throw job_error(
        "finding the regions failed (" + result.describe() + "): " + probing::trim(result.err),
        result.timed_out ? "raise --timeout" : "run the problem with python3 alone");
  }
  try {
    return nlohmann::json::parse(result.out);
  } catch (const nlohmann::json::exception& e) {
    throw job_error(std::string("the regions worker wrote no JSON: ") + e.what(),
                    "report this with the problem file");
  }
}

}  // namespace mblast
