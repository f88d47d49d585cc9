#pragma once
// A SOL-ExecBench problem judged as one task with many shapes: a candidate is built once and
// judged on every workload's problem file by the inner backend (Backend::evaluate_workloads: the
// CUDA backend's one worker judges them all), in order, stopping at the first workload it fails;
// the result is the workloads' combination (combine_workloads).
#include <memory>
#include <vector>

#include "mblast/backend.hpp"
#include "mblast/sol_problem.hpp"

namespace mblast {

// Correct only when correct on every workload. Times and speedups are geometric means over the
// workloads (so the speedup is the mean of per-workload speedups in log space), errors the
// largest, flags their union; the SOL score is the mean of the workloads' scores. A failure is
// the first failing workload's result, its error naming the workload. The profile signatures are
// those of the workload of median size (extra["signature_workload"]). Every workload's
// figures are kept in extra["workloads"]. `results` holds the workloads judged, in order.
EvalResult combine_workloads(const SolProblem& problem, const std::vector<EvalResult>& results);

// `inner` judges workload 0's problem file as its own problem (its built-ins, regions and the
// agents' view of the problem are that file's); throws input_error when it cannot judge the
// other workloads (a native backend).
std::unique_ptr<Backend> make_workloads_backend(std::unique_ptr<Backend> inner, SolProblem problem);

}  // namespace mblast
