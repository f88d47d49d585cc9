#include "rvv_runner.hpp"

#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

#include "mblast/error.hpp"
#include "mblast/eval_options.hpp"
#include "mblast/process.hpp"
#include "mblast/remote.hpp"
#include "rvv_cost_model.hpp"
#include "rvv_elf.hpp"
#include "rvv_io.hpp"
#include "rvv_toolchain.hpp"
#include "rvv_trace.hpp"

namespace mblast {
namespace {

namespace fs = std::filesystem;
using rvv::CostWindow;
using rvv::TraceCost;

constexpr std::size_t kMaxStreamBytes = 1 << 20;
constexpr std::size_t kLogTailBytes = 4000;
constexpr int kSigxfsz = 25;

// A private scratch folder for one run, removed with everything the run left in it.
class Scratch {
 public:
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "mblast-rvv-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) {
      throw job_error("cannot create a scratch folder under " + fs::temp_directory_path().string());
    }
    path_ = pattern;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) throw job_error("cannot write " + path.string(), "check free space");
}

std::string tail(const std::string& text) {
  return text.size() <= kLogTailBytes ? text : "..." + text.substr(text.size() - kLogTailBytes);
}

// `unshare -n` when it works here, so candidate code has no network.
const std::vector<std::string>& network_sandbox() {
  static const std::vector<std::string> prefix = [] {
    const std::vector<std::string> unshare = {"unshare", "-n", "--"};
    if (!find_program("unshare")) return std::vector<std::string>{};
    ProcessSpec spec;
    spec.argv = unshare;
    spec.argv.push_back("true");
    spec.timeout = std::chrono::seconds(10);
    try {
      return run_process(spec).ok() ? unshare : std::vector<std::string>{};
    } catch (const Error&) {
      return std::vector<std::string>{};
    }
  }();
  return prefix;
}

void validate(const RvvOptions& options) {
  const auto power_of_two = [](int v) { return v > 0 && (v & (v - 1)) == 0; };
  if (!power_of_two(options.vlen) || options.vlen < 128 || options.vlen > 1024) {
    throw input_error("VLEN " + std::to_string(options.vlen) + " is not supported",
                      "use a power of two from 128 to 1024");
  }
  if (!power_of_two(options.dlen) || options.dlen < 32 || options.dlen > options.vlen) {
    throw input_error("DLEN " + std::to_string(options.dlen) + " is not supported",
                      "use a power of two from 32 to VLEN");
  }
  if (options.cost_bundles < 1) throw input_error("cost_bundles must be at least 1");
}

struct BundleRun {
  std::string error_kind;
  std::string error;
  rvv::HarnessOutput output;
  std::optional<TraceCost> cost;
  nlohmann::json check;  // the check plugin's counts (options.cost_check), else null
  double seconds = 0;
};

// The cost window's markers, and the harness's main, which the trace leaves out (its copies
// and checks would otherwise dominate the trace; none of its code runs inside the window except
// the calls to the forward and the markers).
struct Layout {
  CostWindow window;
  std::string trace_filter;                    // QEMU -dfilter ranges: everything but main
  std::uint64_t main_begin = 0, main_end = 0;  // main's code, [begin, end)
};

Layout executable_layout(const fs::path& executable) {
  const rvv::ElfFile elf = rvv::read_elf(executable);
  const auto begin = elf.global_function("mblast_begin");
  const auto end = elf.global_function("mblast_end");
  const auto main = elf.global_function("main");
  if (!begin || !end || !main || main->value == 0 || main->size == 0) {
    throw job_error("the RVV executable " + executable.string() +
                    " lacks the harness's main or its mblast_begin / mblast_end markers");
  }
  const auto hex = [](std::uint64_t v) {
    std::ostringstream text;
    text << "0x" << std::hex << v;
    return text.str();
  };
  Layout layout;
  layout.window = {begin->value, end->value};
  layout.main_begin = main->value;
  layout.main_end = main->value + main->size;
  layout.trace_filter =
      "0.." + hex(main->value - 1) + "," + hex(main->value + main->size) + "..0xffffffffffffffff";
  return layout;
}

class QemuRun {
 public:
  QemuRun(const fs::path& executable, const RvvOptions& options, Layout layout)
      : executable_(executable), options_(options), layout_(std::move(layout)) {
    if (options_.cost_check) {
      const fs::path cache = options_.cache_dir.empty() ? default_cache_dir() : options_.cache_dir;
      plugin_ = rvv::build_check_plugin(cache / "rvv", options_.timeout);
    }
  }

