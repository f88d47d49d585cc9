#include "rvv_native_backend.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include "mblast/error.hpp"
#include "mblast/eval_options.hpp"
#include "native/native_eval.hpp"
#include "rvv_runner.hpp"
#include "rvv_signature.hpp"
#include "rvv_sweep.hpp"

namespace mblast::rvv {
namespace {

namespace fs = std::filesystem;

// A QEMU run of one bundle takes seconds; a hang should not hold the loop for the whole
// evaluation timeout.
constexpr std::chrono::seconds kMaxRunTimeout{120};

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error("cannot read " + path.string(), "check the path");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

class RvvBackend final : public NativeBackend {
 public:
  explicit RvvBackend(const EvalOptions& options) : options_(options) {
    run_.vlen = std::stoi(options.target_value("vlen", "256"));
    run_.timeout = std::min(options.native_timeout(), kMaxRunTimeout);
    run_.cache_dir = options.cache_dir;
    run_.remote = options.target_value("remote");
    run_.remote_prefix = split_words(options.target_value("remote_prefix"));
    run_.cost_check = options.target_value("cost_check", "off") == "on";
  }

  std::string name() const override { return "rvv"; }
  std::string extension() const override { return ".c"; }

  NativeRunResult run(const fs::path& candidate, const BundleSet& bundles) override {
    return run_rvv_candidate(candidate, bundles, run_);
  }

  nlohmann::json signature(const NativeRunResult& run, const BundleSet& bundles) override {
    nlohmann::json signature = rvv_signature(run.timing, ForwardWork::from_meta(bundles.meta));
    if (run.timing.contains("check")) signature["cost_check"] = run.timing["check"];
    return signature;
  }

  std::vector<NativeBaseline> baselines(const fs::path& problem,
                                        const BundleSet& bundles) override {
    if (baselines_) return *baselines_;
    baselines_.emplace();
    const fs::path source = baseline_file(problem, options_.target_value("baselines"), ".c");
    if (!fs::is_regular_file(source)) {
      // The baselines are the problem's computation in plain C, written by hand: without one
      // there is nothing honest to measure a candidate against.
      spdlog::warn("the RVV backend has no baseline for {}: write its plain C twin {}",
                   problem.string(), source.string());
      missing_.push_back("best_c: no scalar C twin " + source.string() +
                         " (write the computation in plain C against mblast_rvv.h there, or name "
                         "its folder with --baselines)");
      return *baselines_;
    }
    const RvvBaselines measured = run_rvv_baselines(source, bundles, run_);
    add_baseline("scalar_c_O2", measured.scalar, source, bundles);
    add_baseline("autovec_c_O3", measured.autovec, source, bundles);
    lead_with_the_better_compiler_build();
    return *baselines_;
  }

  std::vector<std::string> missing_baselines() const override { return missing_; }

  std::string hardware() override {
    if (!run_.remote.empty()) {
      std::string prefix;
      for (const auto& word : run_.remote_prefix) prefix += " " + word;
      return "rv64gcv on " + run_.remote + (prefix.empty() ? "" : " via" + prefix);
    }
    return "qemu rv64gcv vlen=" + std::to_string(run_.vlen) + " dlen=" + std::to_string(run_.dlen);
  }

  std::string assemble(const std::vector<std::pair<std::string, std::string>>& files) override {
    for (const auto& [file, text] : files) {
      if (file.ends_with(".c")) return text;
    }
    throw input_error("an RVV candidate is one C file (kernel.c) defining mblast_forward",
                      "write it in one fenced block");
  }

  std::string builtin_variant(const std::string& transform, const fs::path& candidate,
                              const BundleSet& bundles) override {
    RvvSweepKnobs knobs;
    if (transform == "lmul_choice") {
      knobs.unroll = false;
    } else if (transform == "unroll_choice") {
      knobs.lmul = false;
    } else {
      throw job_error("the RVV backend has no built-in transform '" + transform + "'");
    }
    const auto [atol, rtol] = tolerance(bundles);
    const RvvSweepResult result = sweep_rvv_candidate(candidate, bundles, run_, knobs, atol, rtol);
    spdlog::debug("{} of {}: {}", transform, candidate.string(), result.table().dump());
    if (!result.best) throw job_error("no variant gave correct results: " + result.table().dump());
    if (*result.best == 0) {
      throw job_error("no variant is cheaper than the candidate as written: " +
                      result.table().dump());
    }
    return result.best_source(read_text(candidate));
  }

 private:
  std::pair<double, double> tolerance(const BundleSet& bundles) const {
    const auto policy = native_tolerance(options_, bundles.meta);
    return {policy.atol, policy.rtol};
  }

  // What a user would build without mblast is the plain C at whichever of -O2 and -O3 (with the
  // compiler's autovectorizer) runs faster: that one, as "best_c", is the headline; both stay as
  // columns of their own.
  void lead_with_the_better_compiler_build() {
    if (baselines_->empty()) return;
    const auto better = std::min_element(
        baselines_->begin(), baselines_->end(),
        [](const NativeBaseline& a, const NativeBaseline& b) { return a.value < b.value; });
    NativeBaseline best = *better;
    best.detail = "the better of scalar -O2 and autovectorized -O3 C: " + better->name + ", " +
                  better->detail;
    best.name = "best_c";
    baselines_->insert(baselines_->begin(), best);
  }

  void add_baseline(const std::string& name, const NativeRunResult& result, const fs::path& source,
                    const BundleSet& bundles) {
    std::string failure = result.error_kind.empty() ? "" : result.error_kind + ": " + result.error;
    const auto [atol, rtol] = tolerance(bundles);
    for (std::size_t i = 0; failure.empty() && i < bundles.files.size(); ++i) {
      const Bundle bundle = read_bundle(bundles.files[i]);
      const Comparison c =
          compare_outputs(bundle.with_role(TensorRole::expected), result.outputs.at(i), atol, rtol);
      if (!c.pass) failure = c.error;
    }
    if (!failure.empty()) {
      spdlog::warn("the RVV baseline {} ({}) is not used: {}", name, source.string(), failure);
      missing_.push_back(name + ": " + source.string() + " failed: " + failure);
      return;
    }
    const std::string flags = result.details.value("compile_flags", nlohmann::json()).dump();
    const bool by_cost = result.timing.contains("cost");  // QEMU; a real machine gives ms
    baselines_->push_back(
        {name, result.timing.value(by_cost ? "cost" : "median_ms", 0.0), by_cost ? "cost" : "ms",
         source.filename().string() + " built with " + flags + " on " + result.device_name,
         signature(result, bundles)});
  }

  EvalOptions options_;
  RvvOptions run_;
  std::optional<std::vector<NativeBaseline>> baselines_;
  std::vector<std::string> missing_;
};

}  // namespace

std::unique_ptr<NativeBackend> make_rvv_backend(const EvalOptions& options) {
  return std::make_unique<RvvBackend>(options);
}

}  // namespace mblast::rvv
