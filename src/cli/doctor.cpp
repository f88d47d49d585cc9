#include "cli/doctor.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

#include "mblast/error.hpp"
#include "mblast/kb.hpp"
#include "mblast/llm.hpp"
#include "mblast/process.hpp"
#include "mblast/python.hpp"
#include "opencl/opencl_device.hpp"

extern char** environ;

namespace mblast {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

constexpr const char* kNvcc = "nvcc";
constexpr const char* kGpu = "nvidia-gpu";
constexpr const char* kTorch = "python3-torch";
constexpr const char* kOpenCl = "opencl";
constexpr const char* kRvvToolchain = "rvv-toolchain";
constexpr const char* kQemuRvv = "qemu-rvv";
constexpr const char* kLlm = "llm";
constexpr const char* kKb = "kb";

constexpr const char* kRvvSysroot = "/usr/riscv64-linux-gnu";
constexpr const char* kQemuCpu = "rv64,v=true,vlen=256";
// Sum of i*i for i = 1..1000, and VLMAX for SEW=32, LMUL=1 at VLEN=256.
constexpr const char* kRvvExpected = "rvv-probe sum=333833500 vlmax_e32m1=8\n";

// Intrinsics whose signatures are the same in the v0.10 API (clang 14, unprefixed) and the
// ratified v0.12+ API (__riscv_ prefix), so one source serves both spellings.
constexpr const char* kRvvProbeSource = R"(#include <riscv_vector.h>
#include <stdio.h>
#if MBLAST_RVV_PREFIXED
#define RVV(name) __riscv_##name
#else
#define RVV(name) name
#endif
enum { kN = 1000 };
static int a[kN], c[kN];
int main(void) {
  for (int i = 0; i < kN; ++i) a[i] = i + 1;
  for (size_t i = 0, vl; i < kN; i += vl) {
    vl = RVV(vsetvl_e32m1)(kN - i);
    vint32m1_t v = RVV(vle32_v_i32m1)(a + i, vl);
    RVV(vse32_v_i32m1)(c + i, RVV(vmul_vv_i32m1)(v, v, vl), vl);
  }
  long sum = 0;
  for (int i = 0; i < kN; ++i) sum += c[i];
  printf("rvv-probe sum=%ld vlmax_e32m1=%zu\n", sum, RVV(vsetvlmax_e32m1)());
  return 0;
}
)";

DoctorCheck make_check(const char* name, bool required) {
  DoctorCheck check;
  check.name = name;
  check.required_for_cpu_backends = required;
  return check;
}

DoctorCheck& pass(DoctorCheck& check, std::string detail) {
  check.ok = true;
  check.detail = std::move(detail);
  check.fix.clear();
  return check;
}

DoctorCheck& fail(DoctorCheck& check, std::string detail, std::string fix) {
  check.ok = false;
  check.detail = std::move(detail);
  check.fix = std::move(fix);
  return check;
}

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "";
  const auto last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = trim(std::string_view(text).substr(begin, end - begin));
    if (!line.empty()) lines.push_back(std::move(line));
    begin = end + 1;
  }
  return lines;
}

// The word after `marker` in `text` (e.g. the version after "release "), or empty.
std::string word_after(const std::string& text, std::string_view marker) {
  const std::size_t at = text.find(marker);
  if (at == std::string::npos) return "";
  const std::size_t begin = at + marker.size();
  const std::size_t end = text.find_first_of(" ,\n", begin);
  return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// Runs a probe; a program that cannot start is reported like a failed run.
ProcessResult probe(std::vector<std::string> argv,
                    std::chrono::milliseconds timeout = seconds(10)) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.timeout = timeout;
  spec.max_output_bytes = 64 * 1024;
  try {
    return run_process(spec);
  } catch (const Error& error) {
    ProcessResult result;
    result.err = error.what();
    return result;
  }
}

