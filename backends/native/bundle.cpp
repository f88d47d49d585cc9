#include "native/bundle.hpp"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "mblast/error.hpp"
#include "mblast/process.hpp"
#include "mblast/python.hpp"
#include "mblast/support.hpp"

namespace mblast {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'M', 'B', 'T', 'B', 'N', 'D', 'L', '1'};
// Part of the cache key: bundles cached before meta.json carried eager.widen_floor are remade.
constexpr const char* kMetaVersion = "/meta-v2";

class Reader {
 public:
  Reader(std::string data, fs::path path) : data_(std::move(data)), path_(std::move(path)) {}

  template <typename T>
  T read() {
    T value{};
    need(sizeof(T));
    std::memcpy(&value, data_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return value;
  }
  std::string read_string(std::size_t n) {
    need(n);
    std::string s = data_.substr(offset_, n);
    offset_ += n;
    return s;
  }
  void align8() { offset_ = (offset_ + 7) / 8 * 8; }
  void read_bytes(std::vector<std::byte>& out, std::size_t n) {
    need(n);
    out.resize(n);
    std::memcpy(out.data(), data_.data() + offset_, n);
    offset_ += n;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw input_error("the tensor bundle " + path_.string() + " is not valid: " + what,
                      "make it again (delete the bundle cache folder)");
  }

 private:
  void need(std::size_t n) const {
    if (offset_ + n > data_.size()) fail("it ends early");
  }
  std::string data_;
  fs::path path_;
  std::size_t offset_ = 0;
};

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

double value_at(const Tensor& t, std::int64_t i) {
  const auto index = static_cast<std::size_t>(i);
  switch (t.dtype) {
    case DType::f32:
      return static_cast<double>(reinterpret_cast<const float*>(t.data.data())[index]);
    case DType::f64:
      return reinterpret_cast<const double*>(t.data.data())[index];
    case DType::i32:
      return reinterpret_cast<const std::int32_t*>(t.data.data())[index];
    case DType::i64:
      return static_cast<double>(reinterpret_cast<const std::int64_t*>(t.data.data())[index]);
    case DType::u8:
      return static_cast<double>(std::to_integer<unsigned>(t.data[index]));
  }
  return 0;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + ")";
}

nlohmann::json unravel(std::int64_t flat, const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return index;
}

}  // namespace

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::u8:
      return 1;
  }
  return 1;
}

std::string dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "float32";
    case DType::f64:
      return "float64";
    case DType::i32:
      return "int32";
    case DType::i64:
      return "int64";
    case DType::u8:
      return "uint8";
  }
  return "?";
}

std::int64_t Tensor::numel() const {
  std::int64_t n = 1;
  for (auto size : shape) n *= size;
  return n;
}

std::vector<double> Tensor::as_f64() const {
  std::vector<double> values(static_cast<std::size_t>(numel()));
  for (std::int64_t i = 0; i < numel(); ++i)
    values[static_cast<std::size_t>(i)] = value_at(*this, i);
  return values;
}

std::vector<const Tensor*> Bundle::with_role(TensorRole role) const {
  std::vector<const Tensor*> found;
  for (const auto& t : tensors) {
    if (t.role == role) found.push_back(&t);
  }
  return found;
}

Bundle read_bundle(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error("cannot read the tensor bundle " + path.string(), "check the path");
  std::ostringstream text;
  text << in.rdbuf();
  Reader r(text.str(), path);
  if (r.read_string(8) != std::string(kMagic, 8)) r.fail("no MBTBNDL1 magic");
  Bundle bundle;
  const auto count = r.read<std::uint32_t>();
  for (std::uint32_t i = 0; i < count; ++i) {
    Tensor t;
    const auto role = r.read<std::uint8_t>();
    const auto dtype = r.read<std::uint8_t>();
    if (role > 3) r.fail("tensor " + std::to_string(i) + " has role " + std::to_string(role));
    if (dtype > 4) r.fail("tensor " + std::to_string(i) + " has dtype " + std::to_string(dtype));
    t.role = static_cast<TensorRole>(role);
    t.dtype = static_cast<DType>(dtype);
    t.name = r.read_string(r.read<std::uint16_t>());
    const auto rank = r.read<std::uint32_t>();
    if (rank > 16) r.fail(t.name + " has rank " + std::to_string(rank));
    for (std::uint32_t d = 0; d < rank; ++d) t.shape.push_back(r.read<std::int64_t>());
    const auto bytes = r.read<std::uint64_t>();
    if (bytes != static_cast<std::uint64_t>(t.numel()) * dtype_size(t.dtype)) {
      r.fail(t.name + " holds " + std::to_string(bytes) + " bytes for shape " +
             shape_text(t.shape));
    }
    r.align8();
    r.read_bytes(t.data, bytes);
    bundle.tensors.push_back(std::move(t));
  }
  return bundle;
}

void write_bundle(const fs::path& path, const Bundle& bundle) {
  std::string out(kMagic, 8);
  put(out, static_cast<std::uint32_t>(bundle.tensors.size()));
  for (const auto& t : bundle.tensors) {
    put(out, static_cast<std::uint8_t>(t.role));
    put(out, static_cast<std::uint8_t>(t.dtype));
    put(out, static_cast<std::uint16_t>(t.name.size()));
    out += t.name;
    put(out, static_cast<std::uint32_t>(t.shape.size()));
    for (auto size : t.shape) put(out, size);
    put(out, static_cast<std::uint64_t>(t.data.size()));
    out.append((8 - out.size() % 8) % 8, '\0');
    out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  }
  const fs::path temporary = path.string() + ".tmp";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file.write(out.data(), static_cast<std::streamsize>(out.size()));
    if (!file) throw job_error("cannot write the tensor bundle " + temporary.string());
  }
  fs::rename(temporary, path);
}

