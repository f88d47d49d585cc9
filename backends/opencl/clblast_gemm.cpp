#include "opencl/clblast_gemm.hpp"

#include <clblast.h>

#include <chrono>

#include "mblast/error.hpp"
#include "mblast/support.hpp"
#include "opencl/forward_pass.hpp"

namespace mblast::opencl {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

[[noreturn]] void malformed(const std::string& what) {
  throw input_error("the bundles' GEMM record is malformed: " + what,
                    "remake the bundles with this mblast's worker (delete the bundle cache)");
}

std::int64_t count(const json& record, const char* key, std::int64_t least) {
  const auto it = record.find(key);
  if (it == record.end() || !it->is_number_integer()) malformed(std::string(key) + " is missing");
  const auto value = it->get<std::int64_t>();
  if (value < least) malformed(std::string(key) + " is " + std::to_string(value));
  return value;
}

GemmOperand operand_from(const json& record, const char* key) {
  const auto it = record.find(key);
  if (it == record.end() || !it->is_object()) malformed(std::string(key) + " is missing");
  const json& o = *it;
  if (!o.contains("tensor") || !o["tensor"].is_string()) {
    malformed(std::string(key) + ".tensor is missing");
  }
  return {o["tensor"].get<std::string>(), o.value("transposed", false), count(o, "offset", 0),
          count(o, "ld", 1), count(o, "batch_stride", 0)};
}

json operand_json(const GemmOperand& o) {
  return {{"tensor", o.tensor},
          {"transposed", o.transposed},
          {"offset", o.offset},
          {"ld", o.ld},
          {"batch_stride", o.batch_stride}};
}

std::string status_name(clblast::StatusCode status) {
  switch (status) {
    case clblast::StatusCode::kInvalidLeadDimA:
      return "kInvalidLeadDimA";
    case clblast::StatusCode::kInvalidLeadDimB:
      return "kInvalidLeadDimB";
    case clblast::StatusCode::kInvalidLeadDimC:
      return "kInvalidLeadDimC";
    case clblast::StatusCode::kInsufficientMemoryA:
      return "kInsufficientMemoryA";
    case clblast::StatusCode::kInsufficientMemoryB:
      return "kInsufficientMemoryB";
    case clblast::StatusCode::kInsufficientMemoryC:
      return "kInsufficientMemoryC";
    case clblast::StatusCode::kNotImplemented:
      return "kNotImplemented";
    case clblast::StatusCode::kUnknownError:
      return "kUnknownError";
    default:
      return "status";
  }
}

// The bundle tensor `o` names, checked to hold every element of the rows x cols matrices (as the
// product reads them) that the product reads or writes.
const Tensor& checked_tensor(const Bundle& bundle, const GemmOperand& o, std::int64_t batch,
                             std::int64_t rows, std::int64_t cols, const std::string& what) {
  const Tensor* found = nullptr;
  for (const auto& tensor : bundle.tensors) {
    if (tensor.name == o.tensor) found = &tensor;
  }
  if (found == nullptr) {
    throw CandidateFailure("candidate_runtime", "the GEMM record's " + what + " is " + o.tensor +
                                                    ", which the bundle does not hold");
  }
  const bool output = found->role == TensorRole::expected;
  if (!output && found->dtype != DType::f32) {
    throw CandidateFailure("candidate_runtime", "the GEMM record's " + what + " " + o.tensor +
                                                    " is " + dtype_name(found->dtype) +
                                                    ", not float32");
  }
  const std::int64_t stored_rows = o.transposed ? cols : rows;
  const std::int64_t stored_cols = o.transposed ? rows : cols;
  const std::int64_t extent =
      o.offset + (batch - 1) * o.batch_stride + (stored_rows - 1) * o.ld + stored_cols;
  if (o.ld < stored_cols || extent > found->numel()) {
    throw CandidateFailure("candidate_runtime", "the GEMM record's " + what + " reads " +
                                                    std::to_string(extent) + " elements of " +
                                                    o.tensor + " with leading dimension " +
                                                    std::to_string(o.ld) + ", which holds " +
                                                    std::to_string(found->numel()));
  }
  return *found;
}

cl_mem buffer_of(const ForwardPass& pass, const GemmOperand& o) {
  const cl::Buffer* buffer = pass.find_buffer(o.tensor);
  if (buffer == nullptr) {
    throw CandidateFailure("candidate_runtime", "no device buffer for " + o.tensor);
  }
  return (*buffer)();
}

struct GemmCall {
  cl_mem a = nullptr;
  cl_mem b = nullptr;
  cl_mem c = nullptr;
};

GemmCall bind(const GemmSpec& spec, const ForwardPass& pass, const Bundle& bundle) {
  checked_tensor(bundle, spec.a, spec.batch, spec.m, spec.k, "A");
  checked_tensor(bundle, spec.b, spec.batch, spec.k, spec.n, "B");
  const Tensor& c = checked_tensor(bundle, spec.c, spec.batch, spec.m, spec.n, "C");
  if (c.role != TensorRole::expected || c.numel() != spec.batch * spec.m * spec.n) {
    throw CandidateFailure("candidate_runtime", "the GEMM record's C " + spec.c.tensor +
                                                    " is not an output of the whole product");
  }
  return {buffer_of(pass, spec.a), buffer_of(pass, spec.b), buffer_of(pass, spec.c)};
}

clblast::Transpose transpose(const GemmOperand& o) {
  return o.transposed ? clblast::Transpose::kYes : clblast::Transpose::kNo;
}

std::size_t size(std::int64_t value) { return static_cast<std::size_t>(value); }

// Enqueues the product; the event of the library's last kernel.
cl::Event enqueue(const GemmSpec& s, const GemmCall& call, const cl::CommandQueue& queue) {
  cl_command_queue handle = queue();
  cl_event event = nullptr;
  const auto layout = clblast::Layout::kRowMajor;
  const clblast::StatusCode status =
      s.batch == 1 ? clblast::Gemm(layout, transpose(s.a), transpose(s.b), size(s.m), size(s.n),
                                   size(s.k), 1.0f, call.a, size(s.a.offset), size(s.a.ld), call.b,
                                   size(s.b.offset), size(s.b.ld), 0.0f, call.c, size(s.c.offset),
                                   size(s.c.ld), &handle, &event)
                   : clblast::GemmStridedBatched(
                         layout, transpose(s.a), transpose(s.b), size(s.m), size(s.n), size(s.k),
                         1.0f, call.a, size(s.a.offset), size(s.a.ld), size(s.a.batch_stride),
                         call.b, size(s.b.offset), size(s.b.ld), size(s.b.batch_stride), 0.0f,
                         call.c, size(s.c.offset), size(s.c.ld), size(s.c.batch_stride),
                         size(s.batch), &handle, &event);
  if (status != clblast::StatusCode::kSuccess) {
    throw CandidateFailure("candidate_runtime", clblast_version() + " " + s.routine() +
                                                    " returned " + status_name(status) + " (" +
                                                    std::to_string(static_cast<int>(status)) +
                                                    ") for " + s.describe());
  }
  return cl::Event(event);  // takes the library's reference
}

// One poisoned call, timed from a marker after the poisoning to the end of the last kernel.
double timed_call(const ForwardPass& pass, const GemmSpec& spec, const GemmCall& call,
                  const cl::CommandQueue& queue) {
  pass.poison(queue);
  cl::Event start;
  queue.enqueueMarkerWithWaitList(nullptr, &start);
  const cl::Event end = enqueue(spec, call, queue);
  queue.finish();
  const auto from = start.getProfilingInfo<CL_PROFILING_COMMAND_END>();
  const auto to = end.getProfilingInfo<CL_PROFILING_COMMAND_END>();
  return static_cast<double>(to - from) * 1e-6;
}

void time_calls(const ForwardPass& pass, const GemmSpec& spec, const GemmCall& call,
                const cl::CommandQueue& queue, const RunSettings& settings,
                const std::vector<Tensor>& first_outputs, RunReport& report) {
  for (int i = 0; i < settings.warmup_runs; ++i) timed_call(pass, spec, call, queue);
  std::vector<double> samples;
  for (int i = 0; i < settings.runs; ++i) samples.push_back(timed_call(pass, spec, call, queue));
  report.timing = summarize_ms(std::move(samples));
  if (settings.runs > 0) check_still_written(first_outputs, pass.read_outputs(queue));
}

void run_gemm(const Session& session, const GemmSpec& spec, const std::vector<Bundle>& bundles,
              const RunSettings& settings, RunReport& report) {
  const auto start = Clock::now();
  for (std::size_t i = 0; i < bundles.size(); ++i) {
    const ForwardPass pass(session.context, session.device, cl::Program(), LaunchPlan{},
                           bundles[i]);
    const GemmCall call = bind(spec, pass, bundles[i]);
    const auto first = Clock::now();
    timed_call(pass, spec, call, session.queue);
    if (i == 0) report.build_seconds = seconds_since(first);  // the library builds its kernels
    auto outputs = pass.read_outputs(session.queue);
    if (const auto changed = pass.changed_inputs(session.queue); !changed.empty()) {
      throw CandidateFailure("candidate_runtime", "the library wrote to " + changed.front());
    }
    if (i == 0) time_calls(pass, spec, call, session.queue, settings, outputs, report);
    report.outputs.push_back(std::move(outputs));
  }
  report.run_seconds = seconds_since(start) - report.build_seconds;
}

}  // namespace