// "exit 1: <the most telling line of its output>", short enough for one line of doctor output.
std::string failure_text(const ProcessResult& result, bool last_line = false) {
  std::vector<std::string> lines = lines_of(result.err);
  if (lines.empty()) lines = lines_of(result.out);
  std::string text = result.exit_code == -1 && !result.timed_out && result.term_signal == 0
                         ? ""
                         : result.describe();
  if (!lines.empty()) {
    std::string line = last_line ? lines.back() : lines.front();
    if (line.size() > 160) line = line.substr(0, 157) + "...";
    text += (text.empty() ? "" : ": ") + line;
  }
  return text;
}

std::optional<fs::path> find_tool(const std::string& name, const std::string& fallback_dir) {
  if (auto found = find_program(name)) return found;
  return find_program(fallback_dir + "/" + name);
}

DoctorCheck check_nvcc() {
  DoctorCheck check = make_check(kNvcc, false);
  const auto nvcc = find_tool("nvcc", "/usr/local/cuda/bin");
  const std::string fix =
      "install the CUDA toolkit and put its bin/ on PATH (only the cuda backend needs it)";
  if (!nvcc) return fail(check, "nvcc not found on PATH or in /usr/local/cuda/bin", fix);
  const ProcessResult result = probe({nvcc->string(), "--version"});
  const std::string version = word_after(result.out, "release ");
  if (!result.ok() || version.empty()) {
    return fail(check, nvcc->string() + " --version failed: " + failure_text(result), fix);
  }
  return pass(check, "CUDA " + version + " (" + nvcc->string() + ")");
}

DoctorCheck check_gpu() {
  DoctorCheck check = make_check(kGpu, false);
  const std::string fix =
      "run on a machine with an NVIDIA GPU and its driver (nvidia-smi); the opencl and rvv "
      "backends need no GPU";
  const auto smi = find_tool("nvidia-smi", "/usr/bin");
  if (!smi) return fail(check, "no NVIDIA GPU found: nvidia-smi is not installed", fix);
  const ProcessResult result = probe(
      {smi->string(), "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"});
  const std::vector<std::string> gpus = lines_of(result.out);
  if (!result.ok() || gpus.empty()) {
    return fail(check, "no NVIDIA GPU found: nvidia-smi: " + failure_text(result), fix);
  }
  std::vector<std::string> described;
  for (const std::string& gpu : gpus) {
    const std::size_t comma = gpu.find(',');
    described.push_back(comma == std::string::npos
                            ? gpu
                            : gpu.substr(0, comma) + " (driver" + gpu.substr(comma + 1) + ")");
  }
  if (std::all_of(described.begin(), described.end(),
                  [&](const std::string& d) { return d == described.front(); })) {
    return pass(check, std::to_string(described.size()) + " x " + described.front());
  }
  std::string detail;
  for (const std::string& d : described) detail += (detail.empty() ? "" : "; ") + d;
  return pass(check, detail);
}

DoctorCheck check_torch() {
  DoctorCheck check = make_check(kTorch, true);
  const std::string configured = env_or_empty("MBLAST_PYTHON");
  const std::vector<std::string> candidates = python_candidates();

  std::string tried;
  for (const std::string& python : candidates) {
    const ProcessResult result =
        probe({python, "-c", "import torch; print(torch.__version__, torch.cuda.is_available())"},
              seconds(60));
    const std::vector<std::string> words = lines_of(result.out);
    if (result.ok() && !words.empty()) {
      const std::string& line = words.back();
      const std::size_t space = line.find(' ');
      const bool cuda = line.ends_with("True");
      std::string detail = "torch " + line.substr(0, space) + ", CUDA " +
                           (cuda ? "available" : "not available") + " (" + python + ")";
      if (!configured.empty() && python != configured) {
        detail += "; MBLAST_PYTHON=" + configured + " cannot import torch";
      }
      return pass(check, detail);
    }
    tried += (tried.empty() ? "" : "; ") + python + ": " + failure_text(result, true);
  }
  return fail(check, "no Python that can import torch (" + tried + ")",
              "apt-get install python3-torch, or set MBLAST_PYTHON to a Python with PyTorch");
}

