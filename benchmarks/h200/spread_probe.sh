#!/usr/bin/env bash
# Where the acceptance run's speedup spread comes from (calls 45 and 48: level1/88's hand-written
# candidate slowed request after request through one eval server while eager held). On the GPU
# machine, from the repository root, carry [".device", ".kb"]:
#
#   OUT=DIR benchmarks/h200/spread_probe.sh
#
# Judges the candidate 10 times back to back through the eval server, 5 times without it
# (MBLAST_EVAL_SERVER=0, a fresh worker process and no workers started ahead), then 5 times through
# the server again with 3 s between requests; records the GPU's clocks, temperature, power and
# throttle reasons before each request (and `nvidia-smi dmon` throughout), prints one line per
# request and packs everything into DIR/probe.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=$PWD/.device/lib; command -v bwrap >/dev/null || export PATH=$PWD/.device/bin:$PATH
P=.kb/level1/88_MinGPTNewGelu.py; C=benchmarks/cuda_candidates/level1/88_MinGPTNewGelu.py
nvidia-smi dmon -s pucm -d 1 > $OUT/dmon.txt 2>&1 & D=$!
run() { nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader > $OUT/smi-$1.txt; timeout 120 .device/mblast eval $P --candidate $C --json --seeds 1 --cache-dir /tmp/c > $OUT/r-$1.json 2>/dev/null; }
for i in 01 02 03 04 05 06 07 08 09 10; do run s$i; done
for i in 01 02 03 04 05; do MBLAST_EVAL_SERVER=0 run p$i; done
for i in 11 12 13 14 15; do sleep 3; run s$i; done
kill $D
python3 - <<'PY'
import json,glob,os
out=os.environ['OUT']
for f in sorted(glob.glob(out+'/r-*.json')):
    k=f.split('r-')[1][:-5]
    try:
        d=json.load(open(f)); t=d['timing']
        smi=open(out+'/smi-'+k+'.txt').read().strip()
        print(k, '%.4f %.4f p10 %.4f p90 %.4f | ref %.4f' % (d['cand_ms'], d['speedup'], t['cand']['p10_ms'], t['cand']['p90_ms'], d['ref_ms']), d.get('eval_server',{}).get('request'), '|', smi)
    except Exception as e: print(k,'ERR',e)
PY
tar czf $OUT/probe.tgz -C $OUT . 2>/dev/null; rm -f $OUT/r-*.json $OUT/smi-*.txt