  BundleRun run(const Bundle& bundle, bool traced) const {
    Scratch scratch;
    const fs::path input = scratch.path() / "input.bin";
    const fs::path output = scratch.path() / "output.bin";
    const fs::path trace = scratch.path() / "trace.log";
    const fs::path check = scratch.path() / "check.json";
    write_file(input, rvv::harness_input(bundle));

    ProcessSpec spec;
    spec.argv = network_sandbox();
    // ulimit -f caps every file the run writes, the trace first (512-byte blocks in POSIX sh).
    const std::uint64_t blocks = (options_.max_trace_bytes + 511) / 512;
    spec.argv.insert(
        spec.argv.end(),
        {"/bin/sh", "-c", "ulimit -c 0 && ulimit -f " + std::to_string(blocks) + " && exec \"$@\"",
         "sh", require_qemu().string(), "-cpu",
         "rv64,v=true,vext_spec=v1.0,vlen=" + std::to_string(options_.vlen)});
    if (traced) {
      spec.argv.insert(spec.argv.end(), {"-d", "in_asm,exec,nochain", "-dfilter",
                                         layout_.trace_filter, "-D", trace.string()});
      if (!plugin_.empty()) spec.argv.insert(spec.argv.end(), {"-plugin", plugin_args(check)});
    }
    spec.argv.insert(spec.argv.end(), {executable_.string(), input.string(), output.string()});
    spec.cwd = scratch.path();
    spec.timeout = options_.timeout;
    spec.max_output_bytes = kMaxStreamBytes;
    for (const char* name : {"QEMU_LOG", "QEMU_LOG_FILENAME", "QEMU_CPU", "QEMU_STRACE"}) {
      spec.env[name] = std::nullopt;
    }
    const ProcessResult result = run_process(spec);

    BundleRun run;
    run.seconds = result.wall_seconds;
    std::error_code ec;
    const auto trace_bytes = traced ? fs::file_size(trace, ec) : 0;
    if (result.timed_out) {
      run.error_kind = "timeout";
      run.error = "the candidate ran past the timeout and was killed: " + result.describe();
    } else if (traced &&
               (result.term_signal == kSigxfsz || trace_bytes >= options_.max_trace_bytes)) {
      run.error_kind = "timeout";
      run.error = "the traced run passed the trace cap of " +
                  std::to_string(options_.max_trace_bytes >> 20) +
                  " MiB and was stopped: the forward executes far too many instructions";
    } else if (result.term_signal != 0) {
      run.error_kind = "crash";
      run.error = "the candidate crashed: " + result.describe() + "\n" + tail(result.err);
    } else if (result.exit_code != 0) {
      run.error_kind = "candidate_runtime";
      run.error = "the candidate exited with an error: " + result.describe() + "\n" +
                  tail(result.err + result.out);
    }
    if (!run.error_kind.empty()) return run;
    try {
      run.output = rvv::read_harness_output(read_file(output), bundle);
    } catch (const Error& e) {
      run.error_kind = "candidate_runtime";
      run.error = std::string(e.what()) + "\n" + tail(result.err + result.out);
      return run;
    }
    if (traced) {
      std::ifstream in(trace, std::ios::binary);
      run.cost = rvv::price_trace(in, layout_.window, model());
      if (!run.cost->window_closed) {
        run.error_kind = "candidate_runtime";
        run.error = "the forward never returned to the harness (it exited the process itself)";
      }
      if (!plugin_.empty()) run.check = read_check(check);
    }
    return run;
  }

  rvv::CostModel model() const { return {options_.vlen, options_.dlen}; }

 private:
  std::string plugin_args(const fs::path& out) const {
    std::ostringstream args;
    args << "file=" << plugin_.string() << ",begin=0x" << std::hex << layout_.window.begin
         << ",end=0x" << layout_.window.end << ",skip_begin=0x" << layout_.main_begin
         << ",skip_end=0x" << layout_.main_end << std::dec << ",out=" << out.string()
         << ",vlen=" << options_.vlen << ",dlen=" << options_.dlen;
    return args.str();
  }

