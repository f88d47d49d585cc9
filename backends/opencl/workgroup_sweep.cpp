#include "opencl/workgroup_sweep.hpp"

#include <fstream>
#include <set>

#include "mblast/error.hpp"
#include "opencl/opencl_candidate.hpp"
#include "opencl/scratch_dir.hpp"

namespace mblast::opencl {

namespace {

using nlohmann::json;

// `items` work-items shaped for a global size of rank 1 to 3: near-square in 2-D and 3-D with
// the first (fastest-varying) dimension the larger, else a row along the first dimension.
// nullopt when neither divides the global size.
std::optional<std::vector<std::size_t>> shape_for(const std::vector<std::size_t>& global,
                                                  std::size_t items) {
  const auto divides = [&](const std::vector<std::size_t>& local) {
    for (std::size_t d = 0; d < global.size(); ++d) {
      if (global[d] % local[d] != 0) return false;
    }
    return true;
  };
  std::vector<std::size_t> row(global.size(), 1);
  row[0] = items;
  if (global.size() > 1) {
    std::size_t second = 1;
    while (second * second * 4 <= items && items % (second * 2) == 0) second *= 2;
    std::vector<std::size_t> tile(global.size(), 1);
    tile[0] = items / second;
    tile[1] = second;
    if (divides(tile)) return tile;
  }
  if (divides(row)) return row;
  return std::nullopt;
}

bool fixes_its_size(const json& info) {
  return !info.value("required_local", json()).is_null() ||
         info.value("local_mem_bytes", std::size_t{0}) > 0;
}

// Empty when the run is correct on every bundle; else why not.
std::string failure_of(const NativeRunResult& run, const std::vector<Bundle>& bundles,
                       const SweepOptions& options) {
  if (!run.error_kind.empty()) return run.error_kind + ": " + run.error;
  if (run.outputs.size() != bundles.size()) return "outputs missing for some bundles";
  for (std::size_t b = 0; b < bundles.size(); ++b) {
    const Comparison c = compare_outputs(bundles[b].with_role(TensorRole::expected), run.outputs[b],
                                         options.atol, options.rtol);
    if (!c.pass) return "bundle " + std::to_string(b) + ": " + c.error;
  }
  return {};
}

void record(SweepVariant& variant, const NativeRunResult& run, const std::vector<Bundle>& bundles,
            const SweepOptions& options) {
  variant.error = failure_of(run, bundles, options);
  variant.correct = variant.error.empty();
  if (variant.correct) variant.median_ms = run.timing.value("median_ms", 0.0);
}

}  // namespace

json SweepResult::table() const {
  json rows = json::array();
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const auto& v = variants[i];
    rows.push_back({{"label", v.label},
                    {"locals", v.locals},
                    {"correct", v.correct},
                    {"median_ms", v.correct ? json(v.median_ms) : json()},
                    {"error", v.correct ? json() : json(v.error)},
                    {"best", best && *best == i}});
  }
  return rows;
}

std::vector<SweepVariant> workgroup_variants(const std::string& candidate_text,
                                             const json& launch_info,
                                             const std::vector<std::size_t>& sizes) {
  const Candidate candidate = parse_candidate(candidate_text);
  const json& launches = candidate.plan_json["launches"];
  if (!launch_info.is_array() || launch_info.size() != launches.size()) {
    throw job_error("the runner's launch report does not match the candidate's plan");
  }
  std::vector<SweepVariant> variants;
  std::set<std::string> seen;
  bool any_free = false;
  const auto add = [&](const std::string& label, const auto& local_for) {
    json plan = candidate.plan_json;
    json locals = json::array();
    for (std::size_t i = 0; i < launches.size(); ++i) {
      if (!fixes_its_size(launch_info[i])) {
        any_free = true;
        plan["launches"][i]["local"] = local_for(i);
      }
      locals.push_back(plan["launches"][i].value("local", json()));
    }
    if (!seen.insert(locals.dump()).second) return;
    variants.push_back({label,
                        variants.empty() ? candidate_text : with_launch_plan(candidate_text, plan),
                        locals});
  };
  add("as written", [&](std::size_t i) { return launches[i].value("local", json()); });
  if (!any_free) {
    throw job_error(
        "every launch fixes its work-group size (reqd_work_group_size or __local "
        "memory): the work-group size sweep does not apply");
  }
  add("local null", [](std::size_t) { return json(); });
  for (const std::size_t items : sizes) {
    add("local " + std::to_string(items), [&](std::size_t i) {
      const auto shape = shape_for(launches[i]["global"].get<std::vector<std::size_t>>(), items);
      const bool fits = items <= launch_info[i].value("max_work_group_size", std::size_t{0});
      return shape && fits ? json(*shape) : launches[i].value("local", json());
    });
  }
  return variants;
}

SweepResult sweep_workgroup_sizes(const std::string& candidate_text, const BundleSet& bundles,
                                  const SweepOptions& options) {
  std::vector<Bundle> expected;
  for (const auto& file : bundles.files) expected.push_back(read_bundle(file));
  const ScratchDir dir;
  const auto run_source = [&](const std::string& source, std::size_t index) {
    const auto path = dir / ("variant-" + std::to_string(index) + ".cl");
    std::ofstream(path, std::ios::binary) << source;
    return run_opencl_candidate(path, bundles, options.run);
  };

  const NativeRunResult as_written = run_source(candidate_text, 0);
  if (const std::string failure = failure_of(as_written, expected, options); !failure.empty()) {
    throw job_error("the work-group size sweep needs a correct candidate; this one fails: " +
                    failure);
  }
  SweepResult result;
  result.variants = workgroup_variants(candidate_text, as_written.details.value("launches", json()),
                                       options.sizes);
  record(result.variants[0], as_written, expected, options);
  for (std::size_t i = 1; i < result.variants.size(); ++i) {
    record(result.variants[i], run_source(result.variants[i].source, i), expected, options);
  }
  for (std::size_t i = 0; i < result.variants.size(); ++i) {
    const auto& v = result.variants[i];
    if (v.correct && (!result.best || v.median_ms < result.variants[*result.best].median_ms)) {
      result.best = i;
    }
  }
  return result;
}

}  // namespace mblast::opencl
