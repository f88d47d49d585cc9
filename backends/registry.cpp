// The backends, one row each (docs/ARCHITECTURE.md §3): their traits and how to make one. Nothing
// outside backends/ switches on a backend's name; a new backend is a new row here.
#include "backend_registry.hpp"

#include <iostream>

#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_build.hpp"
#include "cuda/cuda_doctor.hpp"
#include "cuda/eval_server.hpp"
#include "mblast/error.hpp"
#include "native/native_judge.hpp"
#include "opencl/opencl_ceilings.hpp"
#include "opencl/opencl_child.hpp"
#include "opencl/opencl_doctor.hpp"
#include "opencl/opencl_native_backend.hpp"
#include "rvv/rvv_doctor.hpp"
#include "rvv/rvv_native_backend.hpp"

namespace mblast {
namespace {

BackendOption remote_option() {
  return {"--remote",
          "remote",
          "opencl, rvv: run candidates on another machine: ssh:[USER@]HOST or adb:SERIAL (opencl "
          "needs mblast there, see --remote-mblast; rvv pushes the static executable and times it "
          "by wall clock), or local to test that path",
          {}};
}

// Options both native backends take: reduced sizes, and where hand-written baselines are.
BackendOption shrink_option() {
  return {"--shrink",
          "shrink",
          "opencl, rvv: judge the problem at reduced sizes: its size constants (integers above 16 "
          "that get_inputs/get_init_inputs read) divided by the smallest power of two that brings "
          "one forward's inputs, parameters and outputs to at most N elements",
          {},
          [](const std::string& value) { shrink_budget(value); }};
}

BackendOption baselines_option() {
  return {"--baselines",
          "baselines",
          "opencl, rvv: folder holding the problem's hand-written baselines, <stem>.naive.cl and "
          "<stem>.c (default: beside the problem)",
          {}};
}

BackendTraits opencl_traits() {
  BackendTraits t;
  t.name = "opencl";
  t.title = "OpenCL C kernels with a launch plan, through the ICD loader";
  t.candidate_extension = ".cl";
  t.devices_help = "cpu, gpu, P:D or part of the device name";
  t.builtins_need_a_candidate = true;
  t.native = true;
  t.agent_format = [](const std::string&) {
    return AgentFormat{"backend_opencl",
                       "OpenCL kernels",
                       {{"kernels.cl", "opencl"}, {"launch.json", "json"}},
                       true,
                       false};
  };
  t.check_device = [](const std::string&) {};  // the OpenCL runner resolves and reports it
  t.options = {remote_option(),
               shrink_option(),
               baselines_option(),
               {"--remote-mblast",
                "remote_mblast",
                "opencl: the mblast binary on the --remote target (default: mblast on its PATH)",
                {}}};
  return t;
}

BackendTraits rvv_traits() {
  BackendTraits t;
  t.name = "rvv";
  t.title = "C with RVV intrinsics under QEMU, priced by a deterministic cost model";
  t.candidate_extension = ".c";
  t.devices_help = "none (the vector length is --vlen)";
  t.builtins_need_a_candidate = true;
  t.native = true;
  t.agent_format = [](const std::string&) {
    return AgentFormat{"backend_rvv", "RISC-V vector intrinsics", {{"kernel.c", "c"}}, true, false};
  };
  t.check_device = [](const std::string&) {};
  t.options = {remote_option(),
               shrink_option(),
               baselines_option(),
               {"--remote-prefix",
                "remote_prefix",
                "rvv with --remote: run the executable through this command on the target (e.g. "
                "\"qemu-riscv64 -cpu rv64,v=true,vlen=256\" to rehearse without a board)",
                {}},
               {"--vlen",
                "vlen",
                "rvv: vector length QEMU emulates (default 256)",
                {"64", "128", "256", "512", "1024"}},
               {"--cost-check",
                "cost_check",
                "rvv: also count each priced run through a QEMU plugin (instructions, memory "
                "beats by address, L1 misses) and give its cycles under the independent timing "
                "model of backends/rvv/COST_MODEL.md (timing.check; slower)",
                {"off", "on"}}};
  return t;
}

using Values = std::multimap<std::string, std::string>;

// The one value of option `name`; throws input_error when it is missing.
std::string one(const Values& values, const std::string& name) {
  const auto it = values.find(name);
  if (it == values.end()) throw input_error(name + " is required");
  return it->second;
}

std::string one_or(const Values& values, const std::string& name, std::string fallback) {
  const auto it = values.find(name);
  return it == values.end() ? fallback : it->second;
}

InternalCommand eval_server_command() {
  return {"eval-server",
          "Serve `mblast eval` requests",
          {"--socket", "--python", "--identity"},
          [](const Values& v) {
            return run_eval_server(one(v, "--socket"), one(v, "--python"), one(v, "--identity"));
          }};
}

InternalCommand cuda_build_command() {
  return {"cuda-build",
          "Build the CUDA source on stdin as candidates are built (--arch sm_XY, --flag=F per "
          "extra nvcc flag); one JSON report on stdout",
          {"--arch", "--flag"},
          [](const Values& v) {
            std::vector<std::string> flags;
            const auto [first, last] = v.equal_range("--flag");
            for (auto it = first; it != last; ++it) flags.push_back(it->second);
            return run_cuda_build_child(std::cin, std::cout, one_or(v, "--arch", ""), flags);
          }};
}

InternalCommand opencl_run_command() {
  return {"opencl-run",
          "Run an OpenCL candidate (or a GEMM through CLBlast) on tensor bundles; one JSON "
          "report on stdout",
          {"--candidate", "--gemm", "--bundle", "--out", "--runs", "--device"},
          [](const Values& v) {
            opencl::ChildRequest request;
            request.gemm = one_or(v, "--gemm", "");
            request.candidate = one_or(v, "--candidate", "");
            if (request.gemm.empty() == request.candidate.empty()) {
              throw input_error("give one of --candidate FILE and --gemm FILE");
            }
            const auto [first, last] = v.equal_range("--bundle");
            for (auto it = first; it != last; ++it) request.bundles.emplace_back(it->second);
            if (request.bundles.empty()) throw input_error("--bundle is required");
            request.out_dir = one(v, "--out");
            const std::string runs = one_or(v, "--runs", "30");
            try {
              request.runs = std::stoi(runs);
            } catch (const std::exception&) {
              throw input_error("--runs takes a number, not " + runs);
            }
            if (request.runs < 0) throw input_error("--runs must be at least 0");
            request.device = one_or(v, "--device", "");
            return opencl::run_child(request);
          }};
}

InternalCommand opencl_ceilings_command() {
  return {"opencl-ceilings",
          "Measure an OpenCL device's copy bandwidth and FLOP rate; one JSON report on stdout",
          {"--device"},
          [](const Values& v) { return opencl::run_ceilings_child(one_or(v, "--device", "")); }};
}

std::vector<BackendRow> make_rows() {
  std::vector<BackendRow> rows;
  rows.push_back({cuda_traits(),
                  [](const BackendContext& c) { return make_cuda_backend(cuda_traits(), c); },
                  cuda_doctor_names,
                  cuda_doctor,
                  {eval_server_command(), cuda_build_command()}});
  rows.push_back({opencl_traits(),
                  [](const BackendContext& c) {
                    return make_native_judge(opencl_traits(), c,
                                             opencl::make_opencl_backend(c.options));
                  },
                  opencl_doctor_names,
                  opencl_doctor,
                  {opencl_run_command(), opencl_ceilings_command()}});
  rows.push_back({rvv_traits(),
                  [](const BackendContext& c) {
                    return make_native_judge(rvv_traits(), c, rvv::make_rvv_backend(c.options));
                  },
                  rvv_doctor_names,
                  rvv_doctor,
                  {}});
  return rows;
}

}  // namespace

const BackendRows& backend_registry() {
  static const std::vector<BackendRow> rows = make_rows();
  return rows;
}

const BackendRow& backend_row(std::string_view name) {
  return find_backend(backend_registry(), name);
}

}  // namespace mblast
