#!/usr/bin/env bash
# Packs build/mblast with the shared libraries a machine without our -dev packages lacks (for
# example a GPU machine with another distribution) into DIR (default: .device), so that
#   LD_LIBRARY_PATH=DIR/lib DIR/mblast ...
# runs there, with bwrap in DIR/bin. glibc, libstdc++ and libgcc come from the target machine
# (they are backward compatible; build on the older distribution).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.device}
binary=${BUILD_DIR:-build}/mblast
[[ -x "$binary" ]] || { echo "device_bundle: build $binary first (scripts/setup.sh)" >&2; exit 2; }
# The binary embeds the worker: bring it up to date, or a bundle made after a worker change
# would judge with the old worker (session 31's call 96 did).
cmake --build "${BUILD_DIR:-build}" --target mblast >/dev/null
rm -rf "$out" && mkdir -p "$out/lib" "$out/bin"
cp "$binary" "$out/mblast"
strip "$out/mblast"
# bubblewrap, the read-only sandbox of candidate code, where the target machine lacks it:
# PATH=DIR/bin:$PATH there.
# Its libraries go to DIR/bin/lib, given to the loader for bwrap alone, so that they never
# reach the workers' Python through LD_LIBRARY_PATH.
copy_libs() {  # PROGRAM DEST
  ldd "$1" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
      *) cp -L "$lib" "$2/" ;;
    esac
  done
}
copy_libs "$binary" "$out/lib"
if bwrap=$(command -v bwrap); then
  mkdir -p "$out/bin/lib"
  cp "$bwrap" "$out/bin/bwrap.bin"
  copy_libs "$bwrap" "$out/bin/lib"
  cat >"$out/bin/bwrap" <<'WRAP'
#!/bin/sh
here=$(dirname "$(readlink -f "$0")")
exec /lib64/ld-linux-x86-64.so.2 --library-path "$here/lib" "$here/bwrap.bin" "$@"
WRAP
  chmod +x "$out/bin/bwrap"
fi
du -sh "$out"
