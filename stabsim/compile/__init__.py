"""Compiling the kernels: numba's cache location, njit with its pipelines, calls through
machine addresses, compile-beside helper processes, recorded signatures and the warm-up.
This layer imports nothing else of stabsim."""
