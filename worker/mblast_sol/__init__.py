"""SOL-ExecBench problems for mblast's judge (https://github.com/NVIDIA/SOL-ExecBench formats:
docs/definition.md, workload.md, solution.md of that project).

A problem is a directory with definition.json (axes, typed inputs and outputs, a PyTorch reference
`run`) and workload.jsonl (one binding of the variable axes per line, each with input sources and
its own tolerance). mblast judges it as one KernelBench-style problem file per workload, written
by this package (problem_file.py): the judge's checks, float64 reference and timing then hold
unchanged, and a candidate is correct only when it is correct on every workload.

Parts: formats.py (parsing and validation, errors naming the field), axes.py (axis expressions),
inputs.py (a workload's inputs, at run time inside the judge), safetensors.py (reading blobs
without the safetensors package), problem_file.py (the per-workload problem files and their
manifest), solution.py (a solution.json as a candidate file). Command line: __main__.py.
"""
