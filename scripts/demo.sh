#!/usr/bin/env bash
# Installs what is missing, builds, and shows mblast on this machine: what it can run here, the
# knowledge base its agents start from, and `mblast optimize` on a bundled example (an unfused
# GELU chain on a GPU, a softmax on OpenCL) with the embedded defaults: CUDA on a GPU machine,
# otherwise OpenCL on PoCL (the CPU); the configured LLM when an API key is set, otherwise a
# clearly labelled replay of authored answers.
#   MBLAST_KB   knowledge base file (default: ~/.local/share/mblast/kb.sqlite)
#   DEMO_OUT    run directory (default: ./mblast-runs/demo-<time>)
set -euo pipefail
cd "$(dirname "$0")/.."
# The test script's configuration (warnings as errors), so that scripts/test.sh reuses this
# build; only the binary: the tests are built by scripts/test.sh.
MBLAST_WERROR=ON BUILD_TARGETS=mblast bash scripts/setup.sh
mblast=${BUILD_DIR:-build}/mblast

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  backend=cuda
  # An unfused elementwise chain: what fusion (a kernel from the replay, or torch.compile) and a
  # CUDA graph gain on a GPU is large and real; every request has an answer in the replay.
  problem=benchmarks/problems/gelu_tanh.py
  cassette=benchmarks/examples/gelu_tanh.cassette.jsonl
  techniques=(--technique cuda/fuse-elementwise-into-producer --technique cuda/builtin-torch-compile
    --technique cuda/builtin-cuda-graph)
  steps=3
else
  backend=opencl
  problem=benchmarks/problems/native/softmax.py
  cassette=benchmarks/examples/native/opencl.cassette.jsonl
  techniques=(--technique opencl/work-group-reduction)
  steps=1
fi
if [ -n "${MBLAST_LLM:-}" ] || [ -n "${OPENAI_API_KEY:-}" ] || [ -n "${ANTHROPIC_API_KEY:-}" ]; then
  llm=()  # the configured provider
  llm_note="the LLM configured by your environment"
else
  llm=(--llm "replay:$cassette")
  llm_note="NO LIVE LLM: a replay of authored answers (set OPENAI_API_KEY or ANTHROPIC_API_KEY for a real one)"
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
echo "== mblast optimize: the loop on $problem ($backend; $llm_note)"
# A few steps limited to techniques the replay answers; with a real LLM, drop --technique and
# raise --steps to search freely.
"$mblast" optimize "$problem" --backend "$backend" "${llm[@]}" "${techniques[@]}" \
  --iterations 1 --steps "$steps" ${DEMO_OUT:+--out "$DEMO_OUT"}

echo
echo "== what the knowledge base learned (claims)"
"$mblast" kb query --kind claims --limit 10
