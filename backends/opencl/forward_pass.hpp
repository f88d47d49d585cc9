#pragma once
// One candidate forward pass on one tensor bundle: the device buffers of the bundle's tensors and
// the plan's scratch buffers, and one kernel object per launch with its arguments set.
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "native/bundle.hpp"
#include "opencl/cl.hpp"
#include "opencl/opencl_candidate.hpp"

namespace mblast::opencl {

// The candidate's fault, as opposed to the machine's: kind is "compile" (the source or the plan
// is wrong) or "candidate_runtime" (a launch failed).
class CandidateFailure : public std::runtime_error {
 public:
  CandidateFailure(std::string kind, const std::string& what)
      : std::runtime_error(what), kind_(std::move(kind)) {}
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
};

class ForwardPass {
 public:
  // Uploads the bundle's inputs and parameters and checks the plan against the kernels and the
  // bundle, which must outlive the pass. Throws CandidateFailure("compile") for a plan that does
  // not fit.
  ForwardPass(const cl::Context& context, const cl::Device& device, const cl::Program& program,
              const LaunchPlan& plan, const Bundle& bundle);

  // Poisons outputs and scratch buffers, enqueues every launch and waits for them. Returns one
  // profiling event per launch. Throws CandidateFailure("candidate_runtime").
  std::vector<cl::Event> run(const cl::CommandQueue& queue);

  // Enqueues the poisoning of the outputs and scratch buffers (NaN in every float) without
  // waiting: what run() does first, for work that is not the plan's launches (a library call).
  void poison(const cl::CommandQueue& queue) const;

  // The device buffer of a bundle tensor or scratch buffer; nullptr when there is none so named.
  const cl::Buffer* find_buffer(const std::string& name) const;

  // The outputs of the last run, as float32 tensors named like the expected ones.
  std::vector<Tensor> read_outputs(const cl::CommandQueue& queue) const;

  // Names of the inputs and parameters whose device copy no longer matches the bundle.
  std::vector<std::string> changed_inputs(const cl::CommandQueue& queue) const;

  // Per launch, what the compiler says about its kernel: {"kernel", "global", "local",
  // "local_mem_bytes" (static __local arrays plus __local arguments), "required_local" (from
  // reqd_work_group_size, or null), "max_work_group_size", "preferred_multiple"}.
  const nlohmann::json& launch_info() const { return launch_info_; }

 private:
  struct DeviceBuffer {
    std::string name;
    cl::Buffer buffer;
    std::size_t bytes = 0;
    const Tensor* source = nullptr;    // set for inputs and parameters, which must stay unchanged
    const Tensor* expected = nullptr;  // set for outputs
  };
  struct BoundLaunch {
    cl::Kernel kernel;
    cl::NDRange global;
    cl::NDRange local;
    std::string label;  // "launch 1 (kernel 'row_sum')"
  };

  void add_buffer(DeviceBuffer buffer);
  const DeviceBuffer& buffer_named(const std::string& name, const std::string& where) const;
  BoundLaunch bind(const cl::Device& device, const cl::Program& program, const Launch& launch,
                   std::size_t index) const;

  std::vector<DeviceBuffer> buffers_;
  std::vector<BoundLaunch> launches_;
  nlohmann::json launch_info_ = nlohmann::json::array();
};

}  // namespace mblast::opencl
