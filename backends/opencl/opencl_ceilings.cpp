#include "opencl/opencl_ceilings.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "mblast/error.hpp"
#include "mblast/process.hpp"
#include "mblast/remote.hpp"
#include "mblast/support.hpp"
#include "opencl/cl.hpp"
#include "opencl/opencl_device.hpp"

namespace mblast::opencl {

namespace {

namespace fs = std::filesystem;

// The two measuring kernels. peak's ten float8 chains fill sixteen AVX registers without
// spilling (more chains spilled and ran slower on PoCL, fewer left the FMA units idle); they
// converge to 1 (a < 1), so no value overflows or turns denormal; the sum keeps every chain live.
constexpr const char* kCeilingKernels = R"CL(
__kernel void copy4(__global const float4* src, __global float4* dst) {
  const size_t i = get_global_id(0);
  dst[i] = src[i];
}

__kernel void peak(__global float8* out, float a, float b, int iterations) {
  const float start = (float)(get_global_id(0) % 7);
  float8 x0 = (float8)(start), x1 = x0 + 1.0f, x2 = x0 + 2.0f, x3 = x0 + 3.0f, x4 = x0 + 4.0f;
  float8 x5 = x0 + 5.0f, x6 = x0 + 6.0f, x7 = x0 + 7.0f, x8 = x0 + 8.0f, x9 = x0 + 9.0f;
  for (int k = 0; k < iterations; ++k) {
    x0 = mad(x0, a, b); x1 = mad(x1, a, b); x2 = mad(x2, a, b); x3 = mad(x3, a, b);
    x4 = mad(x4, a, b); x5 = mad(x5, a, b); x6 = mad(x6, a, b); x7 = mad(x7, a, b);
    x8 = mad(x8, a, b); x9 = mad(x9, a, b);
  }
  out[get_global_id(0)] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9;
}
)CL";

constexpr int kTimedLaunches = 7;
constexpr int kCopyLanes = 4;
constexpr int kMadChains = 10;
constexpr int kMadLanes = 8;
constexpr int kMadIterations = 2048;
constexpr std::size_t kMadItemsPerComputeUnit = 1024;
constexpr std::size_t kCopyBytes[] = {64u << 10, 256u << 10, 1u << 20,
                                      4u << 20,  16u << 20,  64u << 20};

double launch_ms(const cl::CommandQueue& queue, const cl::Kernel& kernel, std::size_t items) {
  cl::Event event;
  queue.enqueueNDRangeKernel(kernel, cl::NullRange, cl::NDRange(items), cl::NullRange, nullptr,
                             &event);
  event.wait();
  const auto start = event.getProfilingInfo<CL_PROFILING_COMMAND_START>();
  const auto end = event.getProfilingInfo<CL_PROFILING_COMMAND_END>();
  return static_cast<double>(end - start) * 1e-6;
}

// The fastest of kTimedLaunches launches after one warm-up: a ceiling is what the device can do,
// and other work on a shared machine only ever slows a launch down.
double fastest_launch_ms(const cl::CommandQueue& queue, const cl::Kernel& kernel,
                         std::size_t items) {
  launch_ms(queue, kernel, items);
  double fastest = launch_ms(queue, kernel, items);
  for (int i = 1; i < kTimedLaunches; ++i)
    fastest = std::min(fastest, launch_ms(queue, kernel, items));
  return fastest;
}

nlohmann::json measure_copy(const cl::Context& context, const cl::CommandQueue& queue,
                            const cl::Program& program, std::size_t max_alloc) {
  nlohmann::json rows = nlohmann::json::array();
  cl::Kernel copy(program, "copy4");
  for (const std::size_t bytes : kCopyBytes) {
    if (bytes > max_alloc) break;
    cl::Buffer src(context, CL_MEM_READ_WRITE, bytes);
    cl::Buffer dst(context, CL_MEM_READ_WRITE, bytes);
    queue.enqueueFillBuffer(src, cl_float{1.0f}, 0, bytes);
    queue.finish();
    copy.setArg(0, src);
    copy.setArg(1, dst);
    const double ms = fastest_launch_ms(queue, copy, bytes / (kCopyLanes * sizeof(float)));
    const double moved = 2.0 * static_cast<double>(bytes);  // read and written
    rows.push_back({{"bytes", bytes}, {"ms", ms}, {"gbs", moved / (ms * 1e-3) / 1e9}});
  }
  return rows;
}

nlohmann::json measure_mad(const cl::Context& context, const cl::CommandQueue& queue,
                           const cl::Program& program, std::size_t compute_units) {
  const std::size_t items = std::max<std::size_t>(1, compute_units) * kMadItemsPerComputeUnit;
  cl::Buffer out(context, CL_MEM_WRITE_ONLY, items * kMadLanes * sizeof(float));
  cl::Kernel mad(program, "peak");
  mad.setArg(0, out);
  mad.setArg(1, cl_float{0.999f});
  mad.setArg(2, cl_float{0.001f});
  mad.setArg(3, cl_int{kMadIterations});
  const double ms = fastest_launch_ms(queue, mad, items);
  const double flops = 2.0 * kMadLanes * kMadChains * kMadIterations * static_cast<double>(items);
  return {{"work_items", items},
          {"iterations", kMadIterations},
          {"flops", flops},
          {"ms", ms},
          {"gflops", flops / (ms * 1e-3) / 1e9}};
}

// A file name part: letters, digits, '.', '_' and '-' kept, anything else '-'.
std::string file_part(std::string text) {
  std::replace_if(
      text.begin(), text.end(),
      [](unsigned char c) { return !std::isalnum(c) && c != '.' && c != '_' && c != '-'; }, '-');
  return text.empty() ? "default" : text;
}

fs::path cache_file(const OpenClOptions& options, const fs::path& cache_dir) {
  const std::string where = options.remote.empty() ? host_name() : options.remote;
  return cache_dir / "ceilings" /
         ("opencl-" + file_part(where) + "-" + file_part(options.device) + ".json");
}

std::optional<DeviceCeilings> read_cached(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const auto json = nlohmann::json::parse(in, nullptr, false);
  auto ceilings = DeviceCeilings::from_json(json);
  if (!ceilings) spdlog::warn("ignoring unreadable OpenCL ceilings cache {}", path.string());
  return ceilings;
}

// Runs `mblast internal opencl-ceilings` on the options' target; its JSON report, or throws
// job_error saying why there is none.
nlohmann::json measure_in_child(const OpenClOptions& options) {
  const bool here = options.remote.empty();
  const std::vector<std::string> argv = {here ? options.binary().string() : options.remote_mblast,
                                         "internal", "opencl-ceilings", "--device", options.device};
  ProcessResult result;
  if (here) {
    ProcessSpec spec;
    spec.argv = argv;
    spec.timeout = options.timeout;
    result = run_process(spec);
  } else {
    result = make_remote_target(options.remote)->run(argv, options.timeout);
  }
  const auto report = nlohmann::json::parse(result.out, nullptr, false);
  if (!result.ok() || !report.is_object() || report.contains("setup_error")) {
    const std::string why = report.is_object() ? report.value("setup_error", std::string()) : "";
    throw job_error("measuring the OpenCL device's ceilings failed (" + result.describe() +
                    "): " + (why.empty() ? result.err : why));
  }
  return report;
}

}  // namespace

