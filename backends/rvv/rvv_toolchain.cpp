#include "rvv_toolchain.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "mblast/embedded.hpp"
#include "mblast/error.hpp"
#include "mblast/process.hpp"
#include "mblast/support.hpp"
#include "rvv_elf.hpp"

namespace mblast::embedded::rvv {
const std::vector<EmbeddedFile>& files();  // backends/rvv/runtime/
}  // namespace mblast::embedded::rvv

namespace mblast::rvv {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSysroot = "/usr/riscv64-linux-gnu";
constexpr const char* kInstall =
    "apt-get install clang lld gcc-riscv64-linux-gnu libc6-dev-riscv64-cross qemu-user";
// Sections whose code would run before mblast_begin, outside the cost window.
constexpr const char* kEarlySections[] = {".init_array", ".preinit_array", ".ctors"};
constexpr std::uint8_t kSttGnuIfunc = 10;

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::optional<Toolchain> detect(std::string& why) {
  Toolchain tools;
  const auto clang = find_program("clang");
  const auto qemu = find_program("qemu-riscv64");
  auto objcopy = find_program("riscv64-linux-gnu-objcopy");
  if (!objcopy) objcopy = find_program("llvm-objcopy");
  if (!clang || !qemu || !objcopy) {
    why = std::string(!clang  ? "clang"
                      : !qemu ? "qemu-riscv64"
                              : "an objcopy for riscv64") +
          " is not on PATH";
    return std::nullopt;
  }
  tools.clang = *clang;
  tools.qemu = *qemu;
  tools.objcopy = *objcopy;
  if (fs::is_directory(kSysroot)) tools.sysroot = kSysroot;
  ProcessSpec spec;
  spec.argv = {clang->string(), "--version"};
  spec.timeout = std::chrono::seconds(30);
  const ProcessResult version = run_process(spec);
  if (!version.ok()) {
    why = "clang --version failed: " + version.describe();
    return std::nullopt;
  }
  tools.clang_version = first_line(version.out);
  return tools;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out) throw job_error("cannot write " + path.string(), "check free space and permissions");
}

std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  return std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

class Builder {
 public:
  Builder(const Toolchain& tools, const BuildRequest& request, fs::path dir)
      : tools_(tools), request_(request), dir_(std::move(dir)) {}

  // Returns the failing step's log, or "" when the executable was linked.
  std::string run() {
    write_text(dir_ / "mblast_rvv.h", runtime_file("mblast_rvv.h"));
    write_text(dir_ / "harness.c", runtime_file("harness.c"));
    write_text(dir_ / "candidate.c", request_.source);
    std::vector<std::string> compile = request_.flags;
    compile.insert(compile.end(), {"-I", dir_.string(), "-c", (dir_ / "candidate.c").string(), "-o",
                                   (dir_ / "candidate.o").string()});
    if (auto log = step(compile); !log.empty()) return log;
    if (auto log = early_code((dir_ / "candidate.o")); !log.empty()) return log;
    // Only mblast_forward stays global, so that no candidate function replaces one of libc's
    // or the harness's (which could then do work outside the cost window).
    if (auto log = tool({tools_.objcopy.string(), "--keep-global-symbol=mblast_forward",
                         (dir_ / "candidate.o").string()});
        !log.empty()) {
      return log;
    }
    if (auto log = step({"-O2", "-march=rv64gc", "-I", dir_.string(), "-c",
                         (dir_ / "harness.c").string(), "-o", (dir_ / "harness.o").string()});
        !log.empty()) {
      return "the mblast harness does not compile:\n" + log;
    }
    return step({"-static", (dir_ / "candidate.o").string(), (dir_ / "harness.o").string(), "-lm",
                 "-o", (dir_ / "candidate").string()});
  }

 private:
  std::string step(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {tools_.clang.string(), "--target=riscv64-linux-gnu"};
    if (!tools_.sysroot.empty()) argv.push_back("--sysroot=" + tools_.sysroot.string());
    argv.insert(argv.end(), args.begin(), args.end());
    return tool(argv);
  }

  std::string tool(const std::vector<std::string>& argv) {
    ProcessSpec spec;
    spec.argv = argv;
    spec.cwd = dir_;
    spec.timeout = request_.timeout;
    const ProcessResult result = run_process(spec);
    if (result.ok()) return {};
    std::string log = result.err + result.out;
    if (result.timed_out || log.empty()) log += argv.front() + ": " + result.describe() + "\n";
    return log;
  }

