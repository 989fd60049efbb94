"""How far to trust a prediction: the class of a configuration and the error that the tool's own
validation measured in that class (``data/validation/error_bands.json``).

A configuration's class has six dimensions, in ``DIMENSIONS`` order:

* ``metric``: ``ttft``, ``tpot`` (TPOT, ITL, tok/s/user) or ``throughput`` (tokens/s, per GPU or
  total); ``latency`` (request latency) exists in the file but no prediction asks for it;
* ``kind`` of model (``model_kind``): ``hybrid`` (sparse or linear token mixers in some layers),
  ``mla`` (multi-head latent attention), ``moe`` (routed experts), else ``dense``;
* ``generation`` of the GPU: the hardware file's ``architecture`` (hopper, blackwell, ...);
* ``engine``: the engine id (trtllm, trtllm-trt, vllm, sglang, ...);
* ``concurrency``: requests in flight per replica, bucketed (``CONCURRENCY_BUCKETS``: c1-4,
  c5-32, c33-256, c257+); measured rows of unknown concurrency (offline, request rate) form their
  own buckets (``offline``, ``rate``), which no prediction falls in;
* ``lengths``: ``prefill-heavy`` (ISL >= ``LENGTH_RATIO`` x OSL), ``decode-heavy`` (OSL >=
  ``LENGTH_RATIO`` x ISL), else ``balanced``.

Back-off: the full class is often unmeasured, so the lookup drops dimensions from the end of
``DIMENSIONS`` (lengths, then concurrency, engine, generation, kind) until a class holds at
least ``MIN_ROWS`` measured rows; the band names the class it came from (``keys``, ``class_id``
with ``*`` for a dropped dimension) and how many dimensions were dropped (``backoff``). A band
is ``extrapolated`` when no measured row of that metric has the configuration's model kind on
its GPU generation: the band given is then the coarser class's, which measured neither.

Errors are (predicted - measured) / measured; a band holds ``n`` rows, the median and 90th
percentile of |error| (``median_abs``, ``p90_abs``) and the median error (``bias``: positive
means the tool predicts too high), as fractions. ``llm-codesign validate --write-bands`` writes
the file (``validate.bands``); the error of a row is that of the constants it was priced with.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import DataFileError
from .hardware import HardwareSpec
from .model import ModelSpec

DIMENSIONS = ("metric", "kind", "generation", "engine", "concurrency", "lengths")
# (lowest, highest) concurrency of each bucket; None: no upper end
CONCURRENCY_BUCKETS: tuple[tuple[int, int | None], ...] = ((1, 4), (5, 32), (33, 256), (257, None))
LENGTH_RATIO = 4  # ISL/OSL at or beyond which a workload is prefill- (decode-) heavy
MIN_ROWS = 10  # fewest measured rows a band is given from (a p90 of fewer says little)
# the predicted fields each metric class speaks for
METRIC_FIELDS: dict[str, tuple[str, ...]] = {
    "ttft": ("ttft_ms",),
    "tpot": ("tpot_ms", "tok_s_per_user"),
    "throughput": ("output_tok_s_per_gpu", "total_tok_s_per_gpu"),
}
BANDS_FILE = "error_bands.json"
BANDS_FORMAT = 1
STATS = ("n", "median_abs", "p90_abs", "bias")


def model_kind(model: ModelSpec) -> str:
    """``hybrid``, ``mla``, ``moe`` or ``dense``, the first that applies (module doc)."""
    if model.mixers != ("attention",):
        return "hybrid"
    if model.attention.kind == "mla":
        return "mla"
    return "moe" if model.moe is not None else "dense"


def generation(hardware: HardwareSpec) -> str:
    """The GPU generation: the hardware file's ``architecture``."""
    return hardware.architecture


def concurrency_bucket(concurrency: float) -> str:
    """``c1-4``, ``c5-32``, ``c33-256`` or ``c257+`` (``CONCURRENCY_BUCKETS``); below 1: c1-4."""
    for lo, hi in CONCURRENCY_BUCKETS:
        if hi is None or concurrency <= hi:
            return f"c{lo}-{hi}" if hi is not None else f"c{lo}+"
    raise AssertionError("the last bucket has no upper end")


def length_band(isl: int, osl: int) -> str:
    """``prefill-heavy``, ``decode-heavy`` or ``balanced`` (``LENGTH_RATIO``)."""
    if isl >= LENGTH_RATIO * osl:
        return "prefill-heavy"
    if osl >= LENGTH_RATIO * isl:
        return "decode-heavy"
    return "balanced"


