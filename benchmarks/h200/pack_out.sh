#!/usr/bin/env bash
# Makes a device call's $OUT fit what the device tool returns (at most 8 files of at most 16 MiB,
# no more than 2 folders down): the last command of a call that writes many files, e.g.
#
#   OUT=$OUT/sol benchmarks/h200/sol_examples.sh; ...; benchmarks/h200/pack_out.sh "$OUT"
#
# Where DIR already fits, nothing changes. Otherwise every file of DIR goes into DIR/pack.tgz
# and is removed, but for files over BIG_MIB (default 4) MiB: those are listed with their sizes
# in DIR/pack-left-out.txt and removed too (what is worth keeping of them belongs in a summary
# the command prints). Calls 119 and 121 (session 41) lost their results' files to these limits.
set -euo pipefail
dir=${1:?usage: benchmarks/h200/pack_out.sh DIR}
big_mib=${BIG_MIB:-4}
[ -d "$dir" ] || { echo "pack_out.sh: no folder $dir" >&2; exit 2; }
dir=$(cd "$dir" && pwd)

fits() {
  local count deep large
  count=$(find "$dir" -type f | wc -l)
  deep=$(find "$dir" -mindepth 4 -type f | wc -l)
  large=$(find "$dir" -type f -size +16M | wc -l)
  ((count <= 8 && deep == 0 && large == 0))
}

if fits; then
  echo "pack_out.sh: $dir fits as it is"
  exit 0
fi
staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
(cd "$dir" && find . -type f -size +"${big_mib}"M -printf '%s\t%P\n') >"$staging/left-out.txt"
(cd "$dir" && find . -type f ! -size +"${big_mib}"M -printf '%P\n') >"$staging/files.txt"
tar czf "$staging/pack.tgz" -C "$dir" -T "$staging/files.txt"
find "$dir" -mindepth 1 -delete
mv "$staging/pack.tgz" "$dir/pack.tgz"
if [ -s "$staging/left-out.txt" ]; then mv "$staging/left-out.txt" "$dir/pack-left-out.txt"; fi
summary="$(wc -l <"$staging/files.txt") files in $dir/pack.tgz ($(du -h "$dir/pack.tgz" | cut -f1))"
if [ -s "$dir/pack-left-out.txt" ]; then
  summary+="; $(wc -l <"$dir/pack-left-out.txt") over $big_mib MiB left out, listed in pack-left-out.txt"
fi
echo "pack_out.sh: $summary"
if [ "$(stat -c %s "$dir/pack.tgz")" -gt $((16 << 20)) ]; then
  echo "pack_out.sh: $dir/pack.tgz is over 16 MiB and will not come back: lower BIG_MIB" >&2
  exit 1
fi
