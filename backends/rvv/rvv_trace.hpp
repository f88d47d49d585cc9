#pragma once
// Prices a QEMU execution trace (`-d in_asm,exec,nochain`): the "IN:" blocks give each
// translation block's instructions (address and bits), the "Trace" lines the blocks in the
// order they ran. Only the blocks that ran after the first entry to mblast_begin and before
// the last entry to mblast_end count (the forward and every library call it makes).
#include <cstdint>
#include <istream>

#include <nlohmann/json.hpp>

#include "rvv_cost_model.hpp"

namespace mblast::rvv {

struct CostWindow {
  std::uint64_t begin = 0;  // guest address of mblast_begin
  std::uint64_t end = 0;    // guest address of mblast_end
};

struct TraceCost {
  std::uint64_t cost = 0;
  std::uint64_t instructions = 0;
  std::uint64_t vector_instructions = 0;  // vector instructions other than vset*
  std::uint64_t vset_instructions = 0;
  std::uint64_t vector_bytes = 0;  // moved by vector loads/stores, at VLMAX
  // Bytes loaded and stored by every memory instruction: scalar ones by their width, vector ones
  // at VLMAX (so vector_load_bytes + vector_store_bytes = vector_bytes); strided_bytes is the
  // part moved by strided and indexed vector accesses, one element per cycle.
  std::uint64_t scalar_load_bytes = 0;
  std::uint64_t scalar_store_bytes = 0;
  std::uint64_t vector_load_bytes = 0;
  std::uint64_t vector_store_bytes = 0;
  std::uint64_t strided_bytes = 0;
  std::uint64_t blocks = 0;  // translation blocks run in the window
  // False when the run never entered mblast_begin or never returned to mblast_end (e.g. the
  // forward called exit): the counts then mean nothing.
  bool window_closed = false;

  nlohmann::json to_json() const;
};

// Throws job_error when the trace is not in the format QEMU 7.x writes.
TraceCost price_trace(std::istream& trace, const CostWindow& window, const CostModel& model);

}  // namespace mblast::rvv
