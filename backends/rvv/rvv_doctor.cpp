// `mblast doctor`'s checks for the RVV backend: clang's RISC-V target with the sysroot, and QEMU
// with the vector extension, by building and running a small vector program.
#include "rvv/rvv_doctor.hpp"

#include <unistd.h>

#include <fstream>

#include "mblast/probe.hpp"

namespace mblast {
namespace {

using namespace probing;
namespace fs = std::filesystem;
using std::chrono::seconds;

constexpr const char* kRvvToolchain = "rvv-toolchain";
constexpr const char* kQemuRvv = "qemu-rvv";
constexpr const char* kRvvSysroot = "/usr/riscv64-linux-gnu";
constexpr const char* kQemuCpu = "rv64,v=true,vlen=256";
// Sum of i*i for i = 1..1000, and VLMAX for SEW=32, LMUL=1 at VLEN=256.
constexpr const char* kRvvExpected = "rvv-probe sum=333833500 vlmax_e32m1=8\n";

// Intrinsics whose signatures are the same in the v0.10 API (clang 14, unprefixed) and the
// ratified v0.12+ API (__riscv_ prefix), so one source serves both spellings.
constexpr const char* kRvvProbeSource = R"(#include <riscv_vector.h>
#include <stdio.h>
#if MBLAST_RVV_PREFIXED
#define RVV(name) __riscv_##name
#else
#define RVV(name) name
#endif
enum { kN = 1000 };
static int a[kN], c[kN];
int main(void) {
  for (int i = 0; i < kN; ++i) a[i] = i + 1;
  for (size_t i = 0, vl; i < kN; i += vl) {
    vl = RVV(vsetvl_e32m1)(kN - i);
    vint32m1_t v = RVV(vle32_v_i32m1)(a + i, vl);
    RVV(vse32_v_i32m1)(c + i, RVV(vmul_vv_i32m1)(v, v, vl), vl);
  }
  long sum = 0;
  for (int i = 0; i < kN; ++i) sum += c[i];
  printf("rvv-probe sum=%ld vlmax_e32m1=%zu\n", sum, RVV(vsetvlmax_e32m1)());
  return 0;
}
)";

// Builds the RVV probe into `dir`; on success `executable` names it.
DoctorCheck build_rvv_probe(const fs::path& dir, fs::path& executable) {
  DoctorCheck check = make_check(kRvvToolchain, true);
  const std::string fix = "apt-get install clang lld gcc-riscv64-linux-gnu libc6-dev-riscv64-cross";
  const auto clang = find_program("clang");
  if (!clang) return fail(check, "clang not found on PATH", fix);
  const std::string version = word_after(probe({clang->string(), "--version"}).out, "version ");

  const fs::path source = dir / "rvv_probe.c";
  std::ofstream(source) << kRvvProbeSource;
  std::vector<std::string> base = {clang->string(), "--target=riscv64-linux-gnu", "-march=rv64gcv",
                                   "-O2"};
  const bool sysroot = fs::is_directory(kRvvSysroot);
  if (sysroot) base.push_back(std::string("--sysroot=") + kRvvSysroot);

  const fs::path object = dir / "rvv_probe.o";
  std::string spelling;
  std::string compile_error;
  for (const bool prefixed : {true, false}) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), {"-Werror=implicit-function-declaration",
                             std::string("-DMBLAST_RVV_PREFIXED=") + (prefixed ? "1" : "0"), "-c",
                             source.string(), "-o", object.string()});
    const ProcessResult result = probe(argv, seconds(60));
    if (result.ok()) {
      spelling = prefixed ? "__riscv_-prefixed intrinsics (__riscv_vsetvl_e32m1)"
                          : "unprefixed intrinsics (vsetvl_e32m1)";
      break;
    }
    if (compile_error.empty()) compile_error = failure_text(result);
  }
  if (spelling.empty()) {
    return fail(check, "clang cannot compile RVV intrinsics: " + compile_error, fix);
  }

  const fs::path output = dir / "rvv_probe";
  std::string link_error;
  for (const char* linker : {"", "-fuse-ld=lld"}) {
    std::vector<std::string> argv = base;
    if (*linker != '\0') argv.push_back(linker);
    argv.insert(argv.end(), {"-static", object.string(), "-o", output.string()});
    const ProcessResult result = probe(argv, seconds(60));
    if (result.ok()) {
      executable = output;
      std::string detail = "clang " + version + ", " + spelling + ", static link";
      if (*linker != '\0') detail += std::string(" with ") + linker;
      if (sysroot) detail += std::string(", sysroot ") + kRvvSysroot;
      return pass(check, detail);
    }
    if (link_error.empty()) link_error = failure_text(result);
  }
  return fail(check, "cannot link a static riscv64 executable: " + link_error, fix);
}

DoctorCheck check_qemu(const fs::path& executable) {
  DoctorCheck check = make_check(kQemuRvv, true);
  const std::string fix = "apt-get install qemu-user (QEMU 7.0 or newer, for the vector extension)";
  const auto qemu = find_program("qemu-riscv64");
  if (!qemu) return fail(check, "qemu-riscv64 not found on PATH", fix);
  if (executable.empty()) {
    return fail(check, "not tested: the RVV probe did not build", "fix rvv-toolchain first");
  }
  const std::string version = word_after(probe({qemu->string(), "--version"}).out, "version ");
  const ProcessResult result =
      probe({qemu->string(), "-cpu", kQemuCpu, executable.string()}, seconds(30));
  if (!result.ok()) {
    return fail(check,
                "the RVV probe failed under qemu-riscv64 " + version + ": " + failure_text(result),
                fix);
  }
  if (result.out != kRvvExpected) {
    return fail(check,
                "the RVV probe printed a wrong result under qemu-riscv64 " + version + ": " +
                    trim(result.out),
                fix);
  }
  return pass(check, "qemu-riscv64 " + version + " -cpu " + kQemuCpu +
                         ": vector probe correct, VLMAX(e32,m1) = 8");
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "mblast-doctor-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

std::vector<std::string> rvv_doctor_names() { return {kRvvToolchain, kQemuRvv}; }

std::vector<DoctorCheck> rvv_doctor(const std::function<bool(const std::string&)>& wanted) {
  std::vector<DoctorCheck> checks;
  if (!wanted(kRvvToolchain) && !wanted(kQemuRvv)) return checks;
  const TempDir dir;
  fs::path executable;
  DoctorCheck toolchain = make_check(kRvvToolchain, true);
  if (dir.path().empty()) {
    fail(toolchain, "cannot create a temporary directory in " + fs::temp_directory_path().string(),
         "set TMPDIR to a writable directory");
  } else {
    toolchain = build_rvv_probe(dir.path(), executable);
  }
  if (wanted(kRvvToolchain)) checks.push_back(std::move(toolchain));
  if (wanted(kQemuRvv)) checks.push_back(check_qemu(executable));
  return checks;
}

}  // namespace mblast