DoctorCheck check_opencl() {
  DoctorCheck check = make_check(kOpenCl, true);
  const std::string fix = "apt-get install ocl-icd-libopencl1 pocl-opencl-icd";
  std::vector<opencl::DeviceEntry> devices;
  try {
    devices = opencl::list_devices();
  } catch (const std::exception& e) {
    return fail(check, std::string("the OpenCL ICD loader failed: ") + e.what(), fix);
  }
  if (devices.empty()) {
    return fail(check, "no OpenCL platform with a device (no ICD in /etc/OpenCL/vendors)", fix);
  }
  std::string detail;
  for (const auto& d : devices) {
    detail += (detail.empty() ? "" : "; ") + std::string("device ") +
              std::to_string(d.platform_index) + ":" + std::to_string(d.device_index) + " (" +
              d.platform_name + "): " + d.name;
  }
  return pass(check, detail + "; choose one with --device P:D, cpu, gpu or part of its name");
}

// Builds the RVV probe into `dir`; on success `executable` names it.
DoctorCheck build_rvv_probe(const fs::path& dir, fs::path& executable) {
  DoctorCheck check = make_check(kRvvToolchain, true);
  const std::string fix = "apt-get install clang lld gcc-riscv64-linux-gnu libc6-dev-riscv64-cross";
  const auto clang = find_program("clang");
  if (!clang) return fail(check, "clang not found on PATH", fix);
  const std::string version = word_after(probe({clang->string(), "--version"}).out, "version ");

  const fs::path source = dir / "rvv_probe.c";
  std::ofstream(source) << kRvvProbeSource;
  std::vector<std::string> base = {clang->string(), "--target=riscv64-linux-gnu", "-march=rv64gcv",
                                   "-O2"};
  const bool sysroot = fs::is_directory(kRvvSysroot);
  if (sysroot) base.push_back(std::string("--sysroot=") + kRvvSysroot);

  const fs::path object = dir / "rvv_probe.o";
  std::string spelling;
  std::string compile_error;
  for (const bool prefixed : {true, false}) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), {"-Werror=implicit-function-declaration",
                             std::string("-DMBLAST_RVV_PREFIXED=") + (prefixed ? "1" : "0"), "-c",
                             source.string(), "-o", object.string()});
    const ProcessResult result = probe(argv, seconds(60));
    if (result.ok()) {
      spelling = prefixed ? "__riscv_-prefixed intrinsics (__riscv_vsetvl_e32m1)"
                          : "unprefixed intrinsics (vsetvl_e32m1)";
      break;
    }
    if (compile_error.empty()) compile_error = failure_text(result);
  }
  if (spelling.empty()) {
    return fail(check, "clang cannot compile RVV intrinsics: " + compile_error, fix);
  }

  const fs::path output = dir / "rvv_probe";
  std::string link_error;
  for (const char* linker : {"", "-fuse-ld=lld"}) {
    std::vector<std::string> argv = base;
    if (*linker != '\0') argv.push_back(linker);
    argv.insert(argv.end(), {"-static", object.string(), "-o", output.string()});
    const ProcessResult result = probe(argv, seconds(60));
    if (result.ok()) {
      executable = output;
      std::string detail = "clang " + version + ", " + spelling + ", static link";
      if (*linker != '\0') detail += std::string(" with ") + linker;
      if (sysroot) detail += std::string(", sysroot ") + kRvvSysroot;
      return pass(check, detail);
    }
    if (link_error.empty()) link_error = failure_text(result);
  }
  return fail(check, "cannot link a static riscv64 executable: " + link_error, fix);
}

