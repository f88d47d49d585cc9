#include "rvv_io.hpp"

#include <cstdint>
#include <cstring>

#include "mblast/error.hpp"

namespace mblast::rvv {
namespace {

constexpr std::uint64_t kInMagic = 0x314e49565652424dull;   // "MBRVVIN1"
constexpr std::uint64_t kOutMagic = 0x54554f565652424dull;  // "MBRVVOUT"
constexpr std::size_t kMaxRank = 8;

void put(std::string& out, std::uint64_t word) {
  out.append(reinterpret_cast<const char*>(&word), sizeof word);
}

void put_header(std::string& out, const Tensor& t) {
  if (t.shape.size() > kMaxRank) {
    throw input_error(t.name + " has rank " + std::to_string(t.shape.size()) +
                      "; the RVV backend takes tensors of rank 8 or less");
  }
  put(out, t.shape.size());
  for (std::size_t d = 0; d < kMaxRank; ++d) {
    put(out, d < t.shape.size() ? static_cast<std::uint64_t>(t.shape[d]) : 0);
  }
}

std::size_t padded_bytes(const Tensor& t) {
  return (static_cast<std::size_t>(t.numel()) * sizeof(float) + 7) / 8 * 8;
}

std::vector<const Tensor*> forward_tensors(const Bundle& bundle) {
  std::vector<const Tensor*> tensors = bundle.with_role(TensorRole::input);
  for (const Tensor* p : bundle.with_role(TensorRole::parameter)) tensors.push_back(p);
  return tensors;
}

}  // namespace

std::string harness_input(const Bundle& bundle) {
  const auto inputs = forward_tensors(bundle);
  const auto outputs = bundle.with_role(TensorRole::expected);
  std::string out;
  put(out, kInMagic);
  put(out, inputs.size());
  put(out, outputs.size());
  for (const Tensor* t : inputs) put_header(out, *t);
  for (const Tensor* t : outputs) put_header(out, *t);
  for (const Tensor* t : inputs) {
    std::vector<float> values;
    if (t->dtype == DType::f32) {
      values.assign(t->f32(), t->f32() + t->numel());
    } else {
      for (double v : t->as_f64()) values.push_back(static_cast<float>(v));
    }
    values.resize(padded_bytes(*t) / sizeof(float), 0.0f);
    out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  }
  return out;
}

HarnessOutput read_harness_output(const std::string& data, const Bundle& bundle) {
  const auto expected = bundle.with_role(TensorRole::expected);
  std::size_t need = 2 * sizeof(std::uint64_t);
  for (const Tensor* t : expected) need += padded_bytes(*t);
  std::uint64_t header[2] = {};
  if (data.size() >= sizeof header) std::memcpy(header, data.data(), sizeof header);
  if (data.size() != need || header[0] != kOutMagic) {
    throw job_error("the harness wrote an incomplete output file (" + std::to_string(data.size()) +
                    " bytes, expected " + std::to_string(need) + ")");
  }
  HarnessOutput result;
  result.inputs_modified = (header[1] & 1u) != 0;
  std::size_t offset = sizeof header;
  for (const Tensor* want : expected) {
    Tensor t;
    t.name = want->name;
    t.role = TensorRole::produced;
    t.dtype = DType::f32;
    t.shape = want->shape;
    t.data.resize(static_cast<std::size_t>(t.numel()) * sizeof(float));
    std::memcpy(t.data.data(), data.data() + offset, t.data.size());
    offset += padded_bytes(*want);
    result.outputs.push_back(std::move(t));
  }
  return result;
}

}  // namespace mblast::rvv
