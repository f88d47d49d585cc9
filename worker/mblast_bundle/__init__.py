"""Tensor bundles for the native backends (OpenCL, RVV), made on the CPU from a PyTorch problem,
and the shrinker that makes them at reduced sizes. Entry point: `python3 -m mblast_bundle`
(bundles.py; `shrink` as its first argument runs shrink.py). The problem's loading, outputs,
counted work and error floor come from the judge's modules (mblast_worker), so that a bundle
and a judged candidate read a problem the same way."""