DoctorCheck check_qemu(const fs::path& executable) {
  DoctorCheck check = make_check(kQemuRvv, true);
  const std::string fix = "apt-get install qemu-user (QEMU 7.0 or newer, for the vector extension)";
  const auto qemu = find_program("qemu-riscv64");
  if (!qemu) return fail(check, "qemu-riscv64 not found on PATH", fix);
  if (executable.empty()) {
    return fail(check, "not tested: the RVV probe did not build", "fix rvv-toolchain first");
  }
  const std::string version = word_after(probe({qemu->string(), "--version"}).out, "version ");
  const ProcessResult result =
      probe({qemu->string(), "-cpu", kQemuCpu, executable.string()}, seconds(30));
  if (!result.ok()) {
    return fail(check,
                "the RVV probe failed under qemu-riscv64 " + version + ": " + failure_text(result),
                fix);
  }
  if (result.out != kRvvExpected) {
    return fail(check,
                "the RVV probe printed a wrong result under qemu-riscv64 " + version + ": " +
                    trim(result.out),
                fix);
  }
  return pass(check, "qemu-riscv64 " + version + " -cpu " + kQemuCpu +
                         ": vector probe correct, VLMAX(e32,m1) = 8");
}

// Shows only provider:model, never what follows (a command line could carry a key).
std::string shown_spec(const std::string& spec) {
  const std::size_t colon = spec.find(':');
  std::string shown = spec.substr(0, colon);
  if (colon != std::string::npos) {
    const std::string rest = spec.substr(colon + 1);
    shown += ":" + rest.substr(0, std::min<std::size_t>(rest.find_first_of(" \t"), 60));
  }
  return shown;
}

// The same resolution `mblast llm ping` and `optimize` use: --llm, MBLAST_LLM, the config file,
// then a key in the environment.
DoctorCheck check_llm() {
  DoctorCheck check = make_check(kLlm, false);
  const std::string fix =
      "export OPENAI_API_KEY=... or ANTHROPIC_API_KEY=..., or --llm command:CMD; "
      "`mblast llm ping` tests the connection";
  LlmSettings settings;
  try {
    settings = load_llm_settings(std::nullopt, "");
  } catch (const Error& e) {
    return fail(check, std::string("LLM configuration unusable: ") + e.what(), e.hint());
  }
  if (settings.default_spec.empty() || settings.default_spec == "none") {
    return fail(check, "no LLM configured: optimize runs built-in techniques only", fix);
  }
  std::string source = "from the config file or an API key in the environment";
  if (!trim(env_or_empty("MBLAST_LLM")).empty()) source = "from MBLAST_LLM";
  return pass(check, shown_spec(settings.default_spec) + " (" + source + ")");
}

std::string errno_text(int error) {
  return std::error_code(error, std::generic_category()).message();
}

DoctorCheck check_kb(fs::path path) {
  DoctorCheck check = make_check(kKb, true);
  if (path.empty()) path = default_kb_path();
  path = fs::absolute(path);
  const std::string fix = "pass --kb PATH or set MBLAST_KB to a file in a writable directory";
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (exists && fs::is_directory(path, ec))
    return fail(check, path.string() + " is a directory", fix);
  if (exists && ::access(path.c_str(), R_OK | W_OK) != 0) {
    return fail(check, path.string() + " is not readable and writable: " + errno_text(errno), fix);
  }

  // Create missing directories to prove they can be, then remove them again.
  std::vector<fs::path> created;
  const auto remove_created = [&] {
    for (auto it = created.rbegin(); it != created.rend(); ++it) fs::remove(*it, ec);
  };
  std::vector<fs::path> missing;
  for (fs::path dir = path.parent_path(); !fs::exists(dir, ec); dir = dir.parent_path()) {
    missing.push_back(dir);
    if (dir == dir.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (!fs::create_directory(*it, ec) || ec) {
      remove_created();
      return fail(check, "cannot create directory " + it->string() + ": " + ec.message(), fix);
    }
    created.push_back(*it);
  }
  std::string probe_file = (path.parent_path() / ".mblast-doctor-XXXXXX").string();
  const int fd = ::mkstemp(probe_file.data());
  const int error = errno;
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe_file.c_str());
  }
  remove_created();
  if (fd < 0) {
    return fail(check, "cannot write in " + path.parent_path().string() + ": " + errno_text(error),
                fix);
  }
  if (!exists) return pass(check, path.string() + " (will be created)");
  return pass(check,
              path.string() + " (" + std::to_string(fs::file_size(path, ec) / 1024) + " KiB)");
}

