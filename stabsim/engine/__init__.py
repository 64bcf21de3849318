"""The twin-trajectory engine: random numbers, losses, constraints and step sizes the
kernels call; the Python entry point run_twin, neighbours, data sets, searches."""
