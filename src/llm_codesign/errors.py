"""One error tree for llm-codesign.

User mistakes raise subclasses of :class:`CodesignError` with a one-line message naming the
bad input; the CLI catches the base class only, prints the line and exits with code 2.
``assert`` is reserved for internal invariants.
"""

from __future__ import annotations


class CodesignError(Exception):
    """Base class of every error caused by user input or data files."""


class SpecError(CodesignError):
    """A model, hardware, precision, plan or workload spec is invalid."""


class UnknownIdError(SpecError):
    """An id (model, hardware, precision, engine) is not bundled and is not a readable path."""


class UnsupportedError(CodesignError):
    """The request is well formed but the hardware or model cannot do it (e.g. NVFP4 on Hopper)."""


class DataFileError(CodesignError):
    """A data file (CSV, safetensors, profile) is malformed."""


class UnknownModelTypeWarning(UserWarning):
    """A config.json of an unknown ``model_type`` was read by the common conventions (its
    parameter count says whether the reading is right)."""
