/* mblast's independent check of the RVV cost model: a QEMU TCG plugin (plugin API version 1,
 * QEMU 7.x) that watches the forward between the harness's mblast_begin and mblast_end markers
 * through the plugin interface, not through QEMU's execution log that the cost model replays.
 *
 * It counts the instructions executed and every memory access with its address, and prices them
 * under a documented timing model (COST_MODEL.md, "Independent check"): one cycle per
 * instruction; a memory instruction takes one cycle per DLEN-bit beat it touches (so the real
 * vector length and the real strides count, not VLMAX); a vector arithmetic instruction takes
 * LMUL * VLEN / DLEN cycles (at least one) for the LMUL of the last vsetvli / vsetivli; every
 * access whose cache line misses a set-associative LRU L1 data cache adds a miss penalty.
 *
 * Arguments: begin=ADDR,end=ADDR,out=FILE[,skip_begin=ADDR,skip_end=ADDR,vlen=256,dlen=128,
 * l1_kib=32,l1_ways=8,line=64,miss=20]. Code in [skip_begin, skip_end) (the harness's main, whose
 * few instructions between the markers and the forward the cost model leaves out) is not counted.
 * The plugin API is a C ABI; the declarations below are the subset this file uses, written from
 * QEMU's documentation of include/qemu/qemu-plugin.h (version 1). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef uint32_t qemu_plugin_meminfo_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void* userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void* userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb* tb);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
                                          uint64_t vaddr, void* userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb* tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void* userdata);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn* insn,
                                            qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void* userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn* insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
                                      void* userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void* userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb* tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb* tb);
struct qemu_plugin_insn* qemu_plugin_tb_get_insn(const struct qemu_plugin_tb* tb, size_t idx);
const void* qemu_plugin_insn_data(const struct qemu_plugin_insn* insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn* insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn* insn);
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

enum insn_kind {
  SCALAR,
  SCALAR_MEMORY,
  VSET_IMMEDIATE,
  VSET_REGISTER,
  VECTOR_ARITH,
  VECTOR_MEMORY
};

struct insn_info {
  uint8_t kind;
  uint8_t lmul_eighths; /* VSET_IMMEDIATE: LMUL * 8 of the vtype it sets */
};

struct config {
  uint64_t begin, end, skip_begin, skip_end;
  char out[4096];
  unsigned vlen, dlen, l1_kib, l1_ways, line, miss;
};

struct counts {
  uint64_t instructions, vector_instructions, memory_instructions;
  uint64_t loads, stores, load_bytes, store_bytes, beats, l1_accesses, l1_misses, cycles;
  uint64_t windows;
};

static struct config cfg = {0, 0, 0, 0, "", 256, 128, 32, 8, 64, 20};
static struct counts total, at_end;
static bool active, start_next_tb, ended;
static unsigned lmul_eighths = 8;
/* The memory instruction being executed: its beats are counted as its accesses arrive. */
static bool in_memory_insn;
static uint64_t last_beat = UINT64_MAX, insn_beats;
/* L1: sets x ways of line tags, each set in LRU order (way 0 most recent). */
static uint64_t* l1_tags;
static unsigned l1_sets;

/* Opcode classes of the RISC-V base encoding (RVV 1.0 spec, "Vector Instruction Formats"). */
static struct insn_info classify(uint32_t bits, size_t size) {
  struct insn_info info = {SCALAR, 0};
  if (size == 2) {
    const uint32_t op = bits & 3, funct3 = (bits >> 13) & 7;
    /* compressed loads and stores: quadrant 0 funct3 1-3 and 5-7, quadrant 2 the same */
    if ((op == 0 || op == 2) && funct3 != 0 && funct3 != 4) info.kind = SCALAR_MEMORY;
    return info;
  }
  const uint32_t opcode = bits & 0x7f, width = (bits >> 12) & 7;
  if (opcode == 0x03 || opcode == 0x23) info.kind = SCALAR_MEMORY;
  if (opcode == 0x07 || opcode == 0x27) { /* LOAD-FP / STORE-FP: vector when width is 0, 5-7 */
    info.kind = (width == 0 || width >= 5) ? VECTOR_MEMORY : SCALAR_MEMORY;
  }
  if (opcode == 0x57) {
    if (width != 7) {
      info.kind = VECTOR_ARITH;
    } else if ((bits >> 31) == 0 || (bits >> 30) == 3) { /* vsetvli, vsetivli */
      const uint32_t vlmul = (bits >> 20) & 7;
      info.kind = VSET_IMMEDIATE;
      info.lmul_eighths = (uint8_t)(vlmul < 4 ? 8u << vlmul : (vlmul == 4 ? 8 : 1u << (vlmul - 5)));
    } else {
      info.kind = VSET_REGISTER;
    }
  }
  return info;
}

