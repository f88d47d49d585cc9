#include "cuda/cuda_build.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "mblast/error.hpp"
#include "mblast/files.hpp"
#include "mblast/process.hpp"
#include "mblast/support.hpp"

namespace mblast {
namespace fs = std::filesystem;

namespace {

// How candidate CUDA is built. This file is the one nvcc driver: the worker's mblast_cuda.load()
// builds what the driver could not pre-build through `mblast internal cuda-build`.
struct BuildRecipe {
  std::vector<std::string> base_flags, trailing_flags;
  std::string gencode, helper_suffix;
};

const BuildRecipe& recipe() {
  static const BuildRecipe r{
      {"-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC"},
      // -z defs: an undefined symbol fails the build here rather than the dlopen in the worker.
      {"-lineinfo", "-Xlinker", "-z,defs"},
      "arch=compute_{code},code=[sm_{code},compute_{code}]",
      // The library's own CUDA runtime is linked statically, so only code inside the library can
      // read its launch errors: every source gets these helpers (and is hashed with them).
      "\n// Appended by mblast: reads launch errors through this library's own CUDA runtime.\n"
      "extern \"C\" int mblast_last_error(void) { return (int)cudaGetLastError(); }\n"
      "extern \"C\" const char* mblast_error_string(int e) {\n"
      "  return cudaGetErrorString((cudaError_t)e);\n}\n"};
  return r;
}

std::string normalize_newlines(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

bool is_string_prefix(const std::string& word) {
  return word.size() <= 2 && word.find_first_not_of("rRbBuUfF") == std::string::npos;
}

struct PyString {
  std::size_t end = 0;  // index after the literal
  bool triple = false;
  bool closed = false;
  std::string content;  // between the delimiters, as written
};

// The Python string literal whose opening quote is text[start].
PyString scan_string(const std::string& text, std::size_t start) {
  PyString literal;
  const char quote = text[start];
  const std::string triple_quote(3, quote);
  literal.triple = text.compare(start, 3, triple_quote) == 0;
  const std::size_t delimiter = literal.triple ? 3 : 1;
  std::size_t i = start + delimiter;
  const std::size_t begin = i;
  while (i < text.size()) {
    if (text[i] == '\\') {
      i += 2;  // an escaped quote never ends a literal, raw or not
      continue;
    }
    if (literal.triple ? text.compare(i, 3, triple_quote) == 0 : text[i] == quote) {
      literal.closed = true;
      break;
    }
    if (!literal.triple && text[i] == '\n') break;
    ++i;
  }
  i = std::min(i, text.size());
  literal.content = text.substr(begin, i - begin);
  literal.end = literal.closed ? i + delimiter : i;
  return literal;
}

bool valid_arch(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return false;
  std::size_t i = 3;
  while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])) != 0) ++i;
  if (i == 3) return false;
  return i == arch.size() ||
         (i + 1 == arch.size() && std::islower(static_cast<unsigned char>(arch[i])) != 0);
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

std::string key_for(const std::string& text, const std::vector<std::string>& flags,
                    const std::string& arch) {
  std::string material = text;
  material += '\0';
  material += join(flags, " ");
  material += '\0';
  material += arch;
  return sha256_hex(material);
}

// The file written whole or not at all (a reader never sees it half-written).
void write_atomic(const fs::path& path, const std::string& data) {
  if (write_file_atomically(path, data)) {
    throw job_error("cannot create " + path.string(), "check free space and permissions");
  }
}

bool writable(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  return !ec && ::access(dir.c_str(), W_OK) == 0;
}

}  // namespace

