"""Serving workload: input/output lengths, concurrency per replica, optional latency targets.

Example:
    >>> Workload(isl=1024, osl=1024, concurrency=64).context_tokens
    2048
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SpecError

MAX_CONTEXT_TOKENS = 16 * 1024 * 1024  # 16M tokens: beyond any published context window


@dataclass(frozen=True)
class Workload:
    isl: int
    osl: int
    concurrency: int = 1
    ttft_ms: float | None = None
    tpot_ms: float | None = None

    def __post_init__(self) -> None:
        for name in ("isl", "osl", "concurrency"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SpecError(f"workload: {name} must be a positive integer, got {value!r}")
        if self.isl + self.osl > MAX_CONTEXT_TOKENS:
            raise SpecError(
                f"workload: isl + osl = {self.isl} + {self.osl} = {self.isl + self.osl} tokens "
                f"exceeds the supported maximum {MAX_CONTEXT_TOKENS}"
            )
        if self.concurrency > 10_000_000:
            raise SpecError(
                f"workload: concurrency={self.concurrency} is implausibly large (max 10,000,000)"
            )
        for name in ("ttft_ms", "tpot_ms"):
            value = getattr(self, name)
            if value is not None and not (value > 0 and value < 1e9):
                raise SpecError(
                    f"workload: {name} must be a positive number of milliseconds, got {value!r}"
                )

    @property
    def context_tokens(self) -> int:
        return self.isl + self.osl


def check_speculative(spec_tokens: int, spec_acceptance: float) -> None:
    """Speculative decoding / MTP needs both its draft length and its acceptance rate: drafts
    at acceptance 0 are all rejected and only slow decoding, so that is refused, not run."""
    if spec_tokens and not spec_acceptance:
        raise SpecError(
            f"spec_tokens={spec_tokens} needs spec_acceptance (the acceptance rate of each draft "
            "token, e.g. 0.7): at 0 every draft is rejected and only slows decoding"
        )