@dataclass(frozen=True)
class ConfigClass:
    """A configuration's class, every dimension but the metric."""

    kind: str
    generation: str
    engine: str
    concurrency: str
    lengths: str

    def keys(self, metric: str) -> tuple[str, ...]:
        """The full class of one metric, in ``DIMENSIONS`` order."""
        return (metric, self.kind, self.generation, self.engine, self.concurrency, self.lengths)

    @property
    def id(self) -> str:
        return "|".join(self.keys("")[1:])

    def to_dict(self) -> dict[str, str]:
        return dict(zip(DIMENSIONS[1:], self.keys("")[1:]))


def config_class(
    model: ModelSpec, hardware: HardwareSpec, engine: str, concurrency: float, isl: int, osl: int
) -> ConfigClass:
    """The class of a prediction at ``concurrency`` requests per replica."""
    return ConfigClass(
        model_kind(model),
        generation(hardware),
        engine,
        concurrency_bucket(concurrency),
        length_band(isl, osl),
    )


def class_id(keys: tuple[str | None, ...]) -> str:
    """``tpot|moe|hopper|*|*|*``: a class's keys, ``*`` for a dropped dimension."""
    return "|".join("*" if k is None else k for k in keys)


@dataclass(frozen=True)
class ErrorBands:
    """The shipped error statistics: per class (keys in ``DIMENSIONS`` order, None where the
    dimension is dropped) its ``STATS``; ``meta`` is the file's description and provenance."""

    classes: Mapping[tuple[str | None, ...], Mapping[str, float]]
    meta: Mapping[str, Any]

    def band(self, cls: ConfigClass, metric: str) -> dict[str, Any] | None:
        """The band of ``metric`` for ``cls`` after back-off (module doc); None when no class
        of that metric holds ``MIN_ROWS`` rows."""
        full = cls.keys(metric)
        n_dims = len(DIMENSIONS)
        covered = full[:3] + (None,) * (n_dims - 3) in self.classes  # metric, kind, generation
        for dropped in range(n_dims):
            keys = full[: n_dims - dropped] + (None,) * dropped
            stats = self.classes.get(keys)
            if stats is not None and stats["n"] >= MIN_ROWS:
                return {
                    "class_id": class_id(keys),
                    "keys": {d: k for d, k in zip(DIMENSIONS, keys) if k is not None},
                    "backoff": dropped,
                    **stats,
                    "extrapolated": not covered,
                }
        return None

    def uncertainty(self, cls: ConfigClass) -> dict[str, Any]:
        """``estimate``'s ``uncertainty`` object: the class, and a band (or None) per metric
        class of ``METRIC_FIELDS`` with the predicted fields it speaks for."""
        return {
            "class": cls.to_dict(),
            "class_id": cls.id,
            "metrics": {m: self.band(cls, m) for m in METRIC_FIELDS},
            "fields": {m: list(f) for m, f in METRIC_FIELDS.items()},
        }


def bands_path() -> Path:
    """The shipped bands file."""
    return Path(str(resources.files("llm_codesign") / "data" / "validation" / BANDS_FILE))


@cache
def shipped_error_bands() -> ErrorBands:
    """The bands shipped with the package (``bands_path``)."""
    return read_error_bands(bands_path())


def read_error_bands(path: str | Path) -> ErrorBands:
    """An error-bands file (``validate --write-bands``), checked against this module's
    definition of a class."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise DataFileError(f"{p.name}: cannot read the error bands: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != BANDS_FORMAT:
        raise DataFileError(f"{p.name}: not an error-bands file of format {BANDS_FORMAT}")
    if tuple(doc.get("dimensions", ())) != DIMENSIONS:
        raise DataFileError(
            f"{p.name}: classes over {doc.get('dimensions')}, expected {list(DIMENSIONS)}; "
            "regenerate it with llm-codesign validate --write-bands"
        )
    classes: dict[tuple[str | None, ...], dict[str, float]] = {}
    for c in doc.get("classes", []):
        keys = tuple(c["keys"])
        if len(keys) != len(DIMENSIONS) or any(s not in c for s in STATS):
            raise DataFileError(f"{p.name}: malformed class {c!r}")
        classes[keys] = {s: c[s] for s in STATS}
    return ErrorBands(classes, {k: v for k, v in doc.items() if k != "classes"})
