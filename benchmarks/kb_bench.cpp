// kb_bench: fills a fresh knowledge base with a realistic volume of attempts through the public
// KnowledgeBase API, then times the reads and writes that the loop and `kb query` make.
//
//   kb_bench [--kb PATH] [--attempts N] [--queries N] [--seed S] [--json]
//
// Exit 0 when the benchmark ran (targets are reported, not asserted), 1 on a failure, 2 on bad
// usage.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mblast/error.hpp"
#include "mblast/kb.hpp"
#include "mblast/support.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using mblast::seconds_since;

constexpr std::int64_t kBatch = 10'000;
constexpr std::int64_t kTasks = 2'000;
constexpr double kTargetP99Us = 20'000;
// A query that scans the whole table takes on the order of a second at 1M attempts; stopping
// each kind after this long keeps the run to minutes while still giving a percentile spread.
constexpr std::chrono::seconds kQueryBudget{15};

struct Options {
  std::optional<fs::path> kb;
  std::int64_t attempts = 1'000'000;
  std::int64_t queries = 2'000;
  std::uint64_t seed = 1;
  bool json = false;
};

const char* const kUsage =
    "usage: kb_bench [--kb PATH] [--attempts N] [--queries N] [--seed S] [--json]\n"
    "  --kb PATH      create the knowledge base here and keep it (must not exist);\n"
    "                 default: a temporary folder, removed afterwards\n"
    "  --attempts N   attempts to insert (default 1000000)\n"
    "  --queries N    timed calls per query (default 2000; a query stops early after 15 s)\n"
    "  --seed S       seed of the generated data and the query picks (default 1)\n"
    "  --json         print one JSON object instead of the table\n";

std::int64_t parse_count(const std::string& flag, const std::string& text, std::int64_t min) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || value < min) {
    throw mblast::input_error(flag + " wants an integer >= " + std::to_string(min) + ", not '" +
                              text + "'");
  }
  return value;
}

// Accepts "--flag value" and "--flag=value".
Options parse_args(int argc, char** argv) {
  Options options;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> inline_value;
    if (auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = flag.substr(eq + 1);
      flag.resize(eq);
    }
    auto value = [&]() -> std::string {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size()) throw mblast::input_error(flag + " needs a value");
      return args[++i];
    };
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (flag == "--json") {
      options.json = true;
    } else if (flag == "--kb") {
      options.kb = fs::path(value());
    } else if (flag == "--attempts") {
      options.attempts = parse_count(flag, value(), 1);
    } else if (flag == "--queries") {
      options.queries = parse_count(flag, value(), 1);
    } else if (flag == "--seed") {
      options.seed = static_cast<std::uint64_t>(parse_count(flag, value(), 0));
    } else {
      throw mblast::input_error("unknown argument '" + args[i] + "'", "see kb_bench --help");
    }
  }
  return options;
}

// mt19937_64 and the arithmetic below are fully specified, unlike the std distributions, so a
// seed gives the same data with every standard library.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(engine_() % n); }
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(below(static_cast<std::size_t>(hi - lo + 1)));
  }
  double unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return unit() < p; }
  template <class T>
  const T& pick(const std::vector<T>& items) {
    return items[below(items.size())];
  }
  std::string hex(std::size_t chars) {
    static const char digits[] = "0123456789abcdef";
    std::string text(chars, '0');
    std::uint64_t bits = 0;
    for (std::size_t i = 0; i < chars; ++i) {
      if (i % 16 == 0) bits = engine_();
      text[i] = digits[bits & 0xf];
      bits >>= 4;
    }
    return text;
  }

 private:
  std::mt19937_64 engine_;
};

std::string iso8601(std::int64_t epoch_ms) {
  using namespace std::chrono;
  const sys_time<milliseconds> time{milliseconds{epoch_ms}};
  const auto day = floor<days>(time);
  const year_month_day date{day};
  const hh_mm_ss clock{time - day};
  char text[32];
  std::snprintf(
      text, sizeof text, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", static_cast<int>(date.year()),
      static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
      static_cast<int>(clock.hours().count()), static_cast<int>(clock.minutes().count()),
      static_cast<int>(clock.seconds().count()), static_cast<int>(clock.subseconds().count()));
  return text;
}