static void end_memory_insn(void) {
  if (in_memory_insn && insn_beats == 0) total.cycles += 1; /* vl = 0 still issues */
  in_memory_insn = false;
  insn_beats = 0;
  last_beat = UINT64_MAX;
}

static void on_insn(unsigned int vcpu, void* udata) {
  (void)vcpu;
  if (!active) return;
  const struct insn_info* info = udata;
  end_memory_insn();
  total.instructions += 1;
  switch (info->kind) {
    case VSET_IMMEDIATE:
      lmul_eighths = info->lmul_eighths;
      total.cycles += 1;
      break;
    case VSET_REGISTER: /* its vtype is in a register the plugin cannot read: LMUL 1 */
      lmul_eighths = 8;
      total.cycles += 1;
      break;
    case VECTOR_ARITH: {
      const uint64_t bits = (uint64_t)lmul_eighths * cfg.vlen / 8;
      total.vector_instructions += 1;
      total.cycles += bits > cfg.dlen ? (bits + cfg.dlen - 1) / cfg.dlen : 1;
      break;
    }
    case VECTOR_MEMORY:
      total.vector_instructions += 1;
      total.memory_instructions += 1;
      in_memory_insn = true; /* its beats are its cycles, counted per access */
      break;
    case SCALAR_MEMORY:
      total.memory_instructions += 1;
      in_memory_insn = true;
      break;
    default:
      total.cycles += 1;
  }
}

static bool l1_access(uint64_t line) {
  uint64_t* set = l1_tags + (line % l1_sets) * cfg.l1_ways;
  const uint64_t tag = line + 1; /* 0 marks an empty way */
  unsigned way = 0;
  while (way < cfg.l1_ways && set[way] != tag) ++way;
  const bool hit = way < cfg.l1_ways;
  if (!hit) way = cfg.l1_ways - 1;
  memmove(set + 1, set, way * sizeof(uint64_t));
  set[0] = tag;
  return hit;
}

static void on_memory(unsigned int vcpu, qemu_plugin_meminfo_t meminfo, uint64_t vaddr,
                      void* udata) {
  (void)vcpu;
  (void)udata;
  if (!active) return;
  const uint64_t bytes = 1ull << qemu_plugin_mem_size_shift(meminfo);
  if (qemu_plugin_mem_is_store(meminfo)) {
    total.stores += 1;
    total.store_bytes += bytes;
  } else {
    total.loads += 1;
    total.load_bytes += bytes;
  }
  const uint64_t beat_bytes = cfg.dlen / 8;
  for (uint64_t beat = vaddr / beat_bytes; beat <= (vaddr + bytes - 1) / beat_bytes; ++beat) {
    if (beat != last_beat) {
      total.beats += 1;
      if (in_memory_insn) {
        total.cycles += 1;
        insn_beats += 1;
      }
    }
    last_beat = beat;
  }
  for (uint64_t line = vaddr / cfg.line; line <= (vaddr + bytes - 1) / cfg.line; ++line) {
    total.l1_accesses += 1;
    if (!l1_access(line)) {
      total.l1_misses += 1;
      total.cycles += cfg.miss;
    }
  }
}

static void on_tb(unsigned int vcpu, void* udata) {
  (void)vcpu;
  const uint64_t pc = (uint64_t)(uintptr_t)udata;
  if (start_next_tb) {
    start_next_tb = false;
    active = true;
  }
  if (pc == cfg.begin && !active) {
    start_next_tb = true; /* the marker's own block is not counted, as in the cost model */
    total.windows += 1;
  } else if (pc == cfg.end && active) {
    end_memory_insn();
    at_end = total;
    ended = true;
    active = false;
  }
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  const uint64_t pc = qemu_plugin_tb_vaddr(tb);
  qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb, QEMU_PLUGIN_CB_NO_REGS, (void*)(uintptr_t)pc);
  const size_t n = qemu_plugin_tb_n_insns(tb);
  for (size_t i = 0; i < n; ++i) {
    struct qemu_plugin_insn* insn = qemu_plugin_tb_get_insn(tb, i);
    const uint64_t vaddr = qemu_plugin_insn_vaddr(insn);
    if (vaddr >= cfg.skip_begin && vaddr < cfg.skip_end) continue;
    const size_t size = qemu_plugin_insn_size(insn);
    uint32_t bits = 0;
    memcpy(&bits, qemu_plugin_insn_data(insn), size < 4 ? size : 4);
    struct insn_info* info = malloc(sizeof *info); /* lives as long as QEMU's translation */
    if (!info) abort();
    *info = classify(bits, size);
    qemu_plugin_register_vcpu_insn_exec_cb(insn, on_insn, QEMU_PLUGIN_CB_NO_REGS, info);
    if (info->kind == SCALAR_MEMORY || info->kind == VECTOR_MEMORY) {
      qemu_plugin_register_vcpu_mem_cb(insn, on_memory, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
                                       NULL);
    }
  }
}

