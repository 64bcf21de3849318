"""A paper's setting: what a cell's parameters mean in the paper's symbols.

The pieces an experiment and the analysis of its data both need (the constants G, L, kappa of
a loss on a problem, step-size schedules T(n), eta(n), reference minimisers, section schemas)
live here, below both, so that neither has to import the other.
"""