BundleSet make_bundles(const fs::path& problem, int seeds, std::uint64_t seed,
                       const fs::path& cache_dir, const fs::path& python, int timing_runs,
                       std::int64_t shrink) {
  std::ifstream in(problem, std::ios::binary);
  if (!in) throw input_error("cannot read the problem " + problem.string(), "check the path");
  std::ostringstream source;
  source << in.rdbuf();
  const fs::path worker = worker_directory();
  const std::string key =
      sha256_hex(source.str() + "\n" + std::to_string(seeds) + "/" + std::to_string(seed) + "/" +
                 std::to_string(timing_runs) + "/" + worker.filename().string() + kMetaVersion +
                 (shrink > 0 ? "/shrink-v1=" + std::to_string(shrink) : ""))
          .substr(0, 24);
  BundleSet set;
  set.dir = cache_dir / "bundles" / key;
  if (!fs::is_regular_file(set.dir / "meta.json")) {
    const fs::path staging = set.dir.string() + ".tmp-" + std::to_string(::getpid());
    ProcessSpec spec;
    spec.argv = {
        python.string(),      "-m",      "mblast_bundle",     fs::absolute(problem).string(),
        staging.string(),     "--seeds", std::to_string(seeds),      "--seed",
        std::to_string(seed), "--runs",  std::to_string(timing_runs)};
    if (shrink > 0) {
      spec.argv.push_back("--shrink");
      spec.argv.push_back(std::to_string(shrink));
    }
    spec.env["PYTHONPATH"] = worker.string();
    spec.env["CUDA_VISIBLE_DEVICES"] = "";  // bundles are made on the CPU
    spec.timeout = std::chrono::minutes(10);
    const ProcessResult result = run_process(spec);
    if (!result.ok()) {
      std::error_code ec;
      fs::remove_all(staging, ec);
      if (result.exit_code == 2) {
        throw input_error("the problem cannot be bundled for a native backend: " + result.err,
                          shrink > 0 ? "give --shrink a budget the message allows, or fix the "
                                       "problem file"
                                     : "fix the problem file; native backends need tensor inputs "
                                       "and outputs");
      }
      throw job_error("making the tensor bundles failed (" + result.describe() +
                      "): " + result.err);
    }
    std::error_code ec;
    fs::create_directories(set.dir.parent_path(), ec);
    fs::rename(staging, set.dir, ec);
    if (ec) fs::remove_all(staging, ec);  // another process made the same bundles first
  }
  std::ifstream meta(set.dir / "meta.json");
  set.meta = nlohmann::json::parse(meta, nullptr, false);
  if (!set.meta.is_object())
    throw job_error("the bundle cache " + set.dir.string() + " is damaged");
  for (const auto& entry : set.meta["seeds"])
    set.files.push_back(set.dir / entry["file"].get<std::string>());
  return set;
}

Comparison compare_outputs(const std::vector<const Tensor*>& expected,
                           const std::vector<Tensor>& produced, double atol, double rtol) {
  Comparison c;
  if (produced.size() != expected.size()) {
    c.pass = false;
    c.error = "the candidate produced " + std::to_string(produced.size()) +
              " outputs, the reference " + std::to_string(expected.size());
    return c;
  }
  double worst_excess = -std::numeric_limits<double>::infinity();
  for (std::size_t o = 0; o < expected.size(); ++o) {
    const Tensor& want = *expected[o];
    const Tensor& got = produced[o];
    if (got.shape != want.shape) {
      c.pass = false;
      c.error = "output " + std::to_string(o) + " has shape " + shape_text(got.shape) +
                ", the reference " + shape_text(want.shape);
      return c;
    }
    for (std::int64_t i = 0; i < want.numel(); ++i) {
      const double ref = value_at(want, i);
      const double cand = value_at(got, i);
      const double diff = std::fabs(cand - ref);
      const bool finite_mismatch = std::isfinite(ref) && !std::isfinite(cand);
      if (finite_mismatch) {
        c.pass = false;
        c.error = "output " + std::to_string(o) + " has " + (std::isnan(cand) ? "NaN" : "Inf") +
                  " at " + unravel(i, want.shape).dump() + " where the reference is " +
                  std::to_string(ref) + " (NaN is also what unwritten outputs hold)";
        c.location = {
            {"output", o}, {"index", unravel(i, want.shape)}, {"ref", ref}, {"cand", nullptr}};
        return c;
      }
      if (!std::isfinite(ref)) continue;
      c.max_abs_err = std::max(c.max_abs_err, diff);
      c.max_rel_err = std::max(c.max_rel_err, diff / std::max(std::fabs(ref), 1e-12));
      const double excess = diff - (atol + rtol * std::fabs(ref));
      if (excess > worst_excess) {
        worst_excess = excess;
        c.location = {
            {"output", o}, {"index", unravel(i, want.shape)}, {"ref", ref}, {"cand", cand}};
      }
    }
  }
  if (worst_excess > 0) {
    c.pass = false;
    c.error = "output " + c.location["output"].dump() + " differs at " +
              c.location["index"].dump() + ": candidate " + c.location["cand"].dump() +
              ", reference " + c.location["ref"].dump() +
              " (allowed |diff| <= atol + rtol * |ref|)";
  }
  return c;
}

}  // namespace mblast
