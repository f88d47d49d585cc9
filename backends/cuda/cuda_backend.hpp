#pragma once
// The CUDA backend: candidates are Python files defining ModelNew (CUDA through mblast_cuda.load
// or load_inline, or plain PyTorch on the CPU), built with nvcc and judged by the Python worker
// against the problem's PyTorch reference. Its built-ins are generated candidates
// (mblast_builtin: CUDA graphs, torch.compile modes, channels-last, ...).
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mblast/backend.hpp"

namespace mblast {

BackendTraits cuda_traits();
std::unique_ptr<Backend> make_cuda_backend(const BackendTraits& traits,
                                           const BackendContext& context);

// The source of a built-in transform: of the problem's Model (`base` is the problem) or, with
// over, of the candidate `base` (so that transforms compose with what earlier steps found); to the
// region of `region_ops` alone when they are given. No source, with why, where the transform would
// change nothing (sibling_merge on a Model without siblings). Throws job_error when the transform
// cannot be generated.
Backend::Builtin builtin_candidate(const std::filesystem::path& python,
                                   const std::string& transform, const std::filesystem::path& base,
                                   bool over, const std::vector<std::string>& region_ops = {});

// Why each of `transforms` would change nothing in `problem`'s Model ("" where it may), asked of
// mblast_builtin in one process; empty where the check itself fails (each transform then finds out
// in its own step).
std::map<std::string, std::string> builtins_with_nothing_to_change(
    const std::filesystem::path& python, const std::vector<std::string>& transforms,
    const std::filesystem::path& problem);

}  // namespace mblast
