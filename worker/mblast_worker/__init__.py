"""mblast's PyTorch worker: evaluates one candidate against one problem per process.

Run as ``python3 -m mblast_worker serve`` (protocol on the original stdout) or
``python3 -m mblast_worker run REQUEST.json`` (debugging). See README.md beside this file.
"""

# Part of the reference-cache key: bump it whenever reference outputs could change.
WORKER_VERSION: str = "2"