  // The plugin writes its counts at QEMU's exit; a run without them is a job failure (the
  // plugin is mblast's, not the candidate's).
  static nlohmann::json read_check(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    auto counts = nlohmann::json::parse(in, nullptr, false);
    if (!counts.is_object() || !counts.value("window_closed", false)) {
      throw job_error("the cost check's QEMU plugin wrote no counts for the forward (" +
                          path.filename().string() + ")",
                      "run without --cost-check, and report this with the candidate");
    }
    counts["model"] = "qemu-plugin-timing-v1 l1=" + std::to_string(counts.value("l1_kib", 0)) +
                      "KiB/" + std::to_string(counts.value("l1_ways", 0)) +
                      "-way miss=" + std::to_string(counts.value("miss", 0));
    return counts;
  }

  static const fs::path& require_qemu() { return rvv::require_toolchain().qemu; }

  fs::path executable_;
  const RvvOptions& options_;
  Layout layout_;
  fs::path plugin_;  // the check plugin, with options.cost_check
};

nlohmann::json cost_json(const std::vector<TraceCost>& costs, const rvv::CostModel& model) {
  nlohmann::json timing = costs.front().to_json();
  nlohmann::json per_bundle = nlohmann::json::array();
  double sum = 0;
  for (const auto& c : costs) {
    per_bundle.push_back(c.cost);
    sum += static_cast<double>(c.cost);
  }
  if (costs.size() > 1) timing["cost"] = sum / static_cast<double>(costs.size());
  timing["per_bundle"] = per_bundle;
  timing["model"] = model.name();
  timing["vlen"] = model.vlen;
  timing["dlen"] = model.dlen;
  return timing;
}

