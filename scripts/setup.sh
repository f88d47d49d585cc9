#!/usr/bin/env bash
# Installs what mblast needs that is missing (Debian 12, apt), then configures and builds it.
# Idempotent: when nothing is missing it only runs an incremental build.
#   BUILD_DIR    build folder (default: build)
#   BUILD_TYPE   CMake build type (default: RelWithDebInfo)
#   MBLAST_WERROR=ON  treat compiler warnings as errors (the demo and test scripts set it, so
#                     that the test script reuses the demo's build instead of rebuilding it)
#   BUILD_TARGETS     build only these targets (the demo: mblast)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  # toolchain and build
  build-essential cmake ninja-build pkg-config git clang-format
  # libraries the binary links
  libsqlite3-dev libcurl4-openssl-dev libssl-dev nlohmann-json3-dev libcli11-dev libspdlog-dev
  libfmt-dev libtomlplusplus-dev libcpp-httplib-dev libkainjow-mustache-dev
  # tests
  libgtest-dev libgmock-dev python3 python3-pytest python3-numpy python3-torch util-linux sqlite3
  # torch C++ extensions (SOL-ExecBench solutions in C++ languages): torch's headers and pybind11
  libtorch-dev pybind11-dev python3-dev
  # OpenCL on the CPU (PoCL) through the ICD loader
  ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  # a tuned OpenCL BLAS: the GEMM baseline of the OpenCL backend
  libclblast-dev
  # RISC-V vector: clang's RISC-V target, the Debian sysroot, QEMU user mode
  clang lld gcc-riscv64-linux-gnu libc6-dev-riscv64-cross qemu-user
  # sandboxing candidate code
  bubblewrap
  # tests/batch/slurm_test.sh: a private Slurm on localhost for scripts/slurm/
  slurmctld slurmd munge
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${#missing[@]} missing packages: ${missing[*]}"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null; then
      echo "setup: error: run as root or install sudo to install: ${missing[*]}" >&2
      exit 2
    fi
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
else
  echo "setup: all ${#packages[@]} packages present"
fi

build_dir=${BUILD_DIR:-build}
if [[ ! -f "$build_dir/build.ninja" ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
    -DMBLAST_WERROR="${MBLAST_WERROR:-OFF}"
elif [[ -n "${MBLAST_WERROR:-}" ]]; then
  cmake "$build_dir" -DMBLAST_WERROR="$MBLAST_WERROR" >/dev/null
fi
# BUILD_TARGETS (e.g. "mblast"): build only those; default: everything, the tests included.
# shellcheck disable=SC2086 # a list of target names
cmake --build "$build_dir" --parallel "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS}
echo "setup: built ${BUILD_TARGETS:-everything} in $build_dir"
