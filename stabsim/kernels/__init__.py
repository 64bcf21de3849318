"""numba kernels.  They know nothing of xarray, TOML or plotting (docs/architecture.md)."""
from stabsim.kernels.twin import twin_kernel
from stabsim.kernels.twin_config import TwinConfig
from stabsim.kernels.twin_steps import ALL_PREV, FULL_BATCH, LAST_ITERATE, N_REC, POINTWISE, PREVIOUS, UNIFORM_PAIR

__all__ = ["ALL_PREV", "FULL_BATCH", "LAST_ITERATE", "N_REC", "POINTWISE", "PREVIOUS", "TwinConfig",
           "UNIFORM_PAIR", "twin_kernel"]
