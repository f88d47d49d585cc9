#!/usr/bin/env bash
# Installs what is missing, builds, and shows mblast on this machine: what it can run here, the
# knowledge base its agents start from, and the judge at work on the bundled example (a row
# softmax): a CUDA candidate on a GPU machine, a plain PyTorch candidate on the CPU otherwise.
#   MBLAST_KB   knowledge base file (default: ~/.local/share/mblast/kb.sqlite)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mblast=${BUILD_DIR:-build}/mblast

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  backend=cuda device=cuda candidate=benchmarks/examples/row_softmax_cuda.py
else
  backend=opencl device=cpu candidate=benchmarks/examples/row_softmax_torch.py
fi

echo
echo "== mblast doctor: what this machine can do"
"$mblast" doctor || true

echo
echo "== mblast kb init: the knowledge base"
"$mblast" kb init

echo
echo "== techniques the agents can choose from on the $backend backend (first 15)"
"$mblast" kb query --kind techniques --backend "$backend" --limit 15

echo
echo "== performance states the classifier chooses between"
"$mblast" kb query --kind states --limit 40

echo
echo "== mblast eval: the judge on the bundled example ($device)"
"$mblast" eval benchmarks/problems/row_softmax.py --candidate "$candidate" --device "$device"
