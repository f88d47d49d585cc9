#include "rvv_trace.hpp"

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mblast/error.hpp"

namespace mblast::rvv {
namespace {

// QEMU 7.x riscv TB_FLAGS: LMUL in bits 3..5, SEW in bits 6..8. Read only after a vsetvl whose
// vtype came from a register; vsetvli / vsetivli carry theirs in the instruction.
Vtype vtype_from_tb_flags(std::uint64_t flags) {
  const auto lmul = static_cast<int>((flags >> 3) & 7u);
  const auto sew = static_cast<int>((flags >> 6) & 7u);
  Vtype vtype;
  vtype.lmul_log2 = lmul < 4 ? lmul : lmul - 8;
  vtype.sew_bits = 8 << (sew & 3);
  return vtype;
}

std::optional<std::uint64_t> parse_hex(std::string_view text) {
  if (text.starts_with("0x")) text.remove_prefix(2);
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return {};
  return value;
}

struct Block {
  std::uint64_t pc = 0;
  std::vector<Insn> insns;
  // Cached price of one run of this block, for the vtype it last started with.
  std::optional<Vtype> priced_for;
  Vtype vtype_after;
  bool vtype_from_next_flags = false;
  TraceCost run_cost;
};

class TracePricer {
 public:
  TracePricer(const CostWindow& window, const CostModel& model) : window_(window), model_(model) {}

  void line(std::string_view text) {
    if (text.starts_with("IN:")) {
      pending_.emplace();
      in_block_ = true;
    } else if (in_block_ && text.starts_with("0x")) {
      add_instruction(text);
    } else if (text.starts_with("Trace ")) {
      in_block_ = false;
      executed(text);
    } else {
      in_block_ = false;
    }
  }

  TraceCost finish() const {
    TraceCost result = at_end_;
    result.window_closed = started_ && closed_;
    return result;
  }

 private:
  [[noreturn]] void inconsistent(const std::string& what) const {
    throw job_error("the QEMU trace cannot be priced: " + what,
                    "this QEMU's -d in_asm,exec output is not the format mblast reads");
  }

  void add_instruction(std::string_view text) {
    // "0x0000000000010698:  8082              ret"
    const auto colon = text.find(':');
    if (colon == std::string_view::npos) inconsistent("instruction line without ':'");
    const auto address = parse_hex(text.substr(0, colon));
    std::string_view rest = text.substr(colon + 1);
    rest.remove_prefix(std::min(rest.find_first_not_of(' '), rest.size()));
    const auto word = parse_hex(rest.substr(0, rest.find(' ')));
    if (!address || !word) inconsistent("cannot read the instruction line " + std::string(text));
    if (pending_->insns.empty()) pending_->pc = *address;
    pending_->insns.push_back(decode_insn(static_cast<std::uint32_t>(*word)));
  }

  void executed(std::string_view text) {
    // "Trace 0: 0x7f82a9828540 [0000000000000000/0000000000010698/00207600/00000200] symbol"
    const auto colon = text.find(':');
    const auto open = text.find('[');
    const auto close = text.find(']');
    if (colon == std::string_view::npos || open == std::string_view::npos ||
        close == std::string_view::npos || close < open) {
      inconsistent("cannot read the line " + std::string(text));
    }
    std::string_view host = text.substr(colon + 1, open - colon - 1);
    host.remove_prefix(std::min(host.find_first_not_of(' '), host.size()));
    host = host.substr(0, host.find(' '));
    std::vector<std::uint64_t> fields;
    std::string_view inside = text.substr(open + 1, close - open - 1);
    while (!inside.empty()) {
      const auto slash = inside.find('/');
      const auto value = parse_hex(inside.substr(0, slash));
      if (!value) inconsistent("cannot read the line " + std::string(text));
      fields.push_back(*value);
      inside = slash == std::string_view::npos ? std::string_view() : inside.substr(slash + 1);
    }
    const auto host_address = parse_hex(host);
    if (!host_address || fields.size() < 3)
      inconsistent("cannot read the line " + std::string(text));
    run(block_for(*host_address, fields[1]), fields[2]);
  }