// Belt and braces: no value of a secret-looking variable may appear in doctor output.
void redact_secrets(std::vector<DoctorCheck>& checks) {
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::size_t eq = text.find('=');
    if (eq == std::string_view::npos || !is_secret_env_name(std::string(text.substr(0, eq)))) {
      continue;
    }
    const std::string value(text.substr(eq + 1));
    if (value.size() < 6) continue;
    for (DoctorCheck& check : checks) {
      for (std::string* field : {&check.detail, &check.fix}) {
        for (std::size_t at; (at = field->find(value)) != std::string::npos;) {
          field->replace(at, value.size(), "***");
        }
      }
    }
  }
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "mblast-doctor-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

const std::vector<std::string>& doctor_check_names() {
  static const std::vector<std::string> names = {kNvcc,         kGpu,     kTorch, kOpenCl,
                                                 kRvvToolchain, kQemuRvv, kLlm,   kKb};
  return names;
}

std::vector<DoctorCheck> run_doctor(const DoctorOptions& options) {
  const auto& names = doctor_check_names();
  for (const std::string& name : options.only) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
      throw input_error("unknown doctor check '" + name + "'", "the checks are: " + known);
    }
  }
  const auto wanted = [&](const char* name) {
    return options.only.empty() ||
           std::find(options.only.begin(), options.only.end(), name) != options.only.end();
  };

  std::vector<DoctorCheck> checks;
  if (wanted(kNvcc)) checks.push_back(check_nvcc());
  if (wanted(kGpu)) checks.push_back(check_gpu());
  if (wanted(kTorch)) checks.push_back(check_torch());
  if (wanted(kOpenCl)) checks.push_back(check_opencl());
  if (wanted(kRvvToolchain) || wanted(kQemuRvv)) {
    const TempDir dir;
    fs::path executable;
    DoctorCheck toolchain = make_check(kRvvToolchain, true);
    if (dir.path().empty()) {
      fail(toolchain,
           "cannot create a temporary directory in " + fs::temp_directory_path().string(),
           "set TMPDIR to a writable directory");
    } else {
      toolchain = build_rvv_probe(dir.path(), executable);
    }
    if (wanted(kRvvToolchain)) checks.push_back(std::move(toolchain));
    if (wanted(kQemuRvv)) checks.push_back(check_qemu(executable));
  }
  if (wanted(kLlm)) checks.push_back(check_llm());
  if (wanted(kKb)) checks.push_back(check_kb(options.kb_path));
  redact_secrets(checks);
  return checks;
}

nlohmann::json doctor_to_json(const std::vector<DoctorCheck>& checks) {
  nlohmann::json list = nlohmann::json::array();
  bool ok = true;
  for (const DoctorCheck& check : checks) {
    list.push_back({{"name", check.name},
                    {"ok", check.ok},
                    {"detail", check.detail},
                    {"fix", check.fix},
                    {"required", check.required_for_cpu_backends}});
    if (check.required_for_cpu_backends && !check.ok) ok = false;
  }
  return {{"checks", std::move(list)}, {"ok", ok}};
}

std::string doctor_to_text(const std::vector<DoctorCheck>& checks) {
  std::string text;
  for (const DoctorCheck& check : checks) {
    std::string status = check.ok ? "ok" : "missing";
    std::string name = check.name;
    status.resize(std::max<std::size_t>(status.size() + 1, 9), ' ');
    name.resize(std::max<std::size_t>(name.size() + 1, 16), ' ');
    text += status + name + check.detail;
    if (!check.ok && !check.fix.empty()) text += " -> fix: " + check.fix;
    text += '\n';
  }
  return text;
}

}  // namespace mblast