struct Arm {
  std::string state;
  std::string technique;
  bool builtin = false;
};

struct Backend {
  std::string name;
  std::string language;
  std::vector<std::string> hardware;
  std::vector<mblast::TechniqueRow> techniques;
  std::vector<Arm> arms;  // (state, technique) pairs the catalogue says the technique addresses
};

struct Task {
  std::string name;
  std::string signature;
  double baseline_ms = 0;
};

struct Catalogue {
  std::vector<Backend> backends;
  std::vector<std::string> states;
  std::vector<Task> tasks;
};

Catalogue make_catalogue(const mblast::KnowledgeBase& kb, Rng& rng) {
  Catalogue cat;
  for (const auto& state : kb.states()) cat.states.push_back(state.id);
  if (cat.states.empty()) throw mblast::job_error("the seeded knowledge base has no states");
  cat.backends = {{"cuda", "cuda", {"nvidia-h100", "nvidia-rtx-4090"}, {}, {}},
                  {"opencl", "opencl", {"nvidia-rtx-4090", "intel-arc-a770"}, {}, {}},
                  {"rvv", "c", {"spacemit-k1"}, {}, {}}};
  for (auto& backend : cat.backends) {
    backend.techniques = kb.techniques(backend.name);
    if (backend.techniques.empty()) {
      throw mblast::job_error("the seeded knowledge base has no techniques for " + backend.name);
    }
    for (const auto& technique : backend.techniques) {
      for (const auto& state : technique.states) {
        backend.arms.push_back({state, technique.id, technique.implementer == "builtin"});
      }
    }
    if (backend.arms.empty()) {
      for (const auto& technique : backend.techniques) {
        backend.arms.push_back(
            {cat.states.front(), technique.id, technique.implementer == "builtin"});
      }
    }
  }
  static const std::vector<std::string> ops = {
      "matmul",     "conv2d",    "softmax",       "layernorm",      "gelu",   "attention",
      "reduce-sum", "transpose", "batchnorm",     "maxpool",        "cumsum", "gemm-bias-relu",
      "rmsnorm",    "argmax",    "cross-entropy", "depthwise-conv", "scan",   "embedding-bag"};
  for (std::int64_t i = 0; i < kTasks; ++i) {
    const auto& op = ops[static_cast<std::size_t>(i) % ops.size()];
    const auto level = 1 + i % 3;
    const auto rows = 64 << (i % 7);
    char name[96];
    std::snprintf(name, sizeof name, "kernelbench/level%lld/%04lld_%s",
                  static_cast<long long>(level), static_cast<long long>(i), op.c_str());
    char signature[96];
    std::snprintf(signature, sizeof signature, "%s(f%d[%lldx%lld])", op.c_str(),
                  i % 4 == 0 ? 16 : 32, static_cast<long long>(rows),
                  static_cast<long long>(128 + i));
    cat.tasks.push_back({name, signature, 0.05 + 40.0 * rng.unit() * rng.unit()});
  }
  return cat;
}

struct Generated {
  std::int64_t runs = 0;
  std::int64_t attempts = 0;
  std::int64_t implementations = 0;
  std::int64_t claims = 0;
  std::int64_t evidence = 0;
};

// What an implementation is recorded from: a correct attempt that beat its baseline.
struct Winner {
  std::string attempt_id;
  std::string run_id;
  std::size_t task = 0;
  std::size_t backend = 0;
  std::string hardware;
  std::string technique;
  double speedup = 0;
  double time_ms = 0;
  double baseline_ms = 0;
};

// The loop's writes: runs of 20-80 attempts on one task, backend and hardware, most attempts on
// an arm the catalogue suggests, some exploring any state with any technique of the backend.
class AttemptGenerator {
 public:
  AttemptGenerator(const Catalogue& cat, Rng& rng, std::int64_t winners_wanted)
      : cat_(cat), rng_(rng), winners_wanted_(static_cast<std::size_t>(winners_wanted)) {}

