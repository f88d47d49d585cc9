#include "opencl/forward_pass.hpp"

#include <cstring>
#include <optional>

namespace mblast::opencl {

namespace {

[[noreturn]] void plan_mismatch(const std::string& what) {
  throw CandidateFailure("compile", what);
}

template <typename... Visitors>
struct Overloaded : Visitors... {
  using Visitors::operator()...;
};

cl::NDRange to_range(const std::vector<std::size_t>& sizes) {
  if (sizes.size() == 1) return cl::NDRange(sizes[0]);
  if (sizes.size() == 2) return cl::NDRange(sizes[0], sizes[1]);
  return cl::NDRange(sizes[0], sizes[1], sizes[2]);
}

std::string tensor_text(const Tensor& tensor) {
  std::string shape;
  for (auto size : tensor.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(size);
  return tensor.name + " (" + dtype_name(tensor.dtype) + " [" + shape + "])";
}

std::string arg_text(const LaunchArg& arg) {
  return std::visit(
      Overloaded{[](const BufferArg& a) { return "buffer \"" + a.name + "\""; },
                 [](const IntArg& a) { return "int " + std::to_string(a.value); },
                 [](const FloatArg& a) { return "float " + std::to_string(a.value); },
                 [](const LocalBytesArg& a) { return "local_bytes " + std::to_string(a.bytes); }},
      arg);
}

struct ParamInfo {
  cl_kernel_arg_address_qualifier qualifier = CL_KERNEL_ARG_ADDRESS_PRIVATE;
  std::string type;
  std::string text;  // "`__global float* x`"
};

// What the compiler says about a kernel parameter; nullopt when the driver keeps no such
// information.
std::optional<ParamInfo> param_info(const cl::Kernel& kernel, cl_uint index) {
  try {
    ParamInfo info;
    info.qualifier = kernel.getArgInfo<CL_KERNEL_ARG_ADDRESS_QUALIFIER>(index);
    info.type = kernel.getArgInfo<CL_KERNEL_ARG_TYPE_NAME>(index);
    const std::string name = kernel.getArgInfo<CL_KERNEL_ARG_NAME>(index);
    const char* space = info.qualifier == CL_KERNEL_ARG_ADDRESS_GLOBAL     ? "__global "
                        : info.qualifier == CL_KERNEL_ARG_ADDRESS_CONSTANT ? "__constant "
                        : info.qualifier == CL_KERNEL_ARG_ADDRESS_LOCAL    ? "__local "
                                                                           : "";
    info.text = "`" + std::string(space) + info.type + " " + name + "`";
    return info;
  } catch (const cl::Error&) {
    return std::nullopt;
  }
}

// Empty when `arg` fits the parameter; else what the parameter takes.
std::string mismatch(const ParamInfo& param, const LaunchArg& arg) {
  const bool global = param.qualifier == CL_KERNEL_ARG_ADDRESS_GLOBAL ||
                      param.qualifier == CL_KERNEL_ARG_ADDRESS_CONSTANT;
  const bool local = param.qualifier == CL_KERNEL_ARG_ADDRESS_LOCAL;
  const bool is_int = !global && !local &&
                      (param.type == "int" || param.type == "uint" || param.type == "unsigned int");
  const bool is_float = !global && !local && param.type == "float";
  const bool fits = std::visit(
      Overloaded{[&](const BufferArg&) { return global; },
                 [&](const LocalBytesArg&) { return local; }, [&](const IntArg&) { return is_int; },
                 [&](const FloatArg&) { return is_float; }},
      arg);
  if (fits) return {};
  if (global) return "a {\"buffer\": NAME}";
  if (local) return "a {\"local_bytes\": N}";
  if (is_int) return "an {\"int\": N}";
  if (is_float) return "a {\"float\": X}";
  return "a type the plan cannot pass (plans pass buffers, int, float and local_bytes: change "
         "the parameter to int or float)";
}

nlohmann::json kernel_info(const cl::Kernel& kernel, const cl::Device& device,
                           const Launch& launch) {
  const auto required = kernel.getWorkGroupInfo<CL_KERNEL_COMPILE_WORK_GROUP_SIZE>(device);
  const bool has_required = required[0] != 0;
  return {{"kernel", launch.kernel},
          {"global", launch.global},
          {"local", launch.local ? nlohmann::json(*launch.local) : nlohmann::json()},
          {"local_mem_bytes", kernel.getWorkGroupInfo<CL_KERNEL_LOCAL_MEM_SIZE>(device)},
          {"required_local",
           has_required ? nlohmann::json(std::vector<std::size_t>(required.begin(), required.end()))
                        : nlohmann::json()},
          {"max_work_group_size", kernel.getWorkGroupInfo<CL_KERNEL_WORK_GROUP_SIZE>(device)},
          {"preferred_multiple",
           kernel.getWorkGroupInfo<CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE>(device)}};
}

}  // namespace

ForwardPass::ForwardPass(const cl::Context& context, const cl::Device& device,
                         const cl::Program& program, const LaunchPlan& plan, const Bundle& bundle) {
  for (const auto& tensor : bundle.tensors) {
    if (tensor.role != TensorRole::input && tensor.role != TensorRole::parameter) continue;
    // A zero-byte buffer is invalid in OpenCL; an empty tensor gets a small unused one.
    const cl::Buffer buffer =
        tensor.data.empty()
            ? cl::Buffer(context, CL_MEM_READ_ONLY, 8)
            : cl::Buffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, tensor.data.size(),
                         const_cast<std::byte*>(tensor.data.data()));  // only read
    add_buffer({tensor.name, buffer, tensor.data.size(), &tensor, nullptr});
  }
  for (const Tensor* expected : bundle.with_role(TensorRole::expected)) {
    const std::size_t bytes = static_cast<std::size_t>(expected->numel()) * sizeof(float);
    add_buffer({expected->name,
                cl::Buffer(context, CL_MEM_READ_WRITE, std::max<std::size_t>(bytes, 8)), bytes,
                nullptr, expected});
  }
  for (const auto& scratch : plan.buffers) {
    cl::Buffer buffer;
    try {
      buffer = cl::Buffer(context, CL_MEM_READ_WRITE, scratch.bytes);
    } catch (const cl::Error& e) {
      plan_mismatch("launch plan: scratch buffer \"" + scratch.name + "\" of " +
                    std::to_string(scratch.bytes) + " bytes cannot be allocated: " + describe(e));
    }
    add_buffer({scratch.name, buffer, scratch.bytes, nullptr, nullptr});
  }
  for (std::size_t i = 0; i < plan.launches.size(); ++i) {
    launches_.push_back(bind(device, program, plan.launches[i], i));
    launch_info_.push_back(kernel_info(launches_.back().kernel, device, plan.launches[i]));
  }
}

void ForwardPass::add_buffer(DeviceBuffer buffer) {
  for (const auto& existing : buffers_) {
    if (existing.name == buffer.name) {
      plan_mismatch("launch plan: scratch buffer \"" + buffer.name +
                    "\" has the name of a problem tensor; pick another name");
    }
  }
  buffers_.push_back(std::move(buffer));
}

const ForwardPass::DeviceBuffer& ForwardPass::buffer_named(const std::string& name,
                                                           const std::string& where) const {
  for (const auto& buffer : buffers_) {
    if (buffer.name == name) return buffer;
  }
  std::string known;
  for (const auto& buffer : buffers_) {
    const Tensor* tensor = buffer.source ? buffer.source : buffer.expected;
    known +=
        "\n  " + (tensor ? tensor_text(*tensor)
                         : buffer.name + " (scratch, " + std::to_string(buffer.bytes) + " bytes)");
  }
  plan_mismatch("launch plan: " + where + ": no buffer named \"" + name +
                "\"; the buffers are:" + known);
}

ForwardPass::BoundLaunch ForwardPass::bind(const cl::Device& device, const cl::Program& program,
                                           const Launch& launch, std::size_t index) const {
  const std::string where = "launches[" + std::to_string(index) + "]";
  BoundLaunch bound;
  bound.label = "launch " + std::to_string(index) + " (kernel '" + launch.kernel + "')";
  try {
    bound.kernel = cl::Kernel(program, launch.kernel.c_str());
  } catch (const cl::Error&) {
    plan_mismatch("launch plan: " + where + ": the program has no kernel named \"" + launch.kernel +
                  "\" (its kernels: " + program.getInfo<CL_PROGRAM_KERNEL_NAMES>() + ")");
  }
  const cl_uint count = bound.kernel.getInfo<CL_KERNEL_NUM_ARGS>();
  if (count != launch.args.size()) {
    plan_mismatch("launch plan: " + where + ": kernel \"" + launch.kernel + "\" takes " +
                  std::to_string(count) + " arguments but the plan passes " +
                  std::to_string(launch.args.size()));
  }
  for (cl_uint i = 0; i < count; ++i) {
    const LaunchArg& arg = launch.args[i];
    const std::string arg_where = where + ".args[" + std::to_string(i) + "]";
    if (const auto param = param_info(bound.kernel, i)) {
      if (const std::string wanted = mismatch(*param, arg); !wanted.empty()) {
        plan_mismatch("launch plan: " + arg_where + ": parameter " + std::to_string(i) + " " +
                      param->text + " of kernel \"" + launch.kernel + "\" takes " + wanted +
                      ", but the plan passes " + arg_text(arg));
      }
    }
    try {
      std::visit(
          Overloaded{[&](const BufferArg& a) {
                       bound.kernel.setArg(i, buffer_named(a.name, arg_where).buffer);
                     },
                     [&](const IntArg& a) { bound.kernel.setArg(i, cl_int{a.value}); },
                     [&](const FloatArg& a) { bound.kernel.setArg(i, cl_float{a.value}); },
                     [&](const LocalBytesArg& a) { bound.kernel.setArg(i, cl::Local(a.bytes)); }},
          arg);
    } catch (const cl::Error& e) {
      plan_mismatch("launch plan: " + arg_where + ": " + arg_text(arg) + " does not fit kernel \"" +
                    launch.kernel + "\": " + describe(e));
    }
  }
  bound.global = to_range(launch.global);
  if (launch.local) {
    const auto limit = bound.kernel.getWorkGroupInfo<CL_KERNEL_WORK_GROUP_SIZE>(device);
    const auto item_limits = device.getInfo<CL_DEVICE_MAX_WORK_ITEM_SIZES>();
    std::size_t items = 1;
    for (std::size_t d = 0; d < launch.local->size(); ++d) {
      items *= (*launch.local)[d];
      if ((*launch.local)[d] > item_limits.at(d)) {
        plan_mismatch("launch plan: " + where + ".local: " + std::to_string((*launch.local)[d]) +
                      " work-items in dimension " + std::to_string(d) + " exceed the device's " +
                      std::to_string(item_limits.at(d)));
      }
    }
    if (items > limit) {
      plan_mismatch("launch plan: " + where + ".local: a work-group of " + std::to_string(items) +
                    " work-items exceeds the " + std::to_string(limit) + " that kernel \"" +
                    launch.kernel + "\" allows on this device");
    }
    bound.local = to_range(*launch.local);
  }
  return bound;
}

void ForwardPass::poison(const cl::CommandQueue& queue) const {
  constexpr cl_uchar kPoison = 0xFF;  // all-ones bytes read as NaN floats
  for (const auto& buffer : buffers_) {
    if (buffer.source == nullptr && buffer.bytes > 0) {
      queue.enqueueFillBuffer(buffer.buffer, kPoison, 0, buffer.bytes);
    }
  }
}

const cl::Buffer* ForwardPass::find_buffer(const std::string& name) const {
  for (const auto& buffer : buffers_) {
    if (buffer.name == name) return &buffer.buffer;
  }
  return nullptr;
}

std::vector<cl::Event> ForwardPass::run(const cl::CommandQueue& queue) {
  std::vector<cl::Event> events(launches_.size());
  std::string step = "poisoning the outputs";
  try {
    poison(queue);
    for (std::size_t i = 0; i < launches_.size(); ++i) {
      step = launches_[i].label;
      queue.enqueueNDRangeKernel(launches_[i].kernel, cl::NullRange, launches_[i].global,
                                 launches_[i].local, nullptr, &events[i]);
    }
    step = "waiting for the launches";
    queue.finish();
  } catch (const cl::Error& e) {
    throw CandidateFailure("candidate_runtime", step + ": " + describe(e));
  }
  return events;
}

std::vector<Tensor> ForwardPass::read_outputs(const cl::CommandQueue& queue) const {
  std::vector<Tensor> outputs;
  for (const auto& buffer : buffers_) {
    if (buffer.expected == nullptr) continue;
    Tensor tensor;
    tensor.name = buffer.name;
    tensor.role = TensorRole::produced;
    tensor.dtype = DType::f32;
    tensor.shape = buffer.expected->shape;
    tensor.data.resize(buffer.bytes);
    try {
      if (buffer.bytes > 0) {
        queue.enqueueReadBuffer(buffer.buffer, CL_TRUE, 0, buffer.bytes, tensor.data.data());
      }
    } catch (const cl::Error& e) {
      throw CandidateFailure("candidate_runtime", "reading " + buffer.name + ": " + describe(e));
    }
    outputs.push_back(std::move(tensor));
  }
  return outputs;
}

std::vector<std::string> ForwardPass::changed_inputs(const cl::CommandQueue& queue) const {
  std::vector<std::string> changed;
  std::vector<std::byte> copy;
  for (const auto& buffer : buffers_) {
    if (buffer.source == nullptr || buffer.bytes == 0) continue;
    copy.resize(buffer.bytes);
    queue.enqueueReadBuffer(buffer.buffer, CL_TRUE, 0, buffer.bytes, copy.data());
    if (std::memcmp(copy.data(), buffer.source->data.data(), buffer.bytes) != 0) {
      changed.push_back(buffer.name);
    }
  }
  return changed;
}

}  // namespace mblast::opencl
