"""numba kernels.  They know nothing of xarray, TOML or plotting (docs/architecture.md)."""
from .twin import twin_kernel
from .twin_config import TwinConfig
from .twin_steps import ALL_PREV, FULL_BATCH, LAST_ITERATE, N_REC, POINTWISE, PREVIOUS, UNIFORM_PAIR

__all__ = ["ALL_PREV", "FULL_BATCH", "LAST_ITERATE", "N_REC", "POINTWISE", "PREVIOUS", "TwinConfig",
           "UNIFORM_PAIR", "twin_kernel"]