  mblast::AttemptRow next(mblast::KnowledgeBase& kb, Generated& counts) {
    if (left_in_run_ == 0) start_run(kb, counts);
    --left_in_run_;
    const auto& backend = cat_.backends[backend_];
    const auto& task = cat_.tasks[task_];
    mblast::AttemptRow row;
    row.run_id = run_id_;
    row.task = task.name;
    row.backend = backend.name;
    row.hardware = hardware_;
    Arm arm = rng_.pick(backend.arms);
    if (rng_.chance(0.15)) {
      const auto& technique = rng_.pick(backend.techniques);
      arm = {rng_.pick(cat_.states), technique.id, technique.implementer == "builtin"};
    }
    row.state_id = arm.state;
    row.technique_id = arm.technique;
    row.iteration = step_ / 4;
    row.step = step_ % 4;
    ++step_;
    clock_ms_ += rng_.between(1'000, 5'000);
    row.created_at = iso8601(clock_ms_);
    row.tokens = arm.builtin ? 0 : rng_.between(400, 9'000);
    row.baseline_ms = task.baseline_ms;

    const double u = rng_.unit();
    static const std::vector<std::pair<double, const char*>> outcomes = {
        {0.55, "correct"}, {0.70, "incorrect"}, {0.82, "compile_error"}, {0.90, "runtime_error"},
        {0.95, "timeout"}, {0.96, "cheat"},     {1.00, "skipped"}};
    row.outcome = std::find_if(outcomes.begin(), outcomes.end(), [&](const auto& o) {
                    return u < o.first;
                  })->second;
    if (row.outcome != "skipped") row.candidate_hash = rng_.hex(64);
    if (row.outcome == "correct") {
      // Log-normal-ish speedups around 1.2x: most candidates win a little, a few a lot.
      const double spread = rng_.unit() + rng_.unit() + rng_.unit() - 1.5;
      const double speedup = 1.2 * std::exp(0.9 * spread);
      row.speedup = speedup;
      row.time_ms = task.baseline_ms / speedup;
      row.reward = std::log2(speedup);
    } else {
      static const std::vector<std::string> errors = {
          "error: identifier \"__shfl_down\" is undefined",
          "error: use of undeclared identifier 'tile'",
          "max abs diff 0.0132 > atol 1e-05 at index [3, 17]",
          "CUDA error: an illegal memory access was encountered",
          "CL_OUT_OF_RESOURCES (-5) from clEnqueueNDRangeKernel",
          "timed out after 60 s",
          "output reused the reference result buffer"};
      if (row.outcome != "skipped" && row.outcome != "incorrect") row.error = rng_.pick(errors);
      if (row.outcome == "incorrect" || row.outcome == "timeout") {
        row.time_ms = task.baseline_ms * (0.5 + rng_.unit());
      }
      // Together with the always-rewarded correct attempts, about 70 % carry a reward.
      if (rng_.chance(1.0 / 3.0)) row.reward = row.outcome == "skipped" ? 0.0 : -1.0;
    }
    return row;
  }

  // Reservoir sampling keeps an even spread of winners over the whole insert.
  void offer_winner(const mblast::AttemptRow& row, const std::string& id) {
    if (row.outcome != "correct" || !row.speedup || *row.speedup <= 1.0) return;
    ++winners_seen_;
    Winner winner{id,           *row.run_id,  task_,
                  backend_,     row.hardware, *row.technique_id,
                  *row.speedup, *row.time_ms, *row.baseline_ms};
    if (winners_.size() < winners_wanted_) {
      winners_.push_back(std::move(winner));
    } else if (auto slot = rng_.below(winners_seen_); slot < winners_wanted_) {
      winners_[slot] = std::move(winner);
    }
  }

  const std::vector<Winner>& winners() const { return winners_; }

 private:
  void start_run(mblast::KnowledgeBase& kb, Generated& counts) {
    task_ = rng_.below(cat_.tasks.size());
    backend_ = rng_.below(cat_.backends.size());
    hardware_ = rng_.pick(cat_.backends[backend_].hardware);
    left_in_run_ = rng_.between(20, 80);
    step_ = 0;
    mblast::RunRow run;
    run.task = cat_.tasks[task_].name;
    run.backend = cat_.backends[backend_].name;
    run.hardware = hardware_;
    run.status = "finished";
    run.started_at = iso8601(clock_ms_);
    run_id_ = kb.add_run(run);
    ++counts.runs;
  }

  const Catalogue& cat_;
  Rng& rng_;
  std::size_t winners_wanted_;
  std::size_t winners_seen_ = 0;
  std::vector<Winner> winners_;
  std::size_t task_ = 0;
  std::size_t backend_ = 0;
  std::string hardware_;
  std::string run_id_;
  std::int64_t left_in_run_ = 0;
  std::int64_t step_ = 0;
  std::int64_t clock_ms_ = 1'767'225'600'000;  // 2026-01-01T00:00:00Z
};

std::string kernel_source(const Winner& w, const Catalogue& cat, Rng& rng) {
  const auto& task = cat.tasks[w.task];
  const auto& backend = cat.backends[w.backend];
  const auto block = 32 << rng.below(4);
  std::string source = "// " + task.name + " via " + w.technique + " on " + w.hardware + "\n";
  if (backend.name == "rvv") {
    source +=
        "#include <riscv_vector.h>\n#include <stddef.h>\n\n"
        "void kernel(const float* restrict x, float* restrict y, size_t n) {\n"
        "  for (size_t i = 0; i < n;) {\n"
        "    size_t vl = __riscv_vsetvl_e32m" +
        std::to_string(1 << rng.below(4)) +
        "(n - i);\n"
        "    vfloat32m1_t v = __riscv_vle32_v_f32m1(x + i, vl);\n"
        "    v = __riscv_vfmul_vf_f32m1(v, 0.5f, vl);\n"
        "    __riscv_vse32_v_f32m1(y + i, v, vl);\n"
        "    i += vl;\n  }\n}\n";
  } else {
    const bool cuda = backend.name == "cuda";
    source += std::string(cuda ? "__global__ void kernel(" : "__kernel void kernel(") +
              (cuda ? "const float* __restrict__ x, float* __restrict__ y, int n"
                    : "__global const float* x, __global float* y, int n") +
              ") {\n"
              "  " +
              (cuda ? "__shared__" : "__local") + " float tile[" + std::to_string(block) +
              "];\n"
              "  int i = " +
              (cuda ? "blockIdx.x * blockDim.x + threadIdx.x" : "get_global_id(0)") +
              ";\n"
              "  tile[" +
              (cuda ? "threadIdx.x" : "get_local_id(0)") +
              "] = i < n ? x[i] : 0.0f;\n"
              "  " +
              (cuda ? "__syncthreads()" : "barrier(CLK_LOCAL_MEM_FENCE)") +
              ";\n"
              "  if (i < n) y[i] = tile[" +
              (cuda ? "threadIdx.x" : "get_local_id(0)") + "] * 0.5f;\n}\n";
  }
  // Real kernels run to a few kilobytes; pad with the kind of launch glue they carry.
  const auto glue_lines = rng.between(20, 60);
  for (std::int64_t i = 0; i < glue_lines; ++i) {
    source += "static const int kLaunchParam" + std::to_string(i) + " = " +
              std::to_string(rng.between(1, 4096)) + ";  // tuned for " + w.hardware + "\n";
  }
  return source;
}

struct LoadPhase {
  std::string name;
  std::int64_t rows = 0;
  double seconds = 0;
  double rows_per_s() const { return seconds > 0 ? static_cast<double>(rows) / seconds : 0.0; }
};

struct Latency {
  std::string query;
  std::int64_t samples = 0;
  double mean_rows = 0;
  double p50_us = 0;
  double p99_us = 0;
  double max_us = 0;
  bool ok() const { return p99_us < kTargetP99Us; }
};

// Nearest-rank percentile of sorted samples.
double percentile(const std::vector<double>& sorted, double p) {
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

// `pick` draws the arguments outside the timed region; `run` is timed and returns the row count.
template <class Pick, class Run>
Latency measure(const std::string& name, std::int64_t count, Rng& rng, Pick pick, Run run) {
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(count));
  std::size_t rows = 0;
  const auto deadline = Clock::now() + kQueryBudget;
  for (std::int64_t i = 0; i < count && Clock::now() < deadline; ++i) {
    const auto args = pick(rng);
    const auto start = Clock::now();
    rows += run(args);
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  std::sort(samples.begin(), samples.end());
  const auto n = static_cast<std::int64_t>(samples.size());
  return {name,
          n,
          static_cast<double>(rows) / static_cast<double>(n),
          percentile(samples, 0.50),
          percentile(samples, 0.99),
          samples.back()};
}

mblast::ImplementationRow implementation_from(const Winner& w, const Catalogue& cat, Rng& rng) {
  const auto& task = cat.tasks[w.task];
  mblast::ImplementationRow row;
  row.task = task.name;
  row.task_signature = task.signature;
  row.backend = cat.backends[w.backend].name;
  row.hardware = w.hardware;
  row.technique_id = w.technique;
  row.run_id = w.run_id;
  row.attempt_id = w.attempt_id;
  row.language = cat.backends[w.backend].language;
  row.source = kernel_source(w, cat, rng);
  row.speedup = w.speedup;
  row.time_ms = w.time_ms;
  row.baseline_ms = w.baseline_ms;
  row.atol = task.signature.find("f16") != std::string::npos ? 1e-2 : 1e-5;
  row.rtol = row.atol;
  return row;
}

void add_claims(mblast::KnowledgeBase& kb, const Catalogue& cat, const std::vector<Winner>& winners,
                std::int64_t count, Rng& rng, Generated& counts) {
  kb.transaction([&] {
    for (std::int64_t i = 0; i < count; ++i) {
      const auto& backend = rng.pick(cat.backends);
      const auto& arm = rng.pick(backend.arms);
      mblast::ClaimRow claim;
      claim.text = arm.technique + " helps on " + arm.state + " when the working set fits (#" +
                   std::to_string(i) + ")";
      if (rng.chance(0.9)) claim.state_id = arm.state;
      claim.technique_id = arm.technique;
      if (rng.chance(0.7)) claim.backend = backend.name;
      const auto id = kb.add_claim(claim);
      ++counts.claims;
      const auto evidence = rng.between(0, 4);
      for (std::int64_t e = 0; e < evidence; ++e) {
        std::optional<std::string> attempt;
        if (!winners.empty() && rng.chance(0.5)) attempt = rng.pick(winners).attempt_id;
        kb.add_evidence(id, attempt, rng.chance(0.7) ? "support" : "refute",
                        "observation " + std::to_string(e));
        ++counts.evidence;
      }
    }
  });
}

struct Report {
  fs::path kb;
  Generated counts;
  std::vector<LoadPhase> load;
  std::uintmax_t db_bytes = 0;
  std::uintmax_t wal_bytes = 0;
  std::vector<Latency> latencies;
  std::vector<std::pair<std::string, std::int64_t>> rows_per_table;
  double total_seconds = 0;
};

std::uintmax_t size_or_zero(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

Report run_bench(const Options& options, const fs::path& kb_path) {
  const auto bench_start = Clock::now();
  Report report;
  report.kb = kb_path;
  auto& counts = report.counts;

  mblast::KnowledgeBase kb(kb_path);
  Rng rng(options.seed);
  const Catalogue cat = make_catalogue(kb, rng);
  AttemptGenerator generator(cat, rng, std::max<std::int64_t>(1, options.attempts / 50));

  auto start = Clock::now();
  std::int64_t next_progress = options.attempts / 10;
  while (counts.attempts < options.attempts) {
    const auto batch_end = std::min(options.attempts, counts.attempts + kBatch);
    kb.transaction([&] {
      while (counts.attempts < batch_end) {
        auto row = generator.next(kb, counts);
        const auto id = kb.add_attempt(row);
        generator.offer_winner(row, id);
        ++counts.attempts;
      }
    });
    if (next_progress > 0 && counts.attempts >= next_progress) {
      std::fprintf(stderr, "kb_bench: %lld/%lld attempts, %.1f s\n",
                   static_cast<long long>(counts.attempts),
                   static_cast<long long>(options.attempts), seconds_since(start));
      next_progress += options.attempts / 10;
    }
  }
  report.load.push_back({"attempts (+runs)", counts.attempts, seconds_since(start)});

  start = Clock::now();
  const auto& winners = generator.winners();
  for (std::size_t first = 0; first < winners.size(); first += kBatch) {
    kb.transaction([&] {
      const auto last = std::min(winners.size(), first + kBatch);
      for (std::size_t i = first; i < last; ++i) {
        kb.add_implementation(implementation_from(winners[i], cat, rng));
        ++counts.implementations;
      }
    });
  }
  report.load.push_back({"implementations", counts.implementations, seconds_since(start)});

  start = Clock::now();
  add_claims(kb, cat, winners, std::max<std::int64_t>(1, options.attempts / 500), rng, counts);
  report.load.push_back(
      {"claims (+evidence)", counts.claims + counts.evidence, seconds_since(start)});
  report.db_bytes = size_or_zero(kb_path);
  report.wal_bytes = size_or_zero(fs::path(kb_path.string() + "-wal"));

  Rng picks(options.seed ^ 0x9e3779b97f4a7c15ULL);
  const auto n = options.queries;
  auto backend_arm = [&](Rng& r) {
    const auto& backend = r.pick(cat.backends);
    return std::make_pair(&backend, r.pick(backend.arms));
  };
  auto& out = report.latencies;
  out.push_back(measure(
      "reward_stats(backend, state)", n, picks,
      [&](Rng& r) { return std::make_pair(r.pick(cat.backends).name, r.pick(cat.states)); },
      [&](const auto& a) { return kb.reward_stats(a.first, a.second).size(); }));
  out.push_back(measure(
      "claims(state, technique)", n, picks, [&](Rng& r) { return backend_arm(r).second; },
      [&](const Arm& arm) { return kb.claims(arm.state, arm.technique).size(); }));
  out.push_back(measure(
      "attempts_for_task(task, 50)", n, picks, [&](Rng& r) { return r.pick(cat.tasks).name; },
      [&](const std::string& task) { return kb.attempts_for_task(task, 50).size(); }));
  out.push_back(measure(
      "top_implementations(signature, backend, 5)", n, picks,
      [&](Rng& r) {
        return std::make_pair(r.pick(cat.tasks).signature, r.pick(cat.backends).name);
      },
      [&](const auto& a) { return kb.top_implementations(a.first, a.second, 5).size(); }));
  out.push_back(measure(
      "query attempts backend+state+technique", n, picks,
      [&](Rng& r) {
        const auto [backend, arm] = backend_arm(r);
        mblast::KbQuery q;
        q.kind = "attempts";
        q.backend = backend->name;
        q.state = arm.state;
        q.technique = arm.technique;
        q.limit = 50;
        return q;
      },
      [&](const mblast::KbQuery& q) { return kb.query(q).size(); }));
  out.push_back(measure(
      "query attempts task", n, picks,
      [&](Rng& r) {
        mblast::KbQuery q;
        q.kind = "attempts";
        q.task = r.pick(cat.tasks).name;
        q.limit = 50;
        return q;
      },
      [&](const mblast::KbQuery& q) { return kb.query(q).size(); }));
  out.push_back(measure(
      "query techniques backend", n, picks,
      [&](Rng& r) {
        mblast::KbQuery q;
        q.kind = "techniques";
        q.backend = r.pick(cat.backends).name;
        return q;
      },
      [&](const mblast::KbQuery& q) { return kb.query(q).size(); }));
  out.push_back(measure(
      "add_attempt, own transaction", n, picks, [&](Rng&) { return generator.next(kb, counts); },
      [&](const mblast::AttemptRow& row) {
        kb.transaction([&] { kb.add_attempt(row); });
        ++counts.attempts;
        return std::size_t{1};
      }));

  report.rows_per_table = kb.stats().rows_per_table;
  report.total_seconds = seconds_since(bench_start);
  return report;
}

std::string mib(std::uintmax_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

void print_table(const Report& r, const Options& options) {
  std::printf("kb_bench: %s, seed %llu, %lld queries each\n\n", r.kb.string().c_str(),
              static_cast<unsigned long long>(options.seed),
              static_cast<long long>(options.queries));
  std::printf("%-20s %10s %9s %10s\n", "load", "rows", "seconds", "rows/s");
  for (const auto& phase : r.load) {
    std::printf("%-20s %10lld %9.1f %10.0f\n", phase.name.c_str(),
                static_cast<long long>(phase.rows), phase.seconds, phase.rows_per_s());
  }
  std::printf("%lld runs, %lld claims, %lld evidence; file %s + WAL %s = %s\n\n",
              static_cast<long long>(r.counts.runs), static_cast<long long>(r.counts.claims),
              static_cast<long long>(r.counts.evidence), mib(r.db_bytes).c_str(),
              mib(r.wal_bytes).c_str(), mib(r.db_bytes + r.wal_bytes).c_str());

  std::size_t width = std::string("query").size();
  for (const auto& l : r.latencies) width = std::max(width, l.query.size());
  const int w = static_cast<int>(width);
  char header[256];
  std::snprintf(header, sizeof header, "%-*s | %7s | %8s | %9s | %9s | %9s | %-11s | %s", w,
                "query", "samples", "avg rows", "p50 us", "p99 us", "max us", "target", "ok/over");
  std::printf("%s\n%s\n", header, std::string(std::strlen(header), '-').c_str());
  for (const auto& l : r.latencies) {
    std::printf("%-*s | %7lld | %8.1f | %9.1f | %9.1f | %9.1f | %-11s | %s\n", w, l.query.c_str(),
                static_cast<long long>(l.samples), l.mean_rows, l.p50_us, l.p99_us, l.max_us,
                "p99 < 20 ms", l.ok() ? "ok" : "over");
  }
  for (const auto& l : r.latencies) {
    if (l.samples < options.queries) {
      std::printf("%s: stopped after %lld s with %lld of %lld picks\n", l.query.c_str(),
                  static_cast<long long>(kQueryBudget.count()), static_cast<long long>(l.samples),
                  static_cast<long long>(options.queries));
    }
  }
  std::printf("\ntotal %.1f s\n", r.total_seconds);
}

void print_json(const Report& r, const Options& options) {
  nlohmann::json out = {{"kb", r.kb.string()},
                        {"seed", options.seed},
                        {"queries_per_kind", options.queries},
                        {"query_budget_s", kQueryBudget.count()},
                        {"runs", r.counts.runs},
                        {"db_bytes", r.db_bytes},
                        {"wal_bytes", r.wal_bytes},
                        {"file_bytes", r.db_bytes + r.wal_bytes},
                        {"total_seconds", r.total_seconds}};
  out["load"] = nlohmann::json::array();
  for (const auto& phase : r.load) {
    out["load"].push_back({{"phase", phase.name},
                           {"rows", phase.rows},
                           {"seconds", phase.seconds},
                           {"rows_per_s", phase.rows_per_s()}});
  }
  out["rows_per_table"] = nlohmann::json::object();
  for (const auto& [table, rows] : r.rows_per_table) out["rows_per_table"][table] = rows;
  out["queries"] = nlohmann::json::array();
  for (const auto& l : r.latencies) {
    out["queries"].push_back({{"query", l.query},
                              {"samples", l.samples},
                              {"mean_rows", l.mean_rows},
                              {"p50_us", l.p50_us},
                              {"p99_us", l.p99_us},
                              {"max_us", l.max_us},
                              {"target_p99_us", kTargetP99Us},
                              {"ok", l.ok()}});
  }
  std::cout << out.dump(2) << "\n";
}

// A fresh folder under the system temp dir, removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() {
    std::random_device entropy;
    for (;;) {
      path_ = fs::temp_directory_path() / ("mblast-kb-bench-" + std::to_string(entropy()));
      if (fs::create_directory(path_)) return;
    }
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

int main(int argc, char** argv) {
  try {
    // The KB logs each migration at info level, which would land in the middle of --json output.
    spdlog::set_level(spdlog::level::warn);
    const Options options = parse_args(argc, argv);
    std::optional<ScratchDir> scratch;
    fs::path kb_path;
    if (options.kb) {
      if (fs::exists(*options.kb)) {
        throw mblast::input_error("--kb " + options.kb->string() + " already exists",
                                  "kb_bench fills a fresh knowledge base; give a new path");
      }
      kb_path = *options.kb;
    } else {
      scratch.emplace();
      kb_path = scratch->path() / "kb.sqlite";
    }
    const Report report = run_bench(options, kb_path);
    if (options.json) {
      print_json(report, options);
    } else {
      print_table(report, options);
    }
    return 0;
  } catch (const mblast::Error& error) {
    std::cerr << "kb_bench: " << error.what() << "\n";
    if (!error.hint().empty()) std::cerr << "  hint: " << error.hint() << "\n";
    return static_cast<int>(error.code());
  } catch (const std::exception& error) {
    std::cerr << "kb_bench: " << error.what() << "\n";
    return 1;
  }
}