std::string read_source(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error("cannot read the RVV candidate " + path.string(), "check the path");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

std::vector<std::string> rvv_compile_flags(const RvvOptions& options) {
  std::vector<std::string> flags = {options.opt_level, "-march=" + options.march};
  if (options.autovectorize) {
    flags.insert(flags.end(),
                 {"-mllvm", "-riscv-v-vector-bits-min=" + std::to_string(options.vlen)});
  }
  flags.insert(flags.end(), options.extra_flags.begin(), options.extra_flags.end());
  return flags;
}

namespace {

// Runs the built executable on a real RVV machine: wall-clock timing, no cost model.
NativeRunResult run_on_target(const fs::path& executable, const BundleSet& bundles,
                              const RvvOptions& options, NativeRunResult result) {
  auto target = make_remote_target(options.remote);
  result.device_name = target->name();
  const RemoteWorkdir dir(*target);
  target->push(executable, dir / "harness");
  target->run({"chmod", "+x", dir / "harness"}, std::chrono::seconds(30));
  std::vector<double> times_ms;
  for (std::size_t i = 0; i < bundles.files.size(); ++i) {
    const Bundle bundle = read_bundle(bundles.files[i]);
    Scratch scratch;
    write_file(scratch.path() / "input.bin", rvv::harness_input(bundle));
    target->push(scratch.path() / "input.bin", dir / "input.bin");
    std::vector<std::string> argv = options.remote_prefix;
    argv.insert(argv.end(), {dir / "harness", dir / "input.bin", dir / "output.bin"});
    const bool timed = i == 0 && options.remote_repeats > 0;
    if (timed) argv.insert(argv.end(), {std::to_string(options.remote_repeats), dir / "times.bin"});
    const ProcessResult run = target->run(argv, options.timeout);
    result.run_seconds += run.wall_seconds;
    if (run.timed_out || run.term_signal != 0 || run.exit_code != 0) {
      result.error_kind = run.timed_out          ? "timeout"
                          : run.term_signal != 0 ? "crash"
                                                 : "candidate_runtime";
      result.error =
          "the candidate on " + target->name() + ": " + run.describe() + "\n" + tail(run.err);
      return result;
    }
    target->pull(dir / "output.bin", scratch.path() / "output.bin");
    rvv::HarnessOutput output =
        rvv::read_harness_output(read_file(scratch.path() / "output.bin"), bundle);
    if (output.inputs_modified && result.details["flags"].empty()) {
      result.details["flags"].push_back("input_mutated");
    }
    result.outputs.push_back(std::move(output.outputs));
    if (timed) {
      target->pull(dir / "times.bin", scratch.path() / "times.bin");
      const std::string raw = read_file(scratch.path() / "times.bin");
      std::uint64_t count = 0;
      if (raw.size() >= 8) std::memcpy(&count, raw.data(), 8);
      for (std::uint64_t k = 0; k < count && 8 * (k + 2) <= raw.size(); ++k) {
        std::uint64_t ns = 0;
        std::memcpy(&ns, raw.data() + 8 * (k + 1), 8);
        times_ms.push_back(static_cast<double>(ns) / 1e6);
      }
    }
  }
  std::sort(times_ms.begin(), times_ms.end());
  if (!times_ms.empty()) {
    const auto at = [&](double q) {
      return times_ms[static_cast<std::size_t>(q * static_cast<double>(times_ms.size() - 1))];
    };
    double sum = 0;
    for (double t : times_ms) sum += t;
    result.timing = {
        {"median_ms", at(0.5)},    {"p10_ms", at(0.1)},
        {"p90_ms", at(0.9)},       {"mean_ms", sum / static_cast<double>(times_ms.size())},
        {"runs", times_ms.size()}, {"clock", "wall clock on " + target->name()}};
  }
  return result;
}

}  // namespace

NativeRunResult run_rvv_candidate(const fs::path& candidate_c, const BundleSet& bundles,
                                  const RvvOptions& options) {
  validate(options);
  const std::string source = read_source(candidate_c);
  NativeRunResult result;
  result.device_name = "qemu-riscv64 " + options.march + " VLEN=" + std::to_string(options.vlen);
  rvv::BuildRequest request;
  request.source = source;
  request.flags = rvv_compile_flags(options);
  request.cache_dir = (options.cache_dir.empty() ? default_cache_dir() : options.cache_dir) / "rvv";
  request.timeout = options.timeout;
  fs::create_directories(request.cache_dir);
  const rvv::Build build = rvv::build_candidate(request);
  result.build_seconds = build.seconds;
  result.details = {{"flags", nlohmann::json::array()},
                    {"compile_flags", request.flags},
                    {"build_key", build.key},
                    {"cached_build", build.cached}};
  if (!build.ok) {
    result.error_kind = "compile";
    result.error = build.log;
    return result;
  }

  if (!options.remote.empty()) return run_on_target(build.executable, bundles, options, result);
  const QemuRun qemu(build.executable, options, executable_layout(build.executable));
  std::vector<TraceCost> costs;
  nlohmann::json check;
  for (std::size_t i = 0; i < bundles.files.size(); ++i) {
    const Bundle bundle = read_bundle(bundles.files[i]);
    BundleRun run = qemu.run(bundle, i < static_cast<std::size_t>(options.cost_bundles));
    result.run_seconds += run.seconds;
    if (!run.error_kind.empty()) {
      result.error_kind = run.error_kind;
      result.error = run.error;
      return result;
    }
    if (run.output.inputs_modified && result.details["flags"].empty()) {
      result.details["flags"].push_back("input_mutated");
    }
    if (run.cost) costs.push_back(*run.cost);
    if (!run.check.is_null() && check.is_null()) check = std::move(run.check);
    result.outputs.push_back(std::move(run.output.outputs));
  }
  if (!costs.empty()) result.timing = cost_json(costs, qemu.model());
  if (!check.is_null()) result.timing["check"] = std::move(check);
  return result;
}

fs::path rvv_baseline_source(const fs::path& problem) {
  fs::path c = problem;
  c.replace_extension(".c");
  if (!fs::is_regular_file(c)) {
    throw input_error("the RVV backend needs the plain C baseline " + c.string() + " beside " +
                          problem.filename().string(),
                      "write mblast_forward in plain C there (see prompts/backend_rvv.md)");
  }
  return c;
}

RvvOptions rvv_scalar_options(RvvOptions options) {
  options.opt_level = "-O2";
  options.march = "rv64gc";
  options.autovectorize = false;
  return options;
}

RvvOptions rvv_autovec_options(RvvOptions options) {
  options.opt_level = "-O3";
  options.march = "rv64gcv";
  options.autovectorize = true;
  return options;
}

RvvBaselines run_rvv_baselines(const fs::path& baseline_c, const BundleSet& bundles,
                               const RvvOptions& options) {
  RvvBaselines baselines;
  baselines.scalar = run_rvv_candidate(baseline_c, bundles, rvv_scalar_options(options));
  baselines.autovec = run_rvv_candidate(baseline_c, bundles, rvv_autovec_options(options));
  return baselines;
}

}  // namespace mblast
