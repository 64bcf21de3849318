"""Run-time plumbing below everything else: signals, thread pools, memory and disk needs,
code identity, provenance attributes, data.nc checksums."""