std::vector<std::string> extract_cuda_sources(const std::string& python_text) {
  const std::string text = normalize_newlines(python_text);
  std::vector<std::string> sources;
  std::size_t i = 0;
  std::string prefix;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '#') {
      i = text.find('\n', i);
      if (i == std::string::npos) break;
      continue;
    }
    if (is_ident_char(c)) {
      const std::size_t start = i;
      while (i < text.size() && is_ident_char(text[i])) ++i;
      prefix = text.substr(start, i - start);
      if (i < text.size() && (text[i] == '"' || text[i] == '\'') && is_string_prefix(prefix)) {
        continue;  // the quote is read next, with this prefix
      }
      prefix.clear();
      continue;
    }
    if (c == '"' || c == '\'') {
      PyString literal = scan_string(text, i);
      i = literal.end;
      const bool raw = prefix.find_first_of("rR") != std::string::npos;
      const bool transformed = prefix.find_first_of("bBfF") != std::string::npos ||
                               (!raw && literal.content.find('\\') != std::string::npos);
      if (literal.triple && literal.closed && !transformed &&
          literal.content.find("__global__") != std::string::npos) {
        sources.push_back(std::move(literal.content));
      }
      prefix.clear();
      continue;
    }
    prefix.clear();
    ++i;
  }
  return sources;
}

