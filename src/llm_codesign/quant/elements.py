"""Element types of the quantized formats: bit-exact encode/decode built on ``ml_dtypes``.

The element casts are ``ml_dtypes``' own (round-to-nearest-even, its subnormals and NaN rules).
Casting 67M values one by one through ``ml_dtypes`` costs ~10 ns each, so the hot path reads the
cast from a 2^17-entry table that is itself filled by ``ml_dtypes``: the key of a float32 ``y`` is
its top 16 bits ``h`` (a bfloat16 truncation) plus one sticky bit (are the low 16 bits non-zero).
Every rounding boundary of E4M3, E5M2, E2M3, E3M2 and E2M1 (grid points and midpoints, at most
4 significant bits) is a bfloat16 value, so no boundary lies strictly inside ``(h, h + ulp)``:
all values with one key round alike, and the table entry, cast from ``h`` or ``h | 1``, is exact.
``tests/quant/test_elements.py`` checks the table against direct ``ml_dtypes`` casts.

Encoding saturates (``reference/formats.md`` s2, cuDNN/TE "saturating" conversion): finite values
and +-inf beyond the largest element become +-max; NaN stays NaN where the type has a NaN
(E4M3 ``0x7F``, E5M2), and types without one (E2M1, E2M3, E3M2) mark NaN through their block
scale instead (see :mod:`llm_codesign.quant.numerics`).

Example:
    >>> import numpy as np
    >>> decode(encode(np.array([0.3, 2.6, 100.0], np.float32), E2M1), E2M1).tolist()
    [0.5, 3.0, 6.0]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class ElementType:
    """A floating-point element type with its ``ml_dtypes`` dtype and derived limits.

    Attributes:
        name: short name (``"e2m1"``).
        dtype: the ``ml_dtypes`` / numpy scalar type used for the casts.
        bits: storage bits of one element.
        mantissa_bits: explicit mantissa bits (sets the ulp at the maximum).
        max: largest finite magnitude (E4M3 448, E2M1 6).
        has_nan: whether a NaN encoding exists.
    """

    name: str
    dtype: type
    bits: int
    mantissa_bits: int
    max: float
    has_nan: bool
    encode_table: np.ndarray = field(repr=False, compare=False)
    decode_table: np.ndarray = field(repr=False, compare=False)

    @property
    def saturation_threshold(self) -> float:
        """Magnitude beyond which round-to-nearest alone would overflow: max + ulp(max)/2.

        A block "saturates" when one of its scaled values exceeds this, i.e. when clipping
        changed a value by more than rounding would have.
        """
        exponent = np.floor(np.log2(self.max))
        return float(self.max + 2.0 ** (exponent - self.mantissa_bits) / 2)

    @property
    def tie_overflows(self) -> bool:
        """Whether a value exactly at :attr:`saturation_threshold` rounds (to even) past max:
        true when the max's mantissa is odd (E2M1 6 = 1.1b x 2^2, tie 7 -> 8), false for E4M3
        (448 = 1.110b x 2^8, tie 464 -> 448)."""
        return bool(int(self.encode_table[int(np.float32(self.max).view(np.uint32)) >> 15]) & 1)


def _encode_table(dtype: type, max_value: float) -> np.ndarray:
    hi = np.arange(1 << 16, dtype=np.uint32) << 16
    reps = np.stack([hi, hi | 1], axis=1).reshape(-1).view(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        clipped = np.clip(reps, -max_value, max_value)
        return clipped.astype(dtype).view(np.uint8).copy()


def _decode_table(dtype: type, bits: int) -> np.ndarray:
    codes = np.arange(1 << bits, dtype=np.uint8)
    table = np.zeros(256, np.float32)
    table[: 1 << bits] = codes.view(dtype).astype(np.float32)
    return table


def _element(name: str, dtype: type, bits: int, mantissa_bits: int) -> ElementType:
    max_value = float(ml_dtypes.finfo(dtype).max)
    has_nan = bool(np.isnan(np.array([np.nan], np.float32).astype(dtype).astype(np.float32))[0])
    return ElementType(
        name,
        dtype,
        bits,
        mantissa_bits,
        max_value,
        has_nan,
        _encode_table(dtype, max_value),
        _decode_table(dtype, bits),
    )


E4M3 = _element("e4m3", ml_dtypes.float8_e4m3fn, 8, 3)
E5M2 = _element("e5m2", ml_dtypes.float8_e5m2, 8, 2)
E2M3 = _element("e2m3", ml_dtypes.float6_e2m3fn, 6, 3)
E3M2 = _element("e3m2", ml_dtypes.float6_e3m2fn, 6, 2)
E2M1 = _element("e2m1", ml_dtypes.float4_e2m1fn, 4, 1)

ELEMENTS: dict[str, ElementType] = {e.name: e for e in (E4M3, E5M2, E2M3, E3M2, E2M1)}


CHUNK_ELEMENTS = 1 << 16  # 256 KiB of float32: chunk temporaries stay in cache


def _key(bits: np.ndarray, key: np.ndarray, sticky: np.ndarray) -> None:
    """key = (top 16 bits << 1) | (low 16 bits != 0), into the given buffers."""
    np.right_shift(bits, 16, out=key, casting="unsafe")
    np.bitwise_and(bits, 0xFFFF, out=sticky)
    np.minimum(sticky, 1, out=sticky)
    np.left_shift(key, 1, out=key)
    np.add(key, sticky, out=key, casting="unsafe")


def encode(y: np.ndarray, element: ElementType) -> np.ndarray:
    """Saturating round-to-nearest-even cast of float32 ``y`` to ``element`` codes (uint8 bits).

    Same result as ``np.clip(y, -max, max).astype(element.dtype).view(np.uint8)``, ~4x faster.
    """
    shape = np.shape(y)
    flat = np.ascontiguousarray(y, dtype=np.float32).reshape(1, -1)
    return encode_scaled(flat, None, element).reshape(shape)


def encode_scaled(x2: np.ndarray, divisor: np.ndarray | None, element: ElementType) -> np.ndarray:
    """Codes of ``x2 / divisor[:, None]`` (float32 division, then :func:`encode`).

    ``x2`` is ``(groups, k)`` in any float dtype (bfloat16 or float32 in the hot paths),
    ``divisor`` is ``(groups,)`` float32 (``None``: no division). Works through the rows in
    cache-sized chunks, so the temporaries never leave cache and no full-size float32 copy is made.
    """
    groups, k = x2.shape
    out = np.empty((groups, k), np.uint8)
    if out.size == 0:
        return out
    rows = max(1, CHUNK_ELEMENTS // max(k, 1))
    n = min(rows, groups) * k
    buf = np.empty(n, np.float32)
    key = np.empty(n, np.intp)
    sticky = np.empty(n, np.uint32)
    table = element.encode_table
    div = None if divisor is None else divisor.astype(np.float32, copy=False).reshape(-1, 1)
    for g0 in range(0, groups, rows):
        g1 = min(g0 + rows, groups)
        m = (g1 - g0) * k
        y = buf[:m].reshape(g1 - g0, k)
        y[...] = x2[g0:g1]
        if div is not None:
            with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                np.divide(y, div[g0:g1], out=y)
        _key(buf[:m].view(np.uint32), key[:m], sticky[:m])
        np.take(table, key[:m], out=out[g0:g1].reshape(-1))
    return out


def round_scaled(
    x2: np.ndarray,
    divisor: np.ndarray,
    lo: int,
    hi: int,
    out_dtype: type,
    offset: np.ndarray | None = None,
) -> np.ndarray:
    """Integer codes ``clip(rint(x2 / divisor) + offset, lo, hi)`` as ``out_dtype``.

    NaN maps to ``offset`` (the caller marks the group's scale NaN); ``np.rint`` rounds half to
    even. Chunked like :func:`encode_scaled`.
    """
    groups, k = x2.shape
    out: np.ndarray = np.empty((groups, k), out_dtype)
    if out.size == 0:
        return out
    rows = max(1, CHUNK_ELEMENTS // max(k, 1))
    buf = np.empty(min(rows, groups) * k, np.float32)
    div = divisor.astype(np.float32, copy=False).reshape(-1, 1)
    off = None if offset is None else offset.astype(np.float32).reshape(-1, 1)
    for g0 in range(0, groups, rows):
        g1 = min(g0 + rows, groups)
        y = buf[: (g1 - g0) * k].reshape(g1 - g0, k)
        y[...] = x2[g0:g1]
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            np.divide(y, div[g0:g1], out=y)
        np.rint(y, out=y)
        np.nan_to_num(y, copy=False, nan=0.0)
        if off is not None:
            np.add(y, off[g0:g1], out=y)
        np.clip(y, lo, hi, out=y)
        out[g0:g1] = y
    return out


def decode(codes: np.ndarray, element: ElementType) -> np.ndarray:
    """Float32 values of ``element`` codes (uint8 bits), via a 256-entry table from
    ``ml_dtypes``."""
    return element.decode_table[codes]