static void on_qemu_exit(qemu_plugin_id_t id, void* udata) {
  (void)id;
  (void)udata;
  FILE* out = fopen(cfg.out, "w");
  if (!out) return;
  const struct counts* c = &at_end;
  fprintf(out,
          "{\"window_closed\": %s, \"windows\": %llu, \"instructions\": %llu, "
          "\"vector_instructions\": %llu, \"memory_instructions\": %llu, \"loads\": %llu, "
          "\"stores\": %llu, \"load_bytes\": %llu, \"store_bytes\": %llu, \"beats\": %llu, "
          "\"l1_accesses\": %llu, \"l1_misses\": %llu, \"cycles\": %llu, \"vlen\": %u, "
          "\"dlen\": %u, \"l1_kib\": %u, \"l1_ways\": %u, \"line\": %u, \"miss\": %u}\n",
          ended ? "true" : "false", (unsigned long long)total.windows,
          (unsigned long long)c->instructions, (unsigned long long)c->vector_instructions,
          (unsigned long long)c->memory_instructions, (unsigned long long)c->loads,
          (unsigned long long)c->stores, (unsigned long long)c->load_bytes,
          (unsigned long long)c->store_bytes, (unsigned long long)c->beats,
          (unsigned long long)c->l1_accesses, (unsigned long long)c->l1_misses,
          (unsigned long long)c->cycles, cfg.vlen, cfg.dlen, cfg.l1_kib, cfg.l1_ways, cfg.line,
          cfg.miss);
  fclose(out);
}

static bool parse_arg(const char* arg) {
  const char* eq = strchr(arg, '=');
  if (!eq) return false;
  const size_t key = (size_t)(eq - arg);
  const char* value = eq + 1;
  if (key == 3 && !strncmp(arg, "out", 3)) {
    snprintf(cfg.out, sizeof cfg.out, "%s", value);
    return true;
  }
  char* rest = NULL;
  const unsigned long long number = strtoull(value, &rest, 0);
  if (!*value || *rest) return false;
  struct {
    const char* name;
    unsigned* field;
  } fields[] = {{"vlen", &cfg.vlen},       {"dlen", &cfg.dlen}, {"l1_kib", &cfg.l1_kib},
                {"l1_ways", &cfg.l1_ways}, {"line", &cfg.line}, {"miss", &cfg.miss}};
  if (key == 5 && !strncmp(arg, "begin", 5)) return (cfg.begin = number), true;
  if (key == 3 && !strncmp(arg, "end", 3)) return (cfg.end = number), true;
  if (key == 10 && !strncmp(arg, "skip_begin", 10)) return (cfg.skip_begin = number), true;
  if (key == 8 && !strncmp(arg, "skip_end", 8)) return (cfg.skip_end = number), true;
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; ++i) {
    if (strlen(fields[i].name) == key && !strncmp(arg, fields[i].name, key)) {
      *fields[i].field = (unsigned)number;
      return number > 0;
    }
  }
  return false;
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
                                                               const qemu_info_t* info, int argc,
                                                               char** argv) {
  (void)info;
  for (int i = 0; i < argc; ++i) {
    if (!parse_arg(argv[i])) {
      fprintf(stderr, "mblast check plugin: bad argument '%s'\n", argv[i]);
      return -1;
    }
  }
  if (!cfg.begin || !cfg.end || !cfg.out[0] || cfg.dlen % 8 || cfg.line & (cfg.line - 1)) {
    fprintf(stderr,
            "mblast check plugin: needs begin=, end=, out= (dlen a multiple of 8, line a power of "
            "2)\n");
    return -1;
  }
  l1_sets = cfg.l1_kib * 1024 / (cfg.line * cfg.l1_ways);
  if (l1_sets == 0) return -1;
  l1_tags = calloc((size_t)l1_sets * cfg.l1_ways, sizeof(uint64_t));
  if (!l1_tags) return -1;
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, on_qemu_exit, NULL);
  return 0;
}
