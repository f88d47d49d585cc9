#include "mblast/remote.hpp"

#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cstdlib>
#include <system_error>

#include "mblast/error.hpp"

namespace mblast {

namespace fs = std::filesystem;

namespace {

// Seconds of grace for ssh or adb themselves on top of the remote command's own timeout.
constexpr std::chrono::seconds kTransportGrace{30};

std::string joined(const std::vector<std::string>& argv) {
  std::string command;
  for (const auto& word : argv) command += (command.empty() ? "" : " ") + shell_quote(word);
  return command;
}

// The remote side runs `timeout -s KILL N CMD`: exit 137 there is the timeout or a SIGKILL, and
// a shell reports death by signal N as exit 128 + N.
ProcessResult as_remote_result(ProcessResult result, std::chrono::seconds timeout) {
  if (result.timed_out || result.term_signal != 0) return result;
  if (result.exit_code == 137 || result.exit_code == 124) {
    result.timed_out = true;
    result.timeout_seconds = static_cast<double>(timeout.count());
  } else if (result.exit_code > 128 && result.exit_code < 160) {
    result.term_signal = result.exit_code - 128;
  }
  return result;
}

ProcessResult checked(const std::vector<std::string>& argv, const std::string& what,
                      std::chrono::seconds timeout = std::chrono::seconds(120)) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.timeout = timeout;
  const ProcessResult result = run_process(spec);
  if (!result.ok()) {
    throw job_error(what + " failed (" + result.describe() + "): " + result.err,
                    "check that the target is reachable: " + joined(argv));
  }
  return result;
}

std::string first_line(const std::string& text) {
  const auto end = text.find_first_of("\r\n");
  return text.substr(0, end);
}

class LocalTarget final : public RemoteTarget {
 public:
  std::string name() const override { return "local"; }
  std::string make_workdir() override {
    std::string pattern = (fs::temp_directory_path() / "mblast-remote-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw job_error("cannot create a working folder under " + fs::temp_directory_path().string());
    }
    return pattern;
  }
  void push(const fs::path& local, const std::string& remote) override {
    fs::copy_file(local, remote, fs::copy_options::overwrite_existing);
  }
  ProcessResult run(const std::vector<std::string>& argv, std::chrono::seconds timeout) override {
    ProcessSpec spec;
    spec.argv = argv;
    spec.timeout = timeout;
    return run_process(spec);
  }
  void pull(const std::string& remote, const fs::path& local) override {
    fs::copy_file(remote, local, fs::copy_options::overwrite_existing);
  }
  void remove(const std::string& remote_dir) noexcept override {
    std::error_code ec;
    fs::remove_all(remote_dir, ec);
  }
};

class SshTarget final : public RemoteTarget {
 public:
  explicit SshTarget(std::string host) : host_(std::move(host)) {}
  std::string name() const override { return "ssh:" + host_; }
  std::string make_workdir() override {
    const auto result = checked(ssh({"mktemp", "-d", "/tmp/mblast-remote-XXXXXX"}), "ssh mktemp");
    return first_line(result.out);
  }
  void push(const fs::path& local, const std::string& remote) override {
    checked({"scp", "-q", "-B", local.string(), host_ + ":" + remote}, "scp to " + host_);
  }
  ProcessResult run(const std::vector<std::string>& argv, std::chrono::seconds timeout) override {
    std::vector<std::string> remote = {"timeout", "-s", "KILL", std::to_string(timeout.count())};
    remote.insert(remote.end(), argv.begin(), argv.end());
    ProcessSpec spec;
    spec.argv = ssh(remote);
    spec.timeout = timeout + kTransportGrace;
    return as_remote_result(run_process(spec), timeout);
  }
  void pull(const std::string& remote, const fs::path& local) override {
    checked({"scp", "-q", "-B", host_ + ":" + remote, local.string()}, "scp from " + host_);
  }
  void remove(const std::string& remote_dir) noexcept override {
    try {
      checked(ssh({"rm", "-rf", remote_dir}), "ssh rm");
    } catch (const std::exception& e) {
      spdlog::warn("could not remove {} on {}: {}", remote_dir, host_, e.what());
    }
  }

 private:
  std::vector<std::string> ssh(const std::vector<std::string>& argv) const {
    // BatchMode: fail at once instead of asking for a password nobody can type.
    return {"ssh", "-o", "BatchMode=yes", host_, joined(argv)};
  }
  std::string host_;
};

class AdbTarget final : public RemoteTarget {
 public:
  explicit AdbTarget(std::string serial) : serial_(std::move(serial)) {}
  std::string name() const override { return "adb:" + serial_; }
  std::string make_workdir() override {
    const char* base = std::getenv("MBLAST_ADB_TMP");  // devices where /data/local/tmp is not
    const std::string folder = base != nullptr && *base != '\0' ? base : "/data/local/tmp";
    const auto result =
        checked(adb({"shell", "mktemp", "-d", folder + "/mblast-XXXXXX"}), "adb mktemp");
    return first_line(result.out);
  }
  void push(const fs::path& local, const std::string& remote) override {
    checked(adb({"push", local.string(), remote}), "adb push");
  }
  ProcessResult run(const std::vector<std::string>& argv, std::chrono::seconds timeout) override {
    std::vector<std::string> remote = {"timeout", "-s", "KILL", std::to_string(timeout.count())};
    remote.insert(remote.end(), argv.begin(), argv.end());
    ProcessSpec spec;
    spec.argv = adb({"shell", joined(remote)});
    spec.timeout = timeout + kTransportGrace;
    return as_remote_result(run_process(spec), timeout);
  }
  void pull(const std::string& remote, const fs::path& local) override {
    checked(adb({"pull", remote, local.string()}), "adb pull");
  }
  void remove(const std::string& remote_dir) noexcept override {
    try {
      checked(adb({"shell", "rm", "-rf", remote_dir}), "adb rm");
    } catch (const std::exception& e) {
      spdlog::warn("could not remove {} on {}: {}", remote_dir, serial_, e.what());
    }
  }

 private:
  std::vector<std::string> adb(std::vector<std::string> args) const {
    args.insert(args.begin(), {"adb", "-s", serial_});
    return args;
  }
  std::string serial_;
};

}  // namespace

std::string shell_quote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-./:=@%+,") == std::string::npos) {
    return word;
  }
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::unique_ptr<RemoteTarget> make_remote_target(const std::string& spec) {
  if (spec.empty() || spec == "local") return std::make_unique<LocalTarget>();
  if (spec.rfind("ssh:", 0) == 0 && spec.size() > 4)
    return std::make_unique<SshTarget>(spec.substr(4));
  if (spec.rfind("adb:", 0) == 0 && spec.size() > 4)
    return std::make_unique<AdbTarget>(spec.substr(4));
  throw input_error("unknown remote target '" + spec + "'",
                    "use local, ssh:[USER@]HOST or adb:SERIAL");
}

}  // namespace mblast
