#include "rvv_cost_model.hpp"

#include <algorithm>

namespace mblast::rvv {
namespace {

constexpr std::uint32_t kOpV = 0x57;
constexpr std::uint32_t kLoad = 0x03;
constexpr std::uint32_t kStore = 0x23;
constexpr std::uint32_t kLoadFp = 0x07;
constexpr std::uint32_t kStoreFp = 0x27;
constexpr std::uint32_t kOp = 0x33;
constexpr std::uint32_t kOp32 = 0x3b;
constexpr std::uint32_t kOpFp = 0x53;

// funct3 of OP-V.
enum : std::uint32_t {
  kOpivv = 0,
  kOpfvv = 1,
  kOpmvv = 2,
  kOpivi = 3,
  kOpivx = 4,
  kOpfvf = 5,
  kOpmvx = 6,
  kOpcfg = 7
};

std::uint32_t field(std::uint32_t bits, int low, int width) {
  return (bits >> low) & ((1u << width) - 1u);
}

Insn of_kind(InsnKind kind) {
  Insn insn;
  insn.kind = kind;
  return insn;
}

Insn decode_vset(std::uint32_t bits) {
  Insn insn = of_kind(InsnKind::vset);
  const bool vsetvli = field(bits, 31, 1) == 0;
  const bool vsetivli = field(bits, 30, 2) == 3;
  if (!vsetvli && !vsetivli) {
    insn.register_vtype = true;
    return insn;
  }
  const DecodedVtype decoded = decode_vtype(field(bits, 20, vsetvli ? 11 : 10));
  insn.sets_vtype = decoded.valid;
  insn.vtype = decoded.vtype;
  return insn;
}

InsnKind opi_kind(std::uint32_t funct6, std::uint32_t funct3) {
  if (funct6 == 0x0c) return InsnKind::vector_gather;  // vrgather
  if (funct6 == 0x0e) return funct3 == kOpivv ? InsnKind::vector_gather : InsnKind::vector_slide;
  if (funct6 == 0x0f) return InsnKind::vector_slide;  // vslidedown
  if (funct6 == 0x27 && funct3 == kOpivi) return InsnKind::vector_whole_move;
  if (funct6 >= 0x2c && funct6 <= 0x2f) return InsnKind::vector_widen;  // narrowing shifts, clips
  if (funct6 == 0x30 || funct6 == 0x31) return InsnKind::vector_wide_reduction;  // vwredsum[u]
  return InsnKind::vector_arith;
}

InsnKind opm_kind(std::uint32_t funct6, std::uint32_t funct3, std::uint32_t vs1) {
  const bool vv = funct3 == kOpmvv;
  if (vv && funct6 <= 0x07) return InsnKind::vector_reduction;
  if (funct6 == 0x0e || funct6 == 0x0f) return InsnKind::vector_slide;  // vslide1up/down
  if (funct6 == 0x10) return InsnKind::vector_scalar_move;  // vmv.x.s, vcpop, vfirst, vmv.s.x
  if (funct6 == 0x14) return vs1 >= 0x10 ? InsnKind::vector_arith : InsnKind::vector_mask;
  if (vv && funct6 == 0x17) return InsnKind::vector_gather;  // vcompress
  if (vv && funct6 >= 0x18 && funct6 <= 0x1f) return InsnKind::vector_mask;
  if (funct6 >= 0x20 && funct6 <= 0x23) return InsnKind::vector_long;  // vdiv[u], vrem[u]
  if (funct6 >= 0x30) return InsnKind::vector_widen;
  return InsnKind::vector_arith;
}

InsnKind opf_kind(std::uint32_t funct6, std::uint32_t funct3, std::uint32_t vs1) {
  const bool vv = funct3 == kOpfvv;
  if (vv && (funct6 == 0x01 || funct6 == 0x05 || funct6 == 0x07)) {
    return InsnKind::vector_reduction;  // vfredusum, vfredmin, vfredmax
  }
  if (vv && funct6 == 0x03) return InsnKind::vector_ordered_reduction;  // vfredosum
  if (vv && funct6 == 0x31) return InsnKind::vector_wide_reduction;     // vfwredusum
  if (vv && funct6 == 0x33) return InsnKind::vector_ordered_reduction;  // vfwredosum
  if (funct6 == 0x0e || funct6 == 0x0f) return InsnKind::vector_slide;  // vfslide1up/down
  if (funct6 == 0x10) return InsnKind::vector_scalar_move;              // vfmv.f.s, vfmv.s.f
  if (funct6 == 0x12) return vs1 >= 0x08 ? InsnKind::vector_widen : InsnKind::vector_arith;
  if (funct6 == 0x13 && vs1 == 0) return InsnKind::vector_long;        // vfsqrt
  if (funct6 == 0x20 || funct6 == 0x21) return InsnKind::vector_long;  // vfdiv, vfrdiv
  if (funct6 >= 0x30) return InsnKind::vector_widen;
  return InsnKind::vector_arith;
}

Insn decode_op_v(std::uint32_t bits) {
  const std::uint32_t funct3 = field(bits, 12, 3);
  if (funct3 == kOpcfg) return decode_vset(bits);
  const std::uint32_t funct6 = field(bits, 26, 6);
  const std::uint32_t vs1 = field(bits, 15, 5);
  Insn insn;
  switch (funct3) {
    case kOpivv:
    case kOpivx:
    case kOpivi:
      insn.kind = opi_kind(funct6, funct3);
      if (insn.kind == InsnKind::vector_whole_move) {
        insn.fields = static_cast<std::uint8_t>(vs1 + 1);  // simm5 = registers - 1
      }
      return insn;
    case kOpmvv:
    case kOpmvx:
      insn.kind = opm_kind(funct6, funct3, vs1);
      return insn;
    default:
      insn.kind = opf_kind(funct6, funct3, vs1);
      return insn;
  }
}

// LOAD-FP / STORE-FP: vector loads and stores by their width field; flw, fsd ... are scalar.
Insn decode_vector_memory(std::uint32_t bits) {
  int eew = 0;
  switch (field(bits, 12, 3)) {
    case 0:
      eew = 8;
      break;
    case 5:
      eew = 16;
      break;
    case 6:
      eew = 32;
      break;
    case 7:
      eew = 64;
      break;
    default: {
      Insn scalar = of_kind(InsnKind::scalar);  // flh, flw, fld, flq and their stores
      scalar.scalar_bytes = static_cast<std::uint8_t>(1u << field(bits, 12, 3));
      scalar.store = (bits & 0x7fu) == kStoreFp;
      return scalar;
    }
  }
  Insn insn;
  insn.store = (bits & 0x7fu) == kStoreFp;
  insn.eew_bits = static_cast<std::uint8_t>(eew);
  insn.fields = static_cast<std::uint8_t>(field(bits, 29, 3) + 1);
  const std::uint32_t mop = field(bits, 26, 2);
  if (mop != 0) {
    insn.kind = InsnKind::vector_element_memory;
    return insn;
  }
  switch (field(bits, 20, 5)) {
    case 0x08:
      insn.kind = InsnKind::vector_whole_memory;
      break;
    case 0x0b:
      insn.kind = InsnKind::vector_mask_memory;
      break;
    default:
      insn.kind = InsnKind::vector_unit_memory;  // unit stride, segments, fault-only-first
  }
  return insn;
}

bool is_scalar_long(std::uint32_t opcode, std::uint32_t bits) {
  const std::uint32_t funct7 = field(bits, 25, 7);
  if (opcode == kOp || opcode == kOp32) return funct7 == 0x01 && field(bits, 12, 3) >= 4;
  if (opcode == kOpFp) return funct7 == 0x0c || funct7 == 0x0d || funct7 == 0x2c || funct7 == 0x2d;
  return false;
}

// RV64C: the loads and stores of quadrants 0 (c.fld, c.lw, c.ld, c.fsd, c.sw, c.sd) and 2 (their
// stack-pointer forms); funct3 in bits 13..15. Every other compressed instruction is plain scalar.
Insn decode_compressed(std::uint32_t bits) {
  Insn insn = of_kind(InsnKind::scalar);
  const std::uint32_t quadrant = bits & 3u;
  const std::uint32_t funct3 = field(bits, 13, 3);
  if ((quadrant != 0 && quadrant != 2) || funct3 == 0 || funct3 == 4) return insn;
  insn.scalar_bytes = funct3 == 2 || funct3 == 6 ? 4 : 8;  // c.lw, c.sw (sp) else 8-byte forms
  insn.store = funct3 >= 5;
  return insn;
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

int ceil_log2(std::uint64_t value) {
  int log = 0;
  while ((std::uint64_t{1} << log) < value) ++log;
  return log;
}

}  // namespace

DecodedVtype decode_vtype(std::uint32_t vtypei) {
  DecodedVtype decoded;
  const std::uint32_t vlmul = field(vtypei, 0, 3);
  const std::uint32_t vsew = field(vtypei, 3, 3);
  if (vlmul == 4 || vsew > 3 || field(vtypei, 8, 3) != 0) return decoded;
  decoded.vtype.sew_bits = 8 << vsew;
  decoded.vtype.lmul_log2 = vlmul < 4 ? static_cast<int>(vlmul) : static_cast<int>(vlmul) - 8;
  decoded.valid = true;
  return decoded;
}

Insn decode_insn(std::uint32_t bits) {
  if ((bits & 3u) != 3u) return decode_compressed(bits);
  const std::uint32_t opcode = bits & 0x7fu;
  if (opcode == kOpV) return decode_op_v(bits);
  if (opcode == kLoadFp || opcode == kStoreFp) return decode_vector_memory(bits);
  if (opcode == kLoad || opcode == kStore) {
    Insn insn = of_kind(InsnKind::scalar);  // lb .. ld, lbu .. lwu; sb .. sd
    insn.scalar_bytes = static_cast<std::uint8_t>(1u << field(bits, 12, 2));
    insn.store = opcode == kStore;
    return insn;
  }
  return of_kind(is_scalar_long(opcode, bits) ? InsnKind::scalar_long : InsnKind::scalar);
}

bool is_vector(InsnKind kind) {
  return kind != InsnKind::scalar && kind != InsnKind::scalar_long && kind != InsnKind::vset;
}

namespace {

// Bits in a register group of 2^lmul_log2 registers (fractional groups hold fewer).
std::uint64_t group_bits(int vlen, int lmul_log2) {
  const auto bits = static_cast<std::uint64_t>(vlen);
  return lmul_log2 >= 0 ? bits << lmul_log2 : std::max<std::uint64_t>(1, bits >> -lmul_log2);
}

}  // namespace

std::uint64_t CostModel::vector_bytes(const Insn& insn, const Vtype& vtype) const {
  const std::uint64_t vlmax = group_bits(vlen, vtype.lmul_log2) / vtype.sew_bits;
  switch (insn.kind) {
    case InsnKind::vector_unit_memory:
    case InsnKind::vector_element_memory:
      return vlmax * insn.eew_bits / 8 * insn.fields;
    case InsnKind::vector_whole_memory:
      return static_cast<std::uint64_t>(vlen) / 8 * insn.fields;
    case InsnKind::vector_mask_memory:
      return ceil_div(vlmax, 8);
    default:
      return 0;
  }
}

std::uint64_t CostModel::price(const Insn& insn, const Vtype& vtype) const {
  const auto datapath = static_cast<std::uint64_t>(dlen);
  const auto chunks = [&](std::uint64_t bits) {
    return std::max<std::uint64_t>(1, ceil_div(bits, datapath));
  };
  const std::uint64_t group = group_bits(vlen, vtype.lmul_log2);
  const std::uint64_t vlmax = std::max<std::uint64_t>(1, group / vtype.sew_bits);
  const int tree_steps = ceil_log2(std::max<std::uint64_t>(2, datapath / vtype.sew_bits));
  switch (insn.kind) {
    case InsnKind::scalar:
    case InsnKind::vset:
    case InsnKind::vector_scalar_move:
    case InsnKind::vector_mask:
      return 1;
    case InsnKind::scalar_long:
      return kLongLatency;
    case InsnKind::vector_arith:
    case InsnKind::vector_slide:
      return chunks(group);
    case InsnKind::vector_widen:
      return chunks(2 * group);
    case InsnKind::vector_long:
      return kLongLatency * chunks(group);
    case InsnKind::vector_reduction:
      return chunks(group) + static_cast<std::uint64_t>(tree_steps);
    case InsnKind::vector_wide_reduction:
      return chunks(group) + static_cast<std::uint64_t>(std::max(1, tree_steps - 1));
    case InsnKind::vector_ordered_reduction:
    case InsnKind::vector_gather:
      return vlmax;
    case InsnKind::vector_whole_move:
      return chunks(static_cast<std::uint64_t>(vlen)) * insn.fields;
    case InsnKind::vector_unit_memory:
    case InsnKind::vector_whole_memory:
    case InsnKind::vector_mask_memory:
      return chunks(vector_bytes(insn, vtype) * 8);
    case InsnKind::vector_element_memory:
      return vlmax * insn.fields;
  }
  return 1;
}

std::string CostModel::name() const {
  return "rvv-cost-v1 vlen=" + std::to_string(vlen) + " dlen=" + std::to_string(dlen);
}

}  // namespace mblast::rvv
