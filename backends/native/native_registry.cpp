// The native backends by name (DESIGN.md §5): only lowering and measurement differ per target.
#include "mblast/error.hpp"
#include "mblast/eval_options.hpp"
#include "native/native_backend.hpp"
#include "opencl/opencl_native_backend.hpp"
#include "rvv/rvv_native_backend.hpp"

namespace mblast {

std::unique_ptr<NativeBackend> make_native_backend(const EvalOptions& options) {
  if (options.backend == "opencl") return opencl::make_opencl_backend(options);
  if (options.backend == "rvv") return rvv::make_rvv_backend(options);
  throw input_error("no native backend named " + options.backend, "use --backend opencl or rvv");
}

}  // namespace mblast