  Block& block_for(std::uint64_t host, std::uint64_t pc) {
    // A block is translated (and logged under "IN:") right before its first run; QEMU may
    // reuse host addresses after flushing its code cache, so a fresh translation wins.
    if (pending_ && pending_->pc == pc && !pending_->insns.empty()) {
      Block& block = blocks_[host] = std::move(*pending_);
      pending_.reset();
      return block;
    }
    const auto found = blocks_.find(host);
    if (found == blocks_.end() || found->second.pc != pc) {
      inconsistent("block at pc 0x" + hex(pc) + " ran before its instructions were logged");
    }
    return found->second;
  }

  void run(Block& block, std::uint64_t flags) {
    if (next_flags_give_vtype_) {
      vtype_ = vtype_from_tb_flags(flags);
      next_flags_give_vtype_ = false;
    }
    if (!started_) {
      started_ = block.pc == window_.begin;
      return;
    }
    if (block.pc == window_.end) {
      at_end_ = total_;
      closed_ = true;
    }
    if (!block.priced_for || !(*block.priced_for == vtype_)) price(block);
    const TraceCost& c = block.run_cost;
    total_.cost += c.cost;
    total_.instructions += c.instructions;
    total_.vector_instructions += c.vector_instructions;
    total_.vset_instructions += c.vset_instructions;
    total_.vector_bytes += c.vector_bytes;
    total_.scalar_load_bytes += c.scalar_load_bytes;
    total_.scalar_store_bytes += c.scalar_store_bytes;
    total_.vector_load_bytes += c.vector_load_bytes;
    total_.vector_store_bytes += c.vector_store_bytes;
    total_.strided_bytes += c.strided_bytes;
    total_.blocks += 1;
    vtype_ = block.vtype_after;
    next_flags_give_vtype_ = block.vtype_from_next_flags;
  }

  void price(Block& block) const {
    block.priced_for = vtype_;
    Vtype vtype = vtype_;
    TraceCost c;
    block.vtype_from_next_flags = false;
    for (const Insn& insn : block.insns) {
      c.cost += model_.price(insn, vtype);
      c.instructions += 1;
      c.vset_instructions += insn.kind == InsnKind::vset ? 1 : 0;
      if (is_vector(insn.kind)) {
        c.vector_instructions += 1;
        add_vector_bytes(c, insn, model_.vector_bytes(insn, vtype));
      }
      (insn.store ? c.scalar_store_bytes : c.scalar_load_bytes) += insn.scalar_bytes;
      if (insn.sets_vtype) vtype = insn.vtype;
      if (insn.register_vtype) block.vtype_from_next_flags = true;
    }
    block.vtype_after = vtype;
    block.run_cost = c;
  }

  static void add_vector_bytes(TraceCost& c, const Insn& insn, std::uint64_t bytes) {
    c.vector_bytes += bytes;
    (insn.store ? c.vector_store_bytes : c.vector_load_bytes) += bytes;
    if (insn.kind == InsnKind::vector_element_memory) c.strided_bytes += bytes;
  }

  static std::string hex(std::uint64_t value) {
    char text[17] = {};
    const auto [end, error] = std::to_chars(text, text + 16, value, 16);
    return std::string(text, end);
  }

  CostWindow window_;
  CostModel model_;
  std::optional<Block> pending_;
  bool in_block_ = false;
  std::unordered_map<std::uint64_t, Block> blocks_;
  Vtype vtype_;
  bool next_flags_give_vtype_ = false;
  bool started_ = false;
  bool closed_ = false;
  TraceCost total_;
  TraceCost at_end_;
};

}  // namespace

nlohmann::json TraceCost::to_json() const {
  return {{"cost", cost},
          {"instructions", instructions},
          {"vector_instructions", vector_instructions},
          {"vset_instructions", vset_instructions},
          {"vector_bytes", vector_bytes},
          {"scalar_load_bytes", scalar_load_bytes},
          {"scalar_store_bytes", scalar_store_bytes},
          {"vector_load_bytes", vector_load_bytes},
          {"vector_store_bytes", vector_store_bytes},
          {"strided_bytes", strided_bytes},
          {"blocks", blocks}};
}

TraceCost price_trace(std::istream& trace, const CostWindow& window, const CostModel& model) {
  TracePricer pricer(window, model);
  std::string text;
  while (std::getline(trace, text)) pricer.line(text);
  return pricer.finish();
}

}  // namespace mblast::rvv
