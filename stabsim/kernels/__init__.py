"""numba kernels.  They know nothing of xarray, TOML or plotting (docs/architecture.md)."""
from .twin import ALL_PREV, FULL_BATCH, LAST_ITERATE, N_REC, POINTWISE, PREVIOUS, UNIFORM_PAIR, twin_kernel

__all__ = ["ALL_PREV", "FULL_BATCH", "LAST_ITERATE", "N_REC", "POINTWISE", "PREVIOUS",
           "UNIFORM_PAIR", "twin_kernel"]
