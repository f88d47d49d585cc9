#!/usr/bin/env bash
# Packs build/mblast with the shared libraries a machine without our -dev packages lacks (for
# example a GPU machine with another distribution) into DIR (default: .device), so that
#   LD_LIBRARY_PATH=DIR/lib DIR/mblast ...
# runs there. glibc, libstdc++ and libgcc come from the target machine (they are backward
# compatible; build on the older distribution).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.device}
binary=${BUILD_DIR:-build}/mblast
[[ -x "$binary" ]] || { echo "device_bundle: build $binary first (scripts/setup.sh)" >&2; exit 2; }
rm -rf "$out" && mkdir -p "$out/lib"
cp "$binary" "$out/mblast"
strip "$out/mblast"
ldd "$binary" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
du -sh "$out"
