#pragma once
// Tensor bundles: a PyTorch problem's inputs, parameters and expected outputs for one seed, made
// on the CPU by the Python worker (`python3 -m mblast_bundle`) and read by the native
// runners (OpenCL, RVV) and the judge that compares their outputs.
//
// File format (little-endian), one file per seed:
//   char[8]  magic "MBTBNDL1"
//   u32      tensor count
//   then per tensor:
//     u8     role: 0 input (forward argument, in order), 1 parameter (state_dict order),
//                  2 expected output (float64 reference, in order), 3 produced output
//     u8     dtype: 0 float32, 1 float64, 2 int32, 3 int64, 4 uint8 (bool)
//     u16    name length, then the name (UTF-8): "input0", "conv.weight", "output0"
//     u32    rank, then rank x i64 sizes
//     u64    byte count, then zero padding to a multiple of 8 from the file start, then the data
//            (C-contiguous)
// Scalars passed to forward are rank-0 tensors.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mblast {

enum class TensorRole : std::uint8_t { input = 0, parameter = 1, expected = 2, produced = 3 };
enum class DType : std::uint8_t { f32 = 0, f64 = 1, i32 = 2, i64 = 3, u8 = 4 };

std::size_t dtype_size(DType dtype);
std::string dtype_name(DType dtype);  // "float32", ...

struct Tensor {
  std::string name;
  TensorRole role = TensorRole::input;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> data;

  std::int64_t numel() const;
  // The values as float64 (any dtype).
  std::vector<double> as_f64() const;
  const float* f32() const { return reinterpret_cast<const float*>(data.data()); }
  float* f32() { return reinterpret_cast<float*>(data.data()); }
};

struct Bundle {
  std::vector<Tensor> tensors;

  std::vector<const Tensor*> with_role(TensorRole role) const;
};

// Throws input_error naming the file for a file that is not a valid bundle.
Bundle read_bundle(const std::filesystem::path& path);
void write_bundle(const std::filesystem::path& path, const Bundle& bundle);

// The bundles of a problem, made once per (problem content, seeds) and cached.
struct BundleSet {
  std::filesystem::path dir;
  nlohmann::json meta;  // meta.json: inputs, parameters, outputs, eager error, torch CPU time
  std::vector<std::filesystem::path> files;  // one per seed, in seed order
};

// Runs the Python worker on the CPU to make (or finds in cache_dir/bundles/) the bundles of
// `problem` for seeds seed .. seed + seeds - 1. With shrink > 0 they are made from the problem at
// reduced sizes, at most `shrink` elements of inputs, parameters and outputs (mblast_bundle.shrink;
// meta["shrink"] says what changed, dir/problem.py is the shrunken source). Throws input_error
// (exit 2) when the problem is unusable or cannot be shrunk to that budget.
BundleSet make_bundles(const std::filesystem::path& problem, int seeds, std::uint64_t seed,
                       const std::filesystem::path& cache_dir, const std::filesystem::path& python,
                       int timing_runs, std::int64_t shrink = 0);

// Output comparison against the float64 reference under the precision policy.
struct Comparison {
  bool pass = true;
  double max_abs_err = 0;
  double max_rel_err = 0;
  std::string error;        // why it failed: shape, NaN, the worst mismatch and where
  nlohmann::json location;  // {"output", "index", "cand", "ref"} of the worst element
};
Comparison compare_outputs(const std::vector<const Tensor*>& expected,
                           const std::vector<Tensor>& produced, double atol, double rtol);

}  // namespace mblast
