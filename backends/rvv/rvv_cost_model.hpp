#pragma once
// The RVV backend's deterministic cost model: each executed RISC-V instruction is decoded from
// its bits and priced for a vector core with a VLEN-bit register file and a DLEN-bit datapath.
// COST_MODEL.md beside this file is the documentation; keep the two in step.
#include <cstdint>
#include <string>

namespace mblast::rvv {

// The vector type that vsetvli/vsetivli/vsetvl install.
struct Vtype {
  int sew_bits = 32;  // 8, 16, 32, 64
  int lmul_log2 = 0;  // -3 .. 3 (mf8 .. m8)
  bool operator==(const Vtype&) const = default;
};

// Decodes the vtype immediate of vsetvli / vsetivli; `valid` is false for a reserved encoding.
struct DecodedVtype {
  Vtype vtype;
  bool valid = false;
};
DecodedVtype decode_vtype(std::uint32_t vtypei);

enum class InsnKind : std::uint8_t {
  scalar,                    // any base, M, A, F, D, C instruction
  scalar_long,               // integer divide / remainder, FP divide / square root
  vset,                      // vsetvli, vsetivli, vsetvl
  vector_arith,              // element-wise, compares, merges, moves, conversions
  vector_widen,              // widening or narrowing: the wide side occupies 2 * LMUL
  vector_long,               // vector divide / square root
  vector_reduction,          // unordered reductions (tree)
  vector_ordered_reduction,  // vfredosum, vfwredosum: one element after another
  vector_wide_reduction,     // widening unordered reductions
  vector_slide,              // vslideup/down, vslide1up/down
  vector_gather,             // vrgather, vrgatherei16, vcompress: per element
  vector_scalar_move,        // vmv.x.s, vmv.s.x, vfmv.f.s, vfmv.s.f, vcpop.m, vfirst.m
  vector_mask,               // mask-register logic (vmand.mm ...), vmsbf, viota, vid
  vector_whole_move,         // vmv<nr>r.v
  vector_unit_memory,        // unit-stride and segment loads/stores, fault-only-first
  vector_whole_memory,       // vl<nr>re<eew>.v, vs<nr>r.v
  vector_mask_memory,        // vlm.v, vsm.v
  vector_element_memory,     // strided and indexed loads/stores: per element
};

struct Insn {
  InsnKind kind = InsnKind::scalar;
  std::uint8_t eew_bits = 0;      // memory element width
  std::uint8_t fields = 1;        // segment fields (nf + 1), or registers for whole moves
  bool sets_vtype = false;        // vsetvli / vsetivli: `vtype` below applies from here on
  bool register_vtype = false;    // vsetvl: the new vtype comes from a register
  bool store = false;             // a scalar or vector store (else a load, for memory accesses)
  std::uint8_t scalar_bytes = 0;  // bytes a scalar load or store moves (0 for anything else)
  Vtype vtype;
};

// `bits` holds the instruction (the low 16 bits for a compressed one).
Insn decode_insn(std::uint32_t bits);
bool is_vector(InsnKind kind);

struct CostModel {
  int vlen = 256;  // bits per vector register
  int dlen = 128;  // bits the datapath and the memory port handle per cycle

  static constexpr std::uint64_t kLongLatency = 8;  // divide / square root, scalar or per chunk

  std::uint64_t price(const Insn& insn, const Vtype& vtype) const;
  // Bytes a vector memory instruction moves at VLMAX (0 for any other instruction).
  std::uint64_t vector_bytes(const Insn& insn, const Vtype& vtype) const;
  std::string name() const;  // "rvv-v1 vlen=256 dlen=128"
};

}  // namespace mblast::rvv
