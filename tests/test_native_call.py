"""stabsim.compile.native_call: a compiled function called through its address (the twin kernel's
replicate) gives the results of a direct call, raises what the callee raises, and a
call whose argument types differ from the callee's is refused when the caller compiles."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit, prange, typeof, types
from numba.core.errors import TypingError

from stabsim.compile.native_call import make_native_caller, native_address


@njit
def _double(i, a, out):
    if a[i] < 0.0:
        raise ValueError("negative entry")
    out[i] = 2.0 * a[i]


def _callee_types(tys):
    return (types.int64,) + tuple(tys[1:])


_call = make_native_caller(_callee_types, "_double")


@njit(parallel=True)
def _kernel(addr, a, out):
    for i in prange(a.shape[0]):
        _call(addr, (np.int64(i), a, out))


@njit
def _serial_kernel(addr, a, out):
    for i in range(a.shape[0]):
        _call(addr, (np.int64(i), a, out))


@njit
def _kernel_wrong(addr, a, out):
    _call(addr, (np.float64(0.0), a, out))   # float where the callee takes int64


def _address(a, out):
    return native_address(_double, _callee_types((None, typeof(a), typeof(out))))


def test_call_through_the_address_equals_the_direct_call():
    a = np.linspace(0.0, 3.0, 17)
    out = np.zeros_like(a)
    _kernel(_address(a, out), a, out)
    direct = np.zeros_like(a)
    for i in range(a.shape[0]):
        _double(i, a, direct)
    np.testing.assert_array_equal(out, direct)
    np.testing.assert_array_equal(out, 2.0 * a)


def test_the_callee_s_exception_reaches_the_caller():
    """(Inside a ``prange`` numba reports any callee's exception as a SystemError, direct call or not.)"""
    a = np.array([1.0, -1.0, 2.0])
    out = np.zeros_like(a)
    with pytest.raises(ValueError, match="negative entry"):
        _serial_kernel(_address(a, out), a, out)
    assert out[0] == 2.0 and out[2] == 0.0   # stopped at the raise


def test_argument_types_that_differ_from_the_callee_s_are_refused_at_compile_time():
    a = np.ones(3)
    out = np.zeros(3)
    with pytest.raises(TypingError, match="argument types differ"):
        _kernel_wrong(_address(a, out), a, out)


def test_address_for_looks_up_by_the_arguments_types():
    from stabsim.compile.native_call import address_for

    a = np.linspace(0.0, 1.0, 5)
    out = np.zeros_like(a)
    addr = address_for(_double, (np.int64(0), a, out), lambda tys: tuple(tys))
    assert addr == _address(a, out)
    assert address_for(_double, (np.int64(0), a.copy(), out), lambda tys: tuple(tys)) == addr
    ro = a.copy()
    ro.flags.writeable = False   # another numba type: another compiled callee, another address
    addr_ro = address_for(_double, (np.int64(0), ro, out), lambda tys: tuple(tys))
    assert addr_ro != addr
    out2 = np.zeros_like(a)
    _kernel(addr_ro, ro, out2)
    np.testing.assert_array_equal(out2, 2.0 * a)
