// LLM settings: --llm, $MBLAST_LLM, the config file's [llm] and [prices] tables, the environment.
#include <spdlog/spdlog.h>
#include <toml++/toml.h>

#include <cstdlib>
#include <sstream>

#include "mblast/llm.hpp"

namespace mblast {

namespace {

namespace fs = std::filesystem;

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::string trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

fs::path default_config_path() {
  if (const std::string xdg = env_or_empty("XDG_CONFIG_HOME"); !xdg.empty()) {
    return fs::path(xdg) / "mblast" / "config.toml";
  }
  const std::string home = env_or_empty("HOME");
  return fs::path(home.empty() ? "." : home) / ".config" / "mblast" / "config.toml";
}

class ConfigReader {
 public:
  ConfigReader(fs::path path, const toml::table& root) : path_(std::move(path)), root_(root) {}

  void read(LlmSettings& settings, std::string& config_default) const {
    if (const auto* llm = table_at(root_, "llm", "[llm]")) read_llm(*llm, settings, config_default);
    if (const auto* prices = table_at(root_, "prices", "[prices]")) read_prices(*prices, settings);
  }

 private:
  Error bad(const std::string& what) const {
    return input_error("config file " + path_.string() + ": " + what,
                       "see `mblast llm ping --help` for the [llm] and [prices] keys");
  }

  const toml::table* table_at(const toml::table& parent, const std::string& key,
                              const std::string& label) const {
    const toml::node* node = parent.get(key);
    if (node == nullptr) return nullptr;
    if (!node->is_table()) throw bad(label + " must be a table");
    return node->as_table();
  }

  double number(const toml::node& node, const std::string& key, double min) const {
    const std::optional<double> value = node.value<double>();
    if (!value || *value < min) {
      throw bad(key + " must be a number" + (min > 0 ? " above 0" : " of at least 0"));
    }
    return *value;
  }

  static std::chrono::milliseconds seconds_to_ms(double seconds) {
    return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
  }

  void read_llm(const toml::table& llm, LlmSettings& settings, std::string& config_default) const {
    for (const auto& [key_node, node] : llm) {
      const std::string key(key_node.str());
      if (key == "default" || key == "actor" || key == "fix" || key == "critic" || key == "state") {
        const std::optional<std::string> spec = node.value<std::string>();
        if (!spec || trim(*spec).empty()) throw bad("[llm] " + key + " must be \"PROVIDER:MODEL\"");
        if (key == "default") {
          config_default = trim(*spec);
        } else {
          settings.per_role[key] = trim(*spec);
        }
      } else if (key == "connect_timeout_s") {
        settings.connect_timeout = seconds_to_ms(number(node, "[llm] " + key, 1e-3));
      } else if (key == "timeout_s") {
        settings.total_timeout = seconds_to_ms(number(node, "[llm] " + key, 1e-3));
      } else if (key == "max_retries") {
        const std::optional<std::int64_t> retries = node.value<std::int64_t>();
        if (!node.is_integer() || !retries || *retries < 0 || *retries > 100) {
          throw bad("[llm] max_retries must be an integer from 0 to 100");
        }
        settings.max_retries = static_cast<int>(*retries);
      } else if (key == "max_response_mb") {
        settings.max_response_bytes =
            static_cast<std::size_t>(number(node, "[llm] " + key, 1e-3) * 1024.0 * 1024.0);
      } else {
        spdlog::warn("config file {}: unknown key [llm] {} ignored", path_.string(), key);
      }
    }
  }

  void read_prices(const toml::table& prices, LlmSettings& settings) const {
    for (const auto& [key_node, node] : prices) {
      const std::string spec(key_node.str());
      const std::string label = "[prices.\"" + spec + "\"]";
      if (!node.is_table()) throw bad(label + " must be a table");
      const toml::table& entry = *node.as_table();
      const toml::node* input = entry.get("input_per_mtok");
      const toml::node* output = entry.get("output_per_mtok");
      if (input == nullptr || output == nullptr) {
        throw bad(label + " needs input_per_mtok and output_per_mtok (USD per million tokens)");
      }
      settings.prices[spec] = Price{number(*input, label + " input_per_mtok", 0),
                                    number(*output, label + " output_per_mtok", 0)};
    }
  }

  fs::path path_;
  const toml::table& root_;
};

void read_config(const std::optional<fs::path>& config_file, LlmSettings& settings,
                 std::string& config_default) {
  const fs::path path = config_file ? *config_file : default_config_path();
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (config_file) {
      throw input_error(
          "config file " + path.string() + " does not exist",
          "check the --config path, or leave it out to use " + default_config_path().string());
    }
    return;
  }
  toml::table root;
  try {
    root = toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    std::ostringstream where;
    where << e.source().begin;
    throw input_error("config file " + path.string() + " is not valid TOML at " + where.str() +
                          ": " + std::string(e.description()),
                      "fix the file; see `mblast llm ping --help` for its keys");
  }
  ConfigReader(path, root).read(settings, config_default);
}

}  // namespace

LlmSettings load_llm_settings(const std::optional<std::filesystem::path>& config_file,
                              const std::string& cli_spec) {
  LlmSettings settings;
  std::string config_default;
  read_config(config_file, settings, config_default);

  if (const std::string backoff = trim(env_or_empty("MBLAST_LLM_BACKOFF_MS")); !backoff.empty()) {
    char* end = nullptr;
    const long long ms = std::strtoll(backoff.c_str(), &end, 10);
    if (*end != '\0' || ms < 0) {
      throw input_error("MBLAST_LLM_BACKOFF_MS must be a whole number of milliseconds",
                        "unset it or give e.g. MBLAST_LLM_BACKOFF_MS=50");
    }
    settings.backoff_base = std::chrono::milliseconds(ms);
  }

  const std::string explicit_spec =
      !trim(cli_spec).empty() ? trim(cli_spec) : trim(env_or_empty("MBLAST_LLM"));
  if (!explicit_spec.empty()) {
    settings.default_spec = explicit_spec;
    settings.per_role.clear();
  } else if (!config_default.empty()) {
    settings.default_spec = config_default;
  } else if (!env_or_empty("OPENAI_API_KEY").empty()) {
    settings.default_spec = "openai:gpt-4o";
  } else if (!env_or_empty("ANTHROPIC_API_KEY").empty()) {
    settings.default_spec = "anthropic:claude-sonnet-4-5";
  } else {
    settings.default_spec = "none";
  }
  return settings;
}

std::string spec_for_role(const std::string& role, const LlmSettings& settings) {
  const auto it = settings.per_role.find(role);
  return it != settings.per_role.end() ? it->second : settings.default_spec;
}

void require_prices_for_cost_budget(const LlmSettings& settings) {
  std::vector<std::string> specs = {settings.default_spec};
  for (const auto& [role, spec] : settings.per_role) specs.push_back(spec);
  for (const std::string& spec : specs) {
    if (spec == "none" || spec.starts_with("replay:") || settings.prices.contains(spec)) continue;
    throw input_error("--max-cost needs a price for " + spec + ", and none is configured",
                      "add [prices.\"" + spec +
                          "\"] with input_per_mtok and output_per_mtok (USD per million tokens) "
                          "to the config file, or use --max-tokens instead");
  }
}

}  // namespace mblast