  static std::string early_code(const fs::path& object) {
    const ElfFile elf = read_elf(object);
    for (const auto& name : elf.section_names) {
      for (const char* early : kEarlySections) {
        if (name.starts_with(early)) {
          return "candidate.c: error: it defines code that runs before mblast_forward (section " +
                 name + ", e.g. a constructor); do all work inside mblast_forward\n";
        }
      }
    }
    for (const auto& symbol : elf.symbols) {
      if (symbol.type == kSttGnuIfunc) {
        return "candidate.c: error: " + symbol.name +
               " is an ifunc, whose resolver runs before mblast_forward; use a plain function\n";
      }
    }
    return {};
  }

  const Toolchain& tools_;
  const BuildRequest& request_;
  fs::path dir_;
};

}  // namespace

std::optional<Toolchain> find_toolchain(std::string* why) {
  static std::string reason;
  static const std::optional<Toolchain> tools = detect(reason);
  if (!tools && why) *why = reason;
  return tools;
}

const Toolchain& require_toolchain() {
  static std::string why;
  static const std::optional<Toolchain> tools = find_toolchain(&why);
  if (!tools) throw input_error("the RVV backend cannot run here: " + why, kInstall);
  return *tools;
}

std::string_view runtime_file(std::string_view name) {
  for (const auto& file : ::mblast::embedded::rvv::files()) {
    if (file.path == name) return file.contents;
  }
  throw job_error("mblast was built without the RVV runtime file " + std::string(name));
}

Build build_candidate(const BuildRequest& request) {
  const Toolchain& tools = require_toolchain();
  const auto start = std::chrono::steady_clock::now();
  std::string material = tools.clang_version + '\0' + tools.sysroot.string() + '\0';
  for (const auto& flag : request.flags) material += flag + '\0';
  material += std::string(runtime_file("mblast_rvv.h")) + '\0' +
              std::string(runtime_file("harness.c")) + '\0' + request.source;
  Build build;
  build.key = sha256_hex(material).substr(0, 32);
  const fs::path dir = request.cache_dir / build.key;
  build.executable = dir / "candidate";

  const fs::path record = dir / "build.json";
  if (!fs::is_regular_file(record)) {
    const fs::path staging = request.cache_dir / (build.key + ".tmp-" + unique_suffix());
    fs::create_directories(staging);
    const std::string log = Builder(tools, request, staging).run();
    write_text(staging / "build.json", nlohmann::json{{"ok", log.empty()}, {"log", log}}.dump());
    std::error_code ec;
    fs::rename(staging, dir, ec);
    if (ec) fs::remove_all(staging, ec);  // another process finished the same build first
  } else {
    build.cached = true;
  }
  const auto result = nlohmann::json::parse(read_text(record), nullptr, false);
  if (!result.is_object() || !result.contains("ok")) {
    throw job_error("the RVV build cache entry " + dir.string() + " is damaged",
                    "delete that folder and run again");
  }
  build.ok = result["ok"].get<bool>();
  build.log = result.value("log", "");
  build.seconds = seconds_since(start);
  return build;
}

fs::path build_check_plugin(const fs::path& cache_dir, std::chrono::seconds timeout) {
  const Toolchain& tools = require_toolchain();
  const std::string_view source = runtime_file("qemu_check_plugin.c");
  const std::string key =
      sha256_hex(tools.clang_version + '\0' + std::string(source)).substr(0, 16);
  const fs::path plugin = cache_dir / ("check-plugin-" + key + ".so");
  if (fs::is_regular_file(plugin)) return plugin;
  fs::create_directories(cache_dir);
  const fs::path staging = cache_dir / ("check-plugin-" + key + ".tmp-" + unique_suffix());
  fs::create_directories(staging);
  write_text(staging / "plugin.c", source);
  ProcessSpec spec;
  spec.argv = {tools.clang.string(),
               "-shared",
               "-fPIC",
               "-O2",
               "-o",
               (staging / "plugin.so").string(),
               (staging / "plugin.c").string()};
  spec.timeout = timeout;
  const ProcessResult result = run_process(spec);
  std::error_code ec;
  if (result.ok()) fs::rename(staging / "plugin.so", plugin, ec);
  fs::remove_all(staging, ec);
  if (!fs::is_regular_file(plugin)) {
    throw job_error("the cost check's QEMU plugin does not build for this host: " +
                        result.describe() + "\n" + result.err + result.out,
                    "check that clang can build host shared libraries (apt-get install clang)");
  }
  return plugin;
}

}  // namespace mblast::rvv