std::optional<DeviceCeilings> DeviceCeilings::from_json(const nlohmann::json& json) {
  if (!json.is_object()) return std::nullopt;
  DeviceCeilings ceilings;
  ceilings.bandwidth_gbs = json.value("bandwidth_gbs", 0.0);
  ceilings.gflops = json.value("gflops", 0.0);
  if (ceilings.bandwidth_gbs <= 0 || ceilings.gflops <= 0) return std::nullopt;
  ceilings.detail = json;
  return ceilings;
}

nlohmann::json DeviceCeilings::to_json() const {
  nlohmann::json json = detail.is_object() ? detail : nlohmann::json::object();
  json["bandwidth_gbs"] = bandwidth_gbs;
  json["gflops"] = gflops;
  return json;
}

DeviceCeilings measure_ceilings(const std::string& device_spec) {
  const DeviceEntry device = select_device(device_spec);
  try {
    cl::Context context(device.device);
    cl::CommandQueue queue(context, device.device, CL_QUEUE_PROFILING_ENABLE);
    cl::Program program(context, kCeilingKernels);
    program.build({device.device}, "-cl-std=CL1.2");
    DeviceCeilings ceilings;
    const auto copy = measure_copy(context, queue, program,
                                   device.device.getInfo<CL_DEVICE_MAX_MEM_ALLOC_SIZE>());
    const auto mad =
        measure_mad(context, queue, program, device.device.getInfo<CL_DEVICE_MAX_COMPUTE_UNITS>());
    for (const auto& row : copy) {
      ceilings.bandwidth_gbs = std::max(ceilings.bandwidth_gbs, row["gbs"].get<double>());
    }
    ceilings.gflops = mad["gflops"].get<double>();
    ceilings.detail = {{"copy", copy},
                       {"mad", mad},
                       {"device", device.name},
                       {"platform", device.platform_name},
                       {"driver_version", device.device.getInfo<CL_DRIVER_VERSION>()},
                       {"measured_at", utc_now()}};
    return ceilings;
  } catch (const cl::Error& e) {
    throw job_error(
        "cannot measure the ceilings of the OpenCL device " + device.name + ": " + describe(e),
        "check the driver with clinfo, or pick another device");
  }
}

std::optional<DeviceCeilings> device_ceilings(const OpenClOptions& options,
                                              const fs::path& cache_dir) {
  const fs::path path = cache_file(options, cache_dir);
  if (auto cached = read_cached(path)) return cached;
  try {
    auto ceilings = DeviceCeilings::from_json(measure_in_child(options));
    if (!ceilings) throw job_error("the ceilings child reported no bandwidth or FLOP rate");
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    std::ofstream(path) << ceilings->to_json().dump(2) << "\n";
    return ceilings;
  } catch (const Error& e) {
    spdlog::warn("{}; OpenCL signatures carry no speed-of-light fractions", e.what());
    return std::nullopt;
  }
}

int run_ceilings_child(const std::string& device_spec) {
  try {
    std::printf("%s\n", measure_ceilings(device_spec).to_json().dump().c_str());
    return 0;
  } catch (const Error& e) {
    std::printf("%s\n", nlohmann::json{{"setup_error", e.what()},
                                       {"hint", e.hint()},
                                       {"exit_code", static_cast<int>(e.code())}}
                            .dump()
                            .c_str());
    return static_cast<int>(e.code());
  }
}

}  // namespace mblast::opencl
