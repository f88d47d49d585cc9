// The RVV cost model and trace pricer, without the toolchain: instruction bits taken from real
// QEMU traces and llvm-mc, and hand-made traces in QEMU 7.2's -d in_asm,exec,nochain format.
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "mblast/error.hpp"
#include "rvv/rvv_cost_model.hpp"
#include "rvv/rvv_trace.hpp"

namespace mblast::rvv {
namespace {

constexpr Vtype kE32M1{32, 0};
constexpr Vtype kE32M4{32, 2};
constexpr Vtype kE32M8{32, 3};
constexpr Vtype kE32Mf2{32, -1};

TEST(RvvDecodeTest, ReadsVtypeFromVsetvliAndVsetivli) {
  const Insn m4 = decode_insn(0x0526f6d7);  // vsetvli a3,a3,e32,m4,ta,mu
  EXPECT_EQ(m4.kind, InsnKind::vset);
  EXPECT_TRUE(m4.sets_vtype);
  EXPECT_EQ(m4.vtype, kE32M4);
  EXPECT_EQ(decode_insn(0x05357557).vtype, kE32M8);  // vsetvli a0,a0,e32,m8,ta,mu
  EXPECT_EQ(decode_insn(0x05007557).vtype, kE32M1);  // vsetvli a0,zero,e32,m1,ta,mu
  const Insn ivli = decode_insn(0xcd0475d7);         // vsetivli a1,8,e32,m1,ta,ma
  EXPECT_TRUE(ivli.sets_vtype);
  EXPECT_EQ(ivli.vtype, kE32M1);
  const Insn reg = decode_insn(0x80b572d7);  // vsetvl t0,a0,a1
  EXPECT_EQ(reg.kind, InsnKind::vset);
  EXPECT_FALSE(reg.sets_vtype);
  EXPECT_TRUE(reg.register_vtype);
  EXPECT_EQ(decode_vtype(0x0d7).vtype, kE32Mf2);  // e32, mf2, ta, ma
  EXPECT_FALSE(decode_vtype(0x004).valid);        // LMUL encoding 4 is reserved
}

TEST(RvvDecodeTest, ClassifiesVectorInstructions) {
  EXPECT_EQ(decode_insn(0x0207e407).kind, InsnKind::vector_unit_memory);  // vle32.v
  EXPECT_EQ(decode_insn(0x0207e407).eew_bits, 32);
  EXPECT_EQ(decode_insn(0x02076427).kind, InsnKind::vector_unit_memory);        // vse32.v
  EXPECT_EQ(decode_insn(0x92841457).kind, InsnKind::vector_arith);              // vfmul.vv
  EXPECT_EQ(decode_insn(0x07041457).kind, InsnKind::vector_reduction);          // vfredusum.vs
  EXPECT_EQ(decode_insn(0x0f041457).kind, InsnKind::vector_ordered_reduction);  // vfredosum.vs
  EXPECT_EQ(decode_insn(0x42801457).kind, InsnKind::vector_scalar_move);        // vfmv.f.s
  EXPECT_EQ(decode_insn(0x82881457).kind, InsnKind::vector_long);               // vfdiv.vv
  EXPECT_EQ(decode_insn(0x33040c57).kind, InsnKind::vector_gather);             // vrgather.vv
  EXPECT_EQ(decode_insn(0xf2855857).kind, InsnKind::vector_widen);              // vfwmacc.vf
  const Insn move = decode_insn(0x9e81b857);                                    // vmv4r.v
  EXPECT_EQ(move.kind, InsnKind::vector_whole_move);
  EXPECT_EQ(move.fields, 4);
  EXPECT_EQ(decode_insn(0x0ab56407).kind, InsnKind::vector_element_memory);  // vlse32.v
  const Insn whole = decode_insn(0x62856407);                                // vl4re32.v
  EXPECT_EQ(whole.kind, InsnKind::vector_whole_memory);
  EXPECT_EQ(whole.fields, 4);
  EXPECT_EQ(decode_insn(0x22056407).fields, 2);  // vlseg2e32.v
}

TEST(RvvDecodeTest, ClassifiesScalarInstructions) {
  EXPECT_EQ(decode_insn(0x8082).kind, InsnKind::scalar);           // ret (compressed)
  EXPECT_EQ(decode_insn(0x3e800593).kind, InsnKind::scalar);       // addi a1,zero,1000
  EXPECT_EQ(decode_insn(0x00052407).kind, InsnKind::scalar);       // flw fs0,0(a0)
  EXPECT_EQ(decode_insn(0x02b50533).kind, InsnKind::scalar);       // mul
  EXPECT_EQ(decode_insn(0x02b54533).kind, InsnKind::scalar_long);  // div
  EXPECT_EQ(decode_insn(0x18b57553).kind, InsnKind::scalar_long);  // fdiv.s
  EXPECT_EQ(decode_insn(0x58057553).kind, InsnKind::scalar_long);  // fsqrt.s
  EXPECT_FALSE(is_vector(InsnKind::vset));
  EXPECT_TRUE(is_vector(InsnKind::vector_arith));
}

TEST(RvvDecodeTest, CountsTheBytesOfScalarLoadsAndStores) {
  struct Case {
    std::uint32_t bits;
    int bytes;
    bool store;
    const char* text;
  };
  for (const Case& c :
       {Case{0x0005a503, 4, false, "lw a0,0(a1)"}, Case{0x00259503, 2, false, "lh a0,2(a1)"},
        Case{0x0035c503, 1, false, "lbu a0,3(a1)"}, Case{0x00a13423, 8, true, "sd a0,8(sp)"},
        Case{0x0005a507, 4, false, "flw fa0,0(a1)"}, Case{0x00a5b827, 8, true, "fsd fa0,16(a1)"},
        Case{0x4188, 4, false, "c.lw a0,0(a1)"}, Case{0x2588, 8, false, "c.fld fa0,8(a1)"},
        Case{0xe42a, 8, true, "c.sd a0,8(sp)"}, Case{0xe406, 8, true, "c.sdsp ra,8(sp)"}}) {
    const Insn insn = decode_insn(c.bits);
    EXPECT_EQ(insn.kind, InsnKind::scalar) << c.text;
    EXPECT_EQ(insn.scalar_bytes, c.bytes) << c.text;
    EXPECT_EQ(insn.store, c.store) << c.text;
  }
  EXPECT_EQ(decode_insn(0x4505).scalar_bytes, 0) << "c.li a0,1 moves no memory";
  EXPECT_EQ(decode_insn(0x3e800593).scalar_bytes, 0) << "addi moves no memory";
  EXPECT_TRUE(decode_insn(0x02076427).store) << "vse32.v";
  EXPECT_FALSE(decode_insn(0x0207e407).store) << "vle32.v";
}

TEST(RvvCostModelTest, PricesByRegisterGroupOverTheDatapath) {
  const CostModel model{256, 128};
  EXPECT_EQ(model.price(decode_insn(0x3e800593), kE32M4), 1u);
  EXPECT_EQ(model.price(decode_insn(0x18b57553), kE32M4), CostModel::kLongLatency);
  EXPECT_EQ(model.price(decode_insn(0x92841457), kE32M1), 2u);   // 256 / 128
  EXPECT_EQ(model.price(decode_insn(0x92841457), kE32M4), 8u);   // 1024 / 128
  EXPECT_EQ(model.price(decode_insn(0x92841457), kE32Mf2), 1u);  // 128 / 128
  EXPECT_EQ(model.price(decode_insn(0x0207e407), kE32M4), 8u);   // 128 bytes over 16 per cycle
  EXPECT_EQ(model.vector_bytes(decode_insn(0x0207e407), kE32M4), 128u);
  EXPECT_EQ(model.price(decode_insn(0x07041457), kE32M8), 16u + 2u);  // + log2(128 / 32)
  EXPECT_EQ(model.price(decode_insn(0x0f041457), kE32M8), 64u);       // one per element
  EXPECT_EQ(model.price(decode_insn(0x82881457), kE32M4), 8u * CostModel::kLongLatency);
  EXPECT_EQ(model.price(decode_insn(0xf2855857), kE32M4), 16u);  // the wide side is m8
  EXPECT_EQ(model.price(decode_insn(0x0ab56407), kE32M4), 32u);  // strided: per element
  EXPECT_EQ(model.price(decode_insn(0x62856407), kE32M1), 8u);   // 4 whole registers
  EXPECT_EQ(model.price(decode_insn(0x0526f6d7), kE32M1), 1u);
  EXPECT_EQ(CostModel({512, 256}).price(decode_insn(0x92841457), kE32M4), 8u);
}

// A trace in QEMU 7.2's format: two blocks before the window, then begin, a vector loop that
// runs twice (the second time retranslated at the same host address after a code-cache flush)
// and end.
const char* const kTrace = R"(----------------
IN: main
0x0000000000010690:  00000097          auipc                   ra,0
0x0000000000010694:  fd4080e7          jalr                    ra,ra,-44

Trace 0: 0x7f0000000100 [0000000000000000/0000000000010690/00207600/00000200] main
----------------
IN: mblast_begin
0x0000000000010698:  8082              ret

Trace 0: 0x7f0000000200 [0000000000000000/0000000000010698/00207600/00000200] mblast_begin
----------------
IN: mblast_forward
0x00000000000106e2:  40a586b3          sub                     a3,a1,a0
0x00000000000106e6:  0526f6d7          vsetvli                 a3,a3,e32,m4,ta,mu

Trace 0: 0x7f0000000300 [0000000000000000/00000000000106e2/00207600/00000200] mblast_forward
----------------
IN: mblast_forward
0x00000000000106ea:  00251713          slli                    a4,a0,2
0x00000000000106f2:  0207e407          vle32.v                 v8,(a5)
0x00000000000106f8:  92841457          vfmul.vv                v8,v8,v8
0x00000000000106fe:  02076427          vse32.v                 v8,(a4)
0x0000000000010702:  feb560e3          bgtu                    a1,a0,-32

Trace 0: 0x7f0000000400 [0000000000000000/00000000000106ea/01206e90/00000200] mblast_forward
Trace 0: 0x7f0000000300 [0000000000000000/00000000000106e2/01206e90/00000200] mblast_forward
----------------
IN: mblast_forward
0x00000000000106ea:  00251713          slli                    a4,a0,2
0x00000000000106f2:  0207e407          vle32.v                 v8,(a5)
0x00000000000106f8:  92841457          vfmul.vv                v8,v8,v8
0x00000000000106fe:  02076427          vse32.v                 v8,(a4)
0x0000000000010702:  feb560e3          bgtu                    a1,a0,-32

Trace 0: 0x7f0000000400 [0000000000000000/00000000000106ea/01206690/00000200] mblast_forward
----------------
IN: mblast_end
0x000000000001069a:  0001              nop
0x000000000001069c:  8082              ret

Trace 0: 0x7f0000000500 [0000000000000000/000000000001069a/00206e98/00000200] mblast_end
Trace 0: 0x7f0000000100 [0000000000000000/0000000000010690/00207600/00000200] main
)";

TEST(RvvTraceTest, CountsOnlyTheWindowAndTracksVtype) {
  std::istringstream trace(kTrace);
  const TraceCost c = price_trace(trace, {0x10698, 0x1069a}, CostModel{256, 128});
  // 2 x (sub, vsetvli) + 2 x (slli, bgtu at 1, vle32 / vfmul / vse32 at e32m4: 8 each).
  EXPECT_EQ(c.instructions, 2u * 2u + 2u * 5u);
  EXPECT_EQ(c.vset_instructions, 2u);
  EXPECT_EQ(c.vector_instructions, 6u);
  EXPECT_EQ(c.cost, 2u * 2u + 2u * (2u + 3u * 8u));
  EXPECT_EQ(c.vector_bytes, 2u * 2u * 128u);
  EXPECT_EQ(c.vector_load_bytes, 2u * 128u);
  EXPECT_EQ(c.vector_store_bytes, 2u * 128u);
  EXPECT_EQ(c.scalar_load_bytes + c.scalar_store_bytes + c.strided_bytes, 0u);
  EXPECT_EQ(c.blocks, 4u);
  EXPECT_TRUE(c.window_closed);
}

TEST(RvvTraceTest, SaysWhenTheForwardNeverReturned) {
  std::string text(kTrace);
  text.resize(text.find("----------------\nIN: mblast_end"));
  std::istringstream trace(text);
  EXPECT_FALSE(price_trace(trace, {0x10698, 0x1069a}, CostModel{}).window_closed);
}

TEST(RvvTraceTest, RejectsABlockThatRanBeforeItWasLogged) {
  std::istringstream trace(
      "Trace 0: 0x7f0000000100 [0000000000000000/0000000000010690/00207600/00000200] main\n");
  EXPECT_THROW(price_trace(trace, {0x10698, 0x1069a}, CostModel{}), Error);
}

}  // namespace
}  // namespace mblast::rvv