std::optional<GemmSpec> GemmSpec::from_meta(const json& meta) {
  if (!meta.is_object()) return std::nullopt;
  const auto it = meta.find("gemm");
  if (it == meta.end() || it->is_null()) return std::nullopt;
  return from_json(*it);
}

GemmSpec GemmSpec::from_json(const json& record) {
  if (!record.is_object()) malformed("it is not an object");
  GemmSpec spec;
  spec.op = record.value("op", std::string());
  if (spec.op != "mm" && spec.op != "bmm") malformed("op is '" + spec.op + "', not mm or bmm");
  spec.batch = count(record, "batch", 1);
  spec.m = count(record, "m", 1);
  spec.n = count(record, "n", 1);
  spec.k = count(record, "k", 1);
  spec.a = operand_from(record, "a");
  spec.b = operand_from(record, "b");
  spec.c = operand_from(record, "c");
  if (spec.c.transposed) malformed("c is transposed");
  return spec;
}

json GemmSpec::to_json() const {
  return {{"op", op},
          {"batch", batch},
          {"m", m},
          {"n", n},
          {"k", k},
          {"a", operand_json(a)},
          {"b", operand_json(b)},
          {"c", operand_json(c)}};
}

std::string GemmSpec::routine() const { return batch == 1 ? "Sgemm" : "SgemmStridedBatched"; }

std::string GemmSpec::describe() const {
  return routine() + (batch == 1 ? "" : " batch=" + std::to_string(batch)) +
         " M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k) +
         " A=" + a.tensor + (a.transposed ? "^T" : "") + " B=" + b.tensor +
         (b.transposed ? "^T" : "");
}

std::string clblast_version() {
  return "CLBlast " + std::to_string(CLBLAST_VERSION_MAJOR) + "." +
         std::to_string(CLBLAST_VERSION_MINOR) + "." + std::to_string(CLBLAST_VERSION_PATCH);
}

RunReport run_clblast_in_process(const GemmSpec& spec, const std::vector<Bundle>& bundles,
                                 const RunSettings& settings) {
  return run_guarded(bundles, settings, [&](const Session& session, RunReport& report) {
    run_gemm(session, spec, bundles, settings, report);
  });
}

}  // namespace mblast::opencl
