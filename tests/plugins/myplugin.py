"""A test plugin (docs/plugins.md): registers a bound and a check from outside the package."""
import numpy as np

from stabsim.analyses import CheckResult, register_check
from stabsim.engine.measures import uas_mean
from stabsim.theory import register_custom
from stabsim.judging.rules import check_bound


def _loose(*, t, n, eta, G):
    """A deliberately loose UAS bound: 10 G eta t / n + 10 G eta sqrt(t)."""
    return 10 * G * eta * (np.asarray(t, dtype=float) / n + np.sqrt(t))


register_custom(key="custom.myplugin_loose", quantity="uas_mean", tag="EXPLICIT", func=_loose,
                description="test plugin bound", expr="myplugin:_loose")


@register_check("myplugin_uas", description="test plugin check: UAS vs the plugin's loose bound")
def myplugin_check(spec, ds) -> CheckResult:
    from stabsim.analyses.overlay import _loss_constants
    from stabsim.analyses.base import sweep_slices, constant_eta

    res = CheckResult()
    for label, params, sub in sweep_slices(spec, ds):
        m = uas_mean(sub)
        c = _loss_constants(params)
        b = _loose(t=m["t"].values.astype(float), n=params["data"]["n"], eta=constant_eta(params), G=c["G"])
        res.add(check_bound(m, b, "EXPLICIT", key="custom.myplugin_loose"), label=label or None)
    return res


# a study kind: the built-in twin runs plus one derived variable (a kind from outside the package)
from stabsim.registry import register_kind, twin_cell, twin_params, validate_twin  # noqa: E402


@register_kind("myplugin_twin", params=twin_params(), validate=validate_twin,
               description="test plugin kind: twin runs + dist_output squared")
def myplugin_twin(spec, cell, replicates):
    ds = twin_cell(spec, cell, replicates)
    ds["dist_output_sq"] = ds["dist_output"] ** 2
    return ds