fs::path default_cuda_cache_dir() {
  if (const char* dir = std::getenv("MBLAST_CUDA_CACHE"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr && *home != '\0' ? home : ".") / ".cache" / "mblast" / "cuda";
}

std::vector<std::string> cuda_nvcc_flags(const std::string& arch,
                                         const std::vector<std::string>& extra_flags) {
  if (!valid_arch(arch)) {
    throw input_error("CUDA architecture '" + arch + "' is not of the form sm_90 / sm_90a",
                      "set MBLAST_CUDA_ARCH to the GPU's sm_XY, e.g. sm_90 for an H100/H200");
  }
  const std::string code = arch.substr(3);
  std::vector<std::string> flags = recipe().base_flags;
  flags.push_back("-gencode");
  std::string gencode = recipe().gencode;
  for (std::size_t at; (at = gencode.find("{code}")) != std::string::npos;)
    gencode.replace(at, 6, code);
  flags.push_back(gencode);
  flags.insert(flags.end(), recipe().trailing_flags.begin(), recipe().trailing_flags.end());
  flags.insert(flags.end(), extra_flags.begin(), extra_flags.end());
  return flags;
}

std::string cuda_final_source(const std::string& source) { return source + recipe().helper_suffix; }

std::string cuda_cache_key(const std::string& source, const std::string& arch,
                           const std::vector<std::string>& extra_flags) {
  return key_for(cuda_final_source(source), cuda_nvcc_flags(arch, extra_flags), arch);
}

CudaBuildResult build_cuda_source(const std::string& source, const CudaBuildOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> flags = cuda_nvcc_flags(options.arch, options.extra_flags);
  const std::string text = cuda_final_source(source);
  CudaBuildResult result;
  result.key = key_for(text, flags, options.arch);
  fs::path dir = options.cache_dir.empty() ? default_cuda_cache_dir() : options.cache_dir;
  const auto cached = [&] {
    result.artifact = dir / (result.key + ".so");
    if (!fs::is_regular_file(result.artifact)) return false;
    result.ok = result.cached = true;
    result.log = read_file(dir / (result.key + ".log")).value_or("");
    result.seconds = seconds_since(start);
    return true;
  };
  if (cached()) return result;
  if (!options.fallback_dir.empty() && !writable(dir)) {
    dir = options.fallback_dir;
    if (cached()) return result;
  }
  const fs::path log_path = dir / (result.key + ".log");

  std::optional<fs::path> nvcc = options.nvcc.empty() ? find_nvcc() : options.nvcc;
  if (!nvcc) {
    throw job_error("nvcc not found",
                    "install the CUDA toolkit, put nvcc on PATH or set MBLAST_NVCC to its path");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw job_error("cannot create the CUDA cache " + dir.string() + ": " + ec.message(),
                    "set MBLAST_CUDA_CACHE to a writable folder");
  }
  const fs::path source_path = dir / (result.key + ".cu");
  write_atomic(source_path, text);
  const fs::path tmp = temporary_sibling(dir / result.key).string() + ".so";

  ProcessSpec spec;
  spec.argv.push_back(nvcc->string());
  spec.argv.insert(spec.argv.end(), flags.begin(), flags.end());
  spec.argv.insert(spec.argv.end(), {"-o", tmp.string(), source_path.string()});
  spec.cwd = dir;
  spec.timeout = options.timeout;
  const ProcessResult run = run_process(spec);

  result.log = run.out + run.err;
  if (run.timed_out || run.term_signal != 0) result.log += "\nnvcc " + run.describe() + "\n";
  result.ok = run.ok() && fs::is_regular_file(tmp);
  if (run.ok() && !result.ok) result.log += "\nnvcc exited 0 but wrote no shared object\n";
  write_atomic(log_path, result.log);
  if (result.ok) {
    fs::rename(tmp, result.artifact, ec);
    if (ec) throw job_error("cannot create " + result.artifact.string() + ": " + ec.message());
  } else {
    fs::remove(tmp, ec);
  }
  result.seconds = seconds_since(start);
  return result;
}

std::vector<CudaBuildResult> build_all(const std::vector<std::string>& sources,
                                       const CudaBuildOptions& options) {
  // A source given twice is built once: two writers of one key would only waste a core.
  std::map<std::string_view, std::size_t> first_index;
  std::vector<std::size_t> owner(sources.size());
  std::vector<std::size_t> unique;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const auto [it, inserted] = first_index.emplace(sources[i], i);
    owner[i] = it->second;
    if (inserted) unique.push_back(i);
  }

  std::vector<CudaBuildResult> results(sources.size());
  const unsigned hardware = std::max(1U, std::thread::hardware_concurrency());
  const std::size_t jobs =
      std::min<std::size_t>(options.jobs != 0 ? options.jobs : hardware, unique.size());
  std::atomic<std::size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;
  auto work = [&] {
    for (std::size_t k = next++; k < unique.size(); k = next++) {
      try {
        results[unique[k]] = build_cuda_source(sources[unique[k]], options);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> workers;
  for (std::size_t j = 0; j < jobs; ++j) workers.emplace_back(work);
  for (std::thread& worker : workers) worker.join();
  if (error) std::rethrow_exception(error);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (owner[i] != i) results[i] = results[owner[i]];
  }
  return results;
}

std::optional<fs::path> find_nvcc() {
  if (const char* env = std::getenv("MBLAST_NVCC"); env != nullptr && *env != '\0') {
    return find_program(env);
  }
  if (auto found = find_program("nvcc")) return found;
  return find_program("/usr/local/cuda/bin/nvcc");
}

std::string detect_cuda_arch() {
  if (const auto smi = find_program("nvidia-smi")) {
    ProcessSpec spec;
    spec.argv = {smi->string(), "--query-gpu=compute_cap", "--format=csv,noheader"};
    spec.timeout = std::chrono::seconds(15);
    try {
      const ProcessResult run = run_process(spec);
      std::string line = run.out.substr(0, run.out.find('\n'));
      line.erase(std::remove_if(line.begin(), line.end(),
                                [](unsigned char ch) { return std::isspace(ch) != 0; }),
                 line.end());
      const std::size_t dot = line.find('.');
      if (run.ok() && dot != std::string::npos) {
        const std::string arch = "sm_" + line.substr(0, dot) + line.substr(dot + 1);
        if (valid_arch(arch)) return arch;
      }
    } catch (const Error&) {
      // nvidia-smi present but not runnable: fall through to the configured default
    }
  }
  if (const char* env = std::getenv("MBLAST_CUDA_ARCH"); env != nullptr && *env != '\0') {
    return env;
  }
  return "sm_90";
}

int run_cuda_build_child(std::istream& source, std::ostream& out, const std::string& arch,
                         const std::vector<std::string>& extra_flags) {
  std::ostringstream text;
  text << source.rdbuf();
  CudaBuildOptions options;
  options.arch = arch.empty() ? detect_cuda_arch() : arch;
  options.extra_flags = extra_flags;
  options.cache_dir = default_cuda_cache_dir();
  // A sandboxed worker reads the judge's cache but cannot write it (nor should candidate code):
  // what is not there yet is built in the worker's own temporary folder.
  options.fallback_dir = fs::temp_directory_path() / "mblast-cuda";
  const CudaBuildResult result = build_cuda_source(text.str(), options);
  out << nlohmann::json{{"key", result.key}, {"artifact", result.artifact.string()},
                        {"ok", result.ok},   {"cached", result.cached},
                        {"log", result.log}, {"seconds", result.seconds}}
             .dump()
      << "\n";
  return result.ok ? 0 : 1;
}

}  // namespace mblast
