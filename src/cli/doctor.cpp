#include "mblast/doctor.hpp"

#include <fmt/ranges.h>
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

#include "backend_registry.hpp"
#include "mblast/backend.hpp"
#include "mblast/error.hpp"
#include "mblast/kb.hpp"
#include "mblast/llm.hpp"
#include "mblast/probe.hpp"
#include "mblast/process.hpp"
#include "mblast/python.hpp"

extern char** environ;

namespace mblast {
namespace {

namespace fs = std::filesystem;
using namespace probing;
using std::chrono::seconds;

constexpr const char* kTorch = "python3-torch";
constexpr const char* kLlm = "llm";
constexpr const char* kKb = "kb";

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
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

}  // namespace

const std::vector<std::string>& doctor_check_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all = {kTorch};
    for (const auto& row : backend_registry()) {
      for (const auto& name : row.doctor_names()) all.push_back(name);
    }
    all.insert(all.end(), {kLlm, kKb});
    return all;
  }();
  return names;
}

std::vector<DoctorCheck> run_doctor(const DoctorOptions& options) {
  const auto& names = doctor_check_names();
  for (const std::string& name : options.only) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      throw input_error("unknown doctor check '" + name + "'",
                        fmt::format("the checks are: {}", fmt::join(names, ", ")));
    }
  }
  const auto wanted = [&](const std::string& name) {
    return options.only.empty() ||
           std::find(options.only.begin(), options.only.end(), name) != options.only.end();
  };

  std::vector<DoctorCheck> checks;
  if (wanted(kTorch)) checks.push_back(check_torch());
  for (const auto& row : backend_registry()) {
    for (auto& check : row.doctor(wanted)) checks.push_back(std::move(check));
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
