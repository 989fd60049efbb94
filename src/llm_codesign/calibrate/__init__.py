"""Calibration: measured silicon in the cost model.

* :mod:`.profile`: calibration profiles (what ``llm-codesign calibrate`` measured), read,
  validated and summarized;
* :mod:`.overlay`: a profile applied to a hardware spec and to engine constants, provenance,
  and :func:`resolve_hardware` (a profile is also a ``--hardware``);
* :mod:`.compare`: predicted vs measured time of every microbenchmark of a profile;
* :mod:`.microbench`: the microbenchmarks that write a profile (needs torch, imported when run),
  on the device :mod:`.device` finds and describes; :mod:`.collectives` runs the all-reduce and
  all-to-all ones over one process per GPU;
* :mod:`.fit`: the engine-constant fit on published measurements (``calibrate-fit``).
* :mod:`.streaming`: the HBM bandwidth streaming kernels sustain, fitted from published kernel
  timings (the hardware files' ``efficiency.hbm``).

The names below come from the first three; import ``device``, ``microbench``, ``collectives``,
``fit`` and ``streaming`` by name (``from llm_codesign.calibrate import fit``): ``fit`` reads
measurements through :mod:`llm_codesign.validate`, which itself overlays profiles from here.
"""

from .compare import Comparison, compare_profile
from .overlay import (
    GemmTable,
    apply_profile,
    calibrated_engine,
    engine_overrides,
    hardware_from_profile,
    measured_hardware,
    profile_of,
    provenance,
    resolve_hardware,
)
from .profile import (
    DTYPES,
    MEASUREMENT_KINDS,
    PROFILE_VERSION,
    DeviceInfo,
    Profile,
    derive,
    element_bytes,
    load_profile,
    match_hardware_id,
    output_bytes,
    profile_from_mapping,
    save_profile,
)

__all__ = [
    "DTYPES",
    "MEASUREMENT_KINDS",
    "PROFILE_VERSION",
    "Comparison",
    "DeviceInfo",
    "GemmTable",
    "Profile",
    "apply_profile",
    "calibrated_engine",
    "compare_profile",
    "derive",
    "element_bytes",
    "engine_overrides",
    "hardware_from_profile",
    "load_profile",
    "match_hardware_id",
    "measured_hardware",
    "output_bytes",
    "profile_from_mapping",
    "profile_of",
    "provenance",
    "resolve_hardware",
    "save_profile",
]
