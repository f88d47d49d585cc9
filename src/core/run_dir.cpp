#include "core/run_dir.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "mblast/error.hpp"
#include "mblast/files.hpp"
#include "mblast/json_fields.hpp"
#include "mblast/kb.hpp"

namespace mblast {

namespace fs = std::filesystem;

namespace {

constexpr const char* kConfig = "config.json";

Error io_error(const fs::path& path, const std::string& what) {
  return job_error("cannot " + what + " " + path.string() + ": " + std::strerror(errno),
                   "check that the run directory is writable and the disk is not full");
}

void write_all(int fd, const std::string& data, const fs::path& path) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const Error error = io_error(path, "write");
      ::close(fd);
      throw error;
    }
    done += static_cast<std::size_t>(n);
  }
}

// write_file_atomically that throws a job_error naming the file when it fails.
void write_run_file(const fs::path& path, const std::string& data) {
  if (const std::error_code ec = write_file_atomically(path, data)) {
    throw job_error("cannot write " + path.string() + ": " + ec.message(),
                    "check that the run directory is writable and the disk is not full");
  }
}

}  // namespace

void append_line(const fs::path& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw io_error(path, "open");
  write_all(fd, line + "\n", path);
  ::fsync(fd);
  ::close(fd);
}

std::vector<nlohmann::json> read_json_lines(const fs::path& path) {
  std::vector<nlohmann::json> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto row = nlohmann::json::parse(line, nullptr, false);
    if (row.is_object()) rows.push_back(std::move(row));
  }
  return rows;
}

RunDir RunDir::create(const fs::path& path) {
  if (fs::exists(path / kConfig)) {
    throw input_error("the run directory " + path.string() + " already holds a run",
                      "continue it with --resume " + path.string() + ", or pick another --out");
  }
  std::error_code ec;
  fs::create_directories(path / "candidates", ec);
  if (ec) {
    throw input_error("cannot create the run directory " + path.string() + ": " + ec.message(),
                      "pick a writable --out");
  }
  return RunDir(fs::absolute(path));
}

RunDir RunDir::open(const fs::path& path) {
  if (!fs::is_regular_file(path / kConfig)) {
    throw input_error(path.string() + " holds no mblast run (no " + std::string(kConfig) + ")",
                      "give --resume the --out directory of an earlier `mblast optimize`");
  }
  fs::create_directories(path / "candidates");
  return RunDir(fs::absolute(path));
}

void RunDir::write_config(const nlohmann::json& config) const {
  write_run_file(path_ / kConfig, config.dump(2) + "\n");
}

nlohmann::json RunDir::config() const {
  auto config = nlohmann::json::parse(read_file(path_ / kConfig).value_or(""), nullptr, false);
  if (!config.is_object()) {
    throw input_error((path_ / kConfig).string() + " is not valid JSON",
                      "the run directory is damaged; start a new run with --out");
  }
  return config;
}

std::vector<nlohmann::json> RunDir::steps() const { return read_json_lines(path_ / "steps.jsonl"); }

void RunDir::append_step(const nlohmann::json& step) const {
  append_line(path_ / "steps.jsonl",
              step.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

namespace {

// `folder`/<stem>-<hash12><extension>, written unless it is there.
fs::path save_source(const fs::path& folder, const std::string& stem, const std::string& source,
                     const std::string& extension) {
  const fs::path file = folder / (stem + "-" + sha256_hex(source).substr(0, 12) + extension);
  if (!fs::exists(file)) write_run_file(file, source);
  return file;
}

}  // namespace

fs::path RunDir::save_candidate(const std::string& stem, const std::string& source,
                                const std::string& extension) const {
  return save_source(path_ / "candidates", stem, source, extension);
}

fs::path RunDir::save_prebuilt(const std::string& stem, const std::string& source,
                               const std::string& extension) const {
  try {
    fs::create_directories(path_ / "prebuild");
    return save_source(path_ / "prebuild", stem, source, extension);
  } catch (const std::exception&) {
    return {};
  }
}

std::optional<EvalResult> RunDir::stored_result(const fs::path& candidate) const {
  fs::path file = candidate;
  file.replace_extension(".json");
  if (!fs::is_regular_file(file)) return std::nullopt;
  auto result = nlohmann::json::parse(read_file(file).value_or(""), nullptr, false);
  if (!result.is_object()) return std::nullopt;  // torn by a kill: judge again
  return EvalResult::from_json(result);
}

void RunDir::store_result(const fs::path& candidate, const EvalResult& result) const {
  fs::path file = candidate;
  file.replace_extension(".json");
  const nlohmann::json stored = result.to_json();
  write_run_file(file, stored.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  std::optional<double> seconds;  // the judge's own figure, kept among the result's other fields
  read_lenient(result.extra, "wall_seconds", seconds);
  append_line(path_ / "evaluations.jsonl",
              nlohmann::json{{"candidate", candidate.filename().string()},
                             {"correct", result.correct},
                             {"speedup", optional_json(result.speedup)},
                             {"error_kind", stored["error_kind"]},
                             {"seconds", optional_json(seconds)},
                             {"at", utc_now()}}
                  .dump());
}

std::vector<nlohmann::json> RunDir::evaluations() const {
  return read_json_lines(path_ / "evaluations.jsonl");
}

void RunDir::write_json(const std::string& name, const nlohmann::json& value) const {
  write_run_file(path_ / name,
                 value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

void RunDir::write_text(const std::string& name, const std::string& text) const {
  write_run_file(path_ / name, text);
}

}  // namespace mblast
