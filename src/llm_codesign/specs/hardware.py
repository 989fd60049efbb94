"""GPU hardware specs: one YAML data file per GPU, SI units, datasheet peaks and measured
achievable fractions kept as separate, sourced fields (STYLE.md rule 3).

A user can pass their own file (a what-if GPU) with the same schema; ``with_overrides`` makes
one in code (``hw.with_overrides(hbm_bytes_per_s=8e12)``).

Example:
    >>> hw = load_hardware("h200-sxm")
    >>> hw.peak_flops("fp8") / 1e12
    1979.0
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import SpecError, UnknownIdError, UnsupportedError
from ..formats import BLOCK_SCALED_WEIGHTS, FORMATS, GROUPED_WEIGHT_FORMATS
from ._load import Fields, existing_file, read_mapping, shown

ARCHITECTURES = (
    "ampere",
    "ada",
    "hopper",
    "blackwell",
    "blackwell-ultra",
    "blackwell-rtx",
    "cdna3",
    "cdna4",
    "cpu",
)
COMPUTE_CLASSES = ("tf32", "bf16", "fp16", "fp8", "mxfp8", "fp6", "mxfp6", "int8", "nvfp4", "mxfp4")

_TOP_KEYS = set(
    "id name vendor architecture aliases sources peak_flops_per_s peak_flops_source hbm_bytes "
    "hbm_bytes_per_s memory_source device_memory_bytes device_memory_source l2_bytes sm_count "
    "boost_clock_hz tdp_w scaleup scaleout_bytes_per_s scaleout_source gemm_tile efficiency notes "
    "name_match".split()
)
_CHIP = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Efficiency:
    """A measured achievable fraction of a datasheet figure, with where it was measured."""

    value: float
    source: str


@dataclass(frozen=True)
class DecodeKernel(Efficiency):
    """A measured MLA decode-attention kernel (``efficiency.attention_decode.<class>``): its
    compute fraction of the class's peak (``value``) and, where the kernel table gives them,
    its fraction of HBM bandwidth on the latent cache (``hbm``; None: the engine's
    ``attn_decode_efficiency``), its time per query head per query token (``per_query_head_s``:
    loading the query, writing the output, the split-KV combine) and its fixed time per call
    (``per_call_s``: the kernels' floor at one short sequence)."""

    hbm: float | None = None
    per_query_head_s: float = 0.0
    per_call_s: float = 0.0


_DECODE_KERNEL_KEYS = {"value", "source", "hbm", "per_query_head_s", "per_call_s"}
# MLA decode kernel families a GPU file may measure apart from its default entries
# (``efficiency.attention_decode_<family>``; an engine names its family in ``attention_kernels``)
ATTENTION_KERNEL_FAMILIES = ("fa3",)
# GQA decode-attention kernel families a GPU file may measure an FP8-cache read rate for
# (``efficiency.fp8_kv_decode``; an engine names its family in ``gqa_decode_kernels``):
# ``flash_attention``, the FlashAttention kernels SGLang and vLLM run on Hopper
GQA_DECODE_KERNEL_FAMILIES = ("flash_attention",)


@dataclass(frozen=True)
class HardwareSpec:
    """One GPU (per-GPU figures; the system is ``scaleup_domain_size`` of them per NVLink
    domain)."""

    id: str
    name: str
    vendor: str
    architecture: str
    peak_flops_per_s: dict[str, float]
    hbm_bytes: float
    hbm_bytes_per_s: float
    sm_count: int
    l2_bytes: float | None
    boost_clock_hz: float | None
    tdp_w: float
    scaleup_technology: str
    scaleup_bytes_per_s: float  # per direction, per GPU
    scaleup_domain_size: int
    scaleout_bytes_per_s: float  # per GPU NIC, per direction
    tile_m: int
    tile_n: int
    tile_cluster_sms: int
    gemm_efficiency: dict[str, Efficiency]
    hbm_efficiency: Efficiency
    scaleup_efficiency: Efficiency
    sources: dict[str, str] = field(default_factory=dict)
    # decode attention's compute: the fraction of each class's peak a measured decode kernel
    # reaches (MLA's 128 heads per latent KV make it compute-bound); classes absent use the
    # engine's attn_prefill_efficiency
    attention_decode_efficiency: dict[str, DecodeKernel] = field(default_factory=dict)
    # other MLA decode kernel families measured on this GPU: family -> class -> kernel
    attention_decode_kernels: dict[str, dict[str, DecodeKernel]] = field(default_factory=dict)
    # routed grouped (MoE expert) GEMMs: the fraction of the class's dense GEMM ceiling they
    # reach where a grouped kernel was measured (classes absent: the dense ceiling)
    grouped_gemm_efficiency: dict[str, Efficiency] = field(default_factory=dict)
    split_k_rows: int | None = None  # widest row tile whose GEMMs split K (None: any)
    # GQA decode attention over an FP8 KV cache: per kernel family (``GQA_DECODE_KERNEL_FAMILIES``)
    # the measured rate it reads the cache at, as a fraction of the datasheet bandwidth at one
    # byte per element (families absent: the engine's decode fraction alone)
    fp8_kv_decode: dict[str, Efficiency] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    # free-text GPU names (measurement tables): the chip as it appears in a name lower-cased
    # with spaces and punctuation removed, and the words that make such a name another product
    name_chip: str = ""
    name_unless: tuple[str, ...] = ()
    notes: str = ""
    emulate: bool = False
    # Measured GEMM throughput from a calibration profile (llm_codesign.calibrate.GemmTable):
    # any object with ``flops_per_s(compute_class, m, n, k) -> ndarray | None`` (NaN = not covered).
    gemm_table: Any = field(default=None, compare=False, repr=False)
    profile_source: str = ""
    device_memory_bytes: float | None = None  # nvidia-smi memory.total; None: hbm_bytes
    device_memory_source: str = ""

    @property
    def device_memory(self) -> float:
        """Memory the driver exposes (NVML / cudaMemGetInfo total): what engines budget."""
        return self.hbm_bytes if self.device_memory_bytes is None else self.device_memory_bytes

    def supports(self, compute_class: str) -> bool:
        return compute_class in self.peak_flops_per_s

    def peak_flops(self, compute_class: str) -> float:
        """Dense peak FLOP/s for a compute class; raises UnsupportedError if not native."""
        try:
            return self.peak_flops_per_s[compute_class]
        except KeyError:
            native = ", ".join(sorted(self.peak_flops_per_s))
            raise UnsupportedError(
                f"{self.id} has no native {compute_class} tensor-core path (native: {native}); "
                "choose another precision (weight-only 4-bit: w4a16, mxfp4-a16), or pass "
                "--emulate (emulate=True) to run it at the nearest native rate"
            ) from None

    def compute_rate_class(self, compute_class: str) -> str:
        """The class whose peak is used: the class itself if native, else (emulation only) the
        widest native class that can hold it (FP4/FP6 -> FP8 -> BF16)."""
        if compute_class in self.peak_flops_per_s:
            return compute_class
        if not self.emulate:
            self.peak_flops(compute_class)  # raises
        for fallback in ("fp8", "bf16", "fp16"):
            if fallback in self.peak_flops_per_s:
                return fallback
        raise UnsupportedError(f"{self.id}: no tensor-core class to emulate {compute_class}")

    def block_scaled_efficiency(self, weights: str, rate_class: str = "") -> Efficiency | None:
        """The ``efficiency.grouped_gemm`` entry of a weight format with a grouped kernel rate of
        its own (``formats.GROUPED_WEIGHT_FORMATS``), for GEMMs at ``rate_class``: a block-scaled
        format's (``fp8_block``) at any class; a weight-only format's (``mxfp4``) only where the
        tensor cores do not take it (its class is none of this GPU's: there the same key is the
        class's share) and the GEMMs run at BF16 (the W4A16 kernels measured). None for any
        other format, class or GPU, or where not measured."""
        entry = self.grouped_gemm_efficiency.get(weights)
        if weights in BLOCK_SCALED_WEIGHTS:
            return entry
        if entry is None:
            return None
        return entry if self.runs_weight_only(weights) and rate_class == "bf16" else None

    def runs_weight_only(self, weights: str) -> bool:
        """Whether this GPU runs experts of a grouped weight-only format (``mxfp4``; not the
        block-scaled ones, ``fp8_block``) weight-only: its tensor cores do not take the format's
        class, so its GEMMs convert the weights and run at BF16 (MXFP4 on Hopper, Ampere, Ada
        and CDNA3; Blackwell and CDNA4 take it natively)."""
        if weights not in GROUPED_WEIGHT_FORMATS or weights in BLOCK_SCALED_WEIGHTS:
            return False
        return FORMATS[weights].compute_class not in self.peak_flops_per_s

    def grouped_gemm_efficiency_for(self, compute_class: str, weights: str = "") -> Efficiency:
        """Fraction of the dense GEMM ceiling that routed grouped GEMMs of a class reach
        (``efficiency.grouped_gemm``): the entry of their weight format where the file measured
        one (``block_scaled_efficiency``: block-scaled formats such as ``fp8_block``, whose
        scales Hopper's tensor cores do not apply, and MXFP4 weights run weight-only at BF16;
        ``cost.gemm_time`` takes it as a floor on the rows' time), else the class's (the
        grouped kernel's math rate); 1 where no grouped kernel was measured."""
        return self.block_scaled_efficiency(weights, compute_class) or (
            self.grouped_gemm_efficiency.get(
                compute_class, Efficiency(1.0, "no grouped-GEMM measurement: the dense ceiling")
            )
        )

    def gemm_efficiency_for(self, compute_class: str) -> Efficiency:
        """Measured GEMM ceiling fraction for a class; falls back to BF16's (stated in source)."""
        if compute_class in self.gemm_efficiency:
            return self.gemm_efficiency[compute_class]
        for fb in (
            ("fp8", "bf16")
            if compute_class in ("nvfp4", "mxfp4", "mxfp8", "fp6", "mxfp6")
            else ("bf16",)
        ):
            if fb in self.gemm_efficiency:
                e = self.gemm_efficiency[fb]
                return Efficiency(e.value, f"fallback to {fb}: {e.source}")
        return Efficiency(0.75, "default 0.75: no measurement for this GPU (assumption)")

    @property
    def native_classes(self) -> tuple[str, ...]:
        return tuple(sorted(self.peak_flops_per_s))

    def with_overrides(self, **changes: Any) -> HardwareSpec:
        """A what-if copy, e.g. ``with_overrides(hbm_bytes_per_s=8e12)``; validates values."""
        vis = self.device_memory_bytes  # a new hbm_bytes scales it: the driver's share kept
        if changes.get("hbm_bytes") and vis is not None and "device_memory_bytes" not in changes:
            changes["device_memory_bytes"] = vis * float(changes["hbm_bytes"]) / self.hbm_bytes
        for key, value in changes.items():
            if key not in {f.name for f in dataclasses.fields(self)}:
                raise SpecError(f"hardware override: unknown field {key!r}")
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
                raise SpecError(f"hardware override: {key} must be positive, got {value}")
        return dataclasses.replace(self, **changes)

    def summary(self) -> dict[str, Any]:
        fp4 = self.peak_flops_per_s.get("nvfp4", self.peak_flops_per_s.get("mxfp4", 0.0))
        return {
            "id": self.id,
            "name": self.name,
            "architecture": self.architecture,
            "bf16_tflops": self.peak_flops_per_s.get("bf16", 0.0) / 1e12,
            "fp8_tflops": self.peak_flops_per_s.get("fp8", 0.0) / 1e12,
            "fp4_tflops": fp4 / 1e12,
            "hbm_gb": self.hbm_bytes / 1e9,
            "hbm_gib": self.hbm_bytes / 2**30,
            "device_memory_gib": self.device_memory / 2**30,  # what the engines budget
            "hbm_tb_s": self.hbm_bytes_per_s / 1e12,
            "scaleup_gb_s_per_direction": self.scaleup_bytes_per_s / 1e9,
            "scaleup_domain_size": self.scaleup_domain_size,
            "native_formats": list(self.native_classes),
        }


def _efficiency(f: Fields, key: str) -> Efficiency:
    m = f.mapping(key)
    value = m.float("value")
    if value > 1.0:
        raise SpecError(f"{m.where}: value must be a fraction in (0, 1], got {value}")
    return Efficiency(value, m.str("source"))


def _families(eff: Fields, key: str, families: tuple[str, ...]) -> dict[str, Efficiency]:
    """An optional mapping of kernel families to {value, source}; another key is refused with
    the allowed ones named."""
    if not eff.has(key):
        return {}
    m = eff.mapping(key)
    m.reject_unknown(set(families))
    return {k: _efficiency(m, k) for k in m.data}


def _decode_kernel(f: Fields, key: str) -> DecodeKernel:
    e = _efficiency(f, key)
    m = f.mapping(key)
    m.reject_unknown(_DECODE_KERNEL_KEYS)
    hbm = m.float("hbm") if m.has("hbm") else None
    if hbm is not None and hbm > 1.0:
        raise SpecError(f"{m.where}: hbm must be a fraction in (0, 1], got {hbm}")
    times = {}
    for k, most in (("per_query_head_s", 1e-3), ("per_call_s", 1.0)):
        times[k] = m.float(k, 0.0, positive=False, maximum=most)
        if times[k] < 0:
            raise SpecError(f"{m.where}: {k} must be >= 0 seconds, got {times[k]:g}")
    return DecodeKernel(e.value, e.source, hbm, **times)


def _class_efficiencies(
    eff: Fields, key: str, peaks: dict[str, float], formats: tuple[str, ...] = ()
) -> dict[str, Any]:
    """An optional per-compute-class mapping of ``efficiency`` ({value, source} per class;
    ``attention_decode`` entries may add the kernel terms of :class:`DecodeKernel`); a class
    the GPU has no peak for is refused with the allowed keys named. ``formats``: weight formats
    the mapping may also key (``grouped_gemm``: a format of ``formats.GROUPED_WEIGHT_FORMATS``
    the GPU runs: at its own class, or a 4-bit format weight-only at BF16, as W4A16 kernels do)."""
    if not eff.has(key):
        return {}
    m = eff.mapping(key)
    runs = [
        f
        for f in formats
        if FORMATS[f].compute_class in peaks or (FORMATS[f].element_bits <= 4 and "bf16" in peaks)
    ]
    allowed = list(dict.fromkeys(sorted(peaks) + runs))  # (a native 4-bit class: one key)
    for k in m.data:
        if k not in allowed:
            raise SpecError(
                f"{m.where}: {k!r} is not a compute class of this GPU"
                + (" or a weight format with a grouped-GEMM rate of its own" if formats else "")
                + f"; allowed: {', '.join(allowed)}"
            )
    read = _decode_kernel if key.startswith("attention_decode") else _efficiency
    return {k: read(m, k) for k in m.data}


# The hardware file's schema: (field path, kind, required, meaning). ``hardware --template``
# prints it as a commented YAML and docs/HARDWARE.md documents it; a file's problems are all
# reported at once (``hardware_problems``) before it is parsed.
HARDWARE_SCHEMA: tuple[tuple[str, str, bool, str], ...] = (
    ("id", "str", True, "short id used on the command line, e.g. my-gpu"),
    ("name", "str", True, "full product name"),
    ("vendor", "str", True, "nvidia or amd (launch commands depend on it)"),
    ("architecture", "str", True, "one of " + ", ".join(ARCHITECTURES)),
    ("peak_flops_per_s", "mapping", True, "dense peak FLOP/s per compute class (bf16, fp8, ...)"),
    ("hbm_bytes", "number", True, "HBM capacity in bytes (datasheet 'GB' of HBM are GiB)"),
    ("hbm_bytes_per_s", "number", True, "HBM bandwidth in bytes/s (datasheet)"),
    ("sm_count", "int", True, "SMs (CUs on AMD): wave quantization of GEMM tiles"),
    ("tdp_w", "number", True, "board power in W (tokens/s/MW)"),
    ("scaleup.technology", "str", True, "scale-up link, e.g. NVLink4, Infinity Fabric"),
    ("scaleup.bytes_per_s_per_direction", "number", True, "per-GPU scale-up bandwidth, bytes/s"),
    ("scaleup.domain_size", "int", True, "GPUs in one scale-up domain (8 for HGX, 72 NVL72)"),
    ("gemm_tile.m", "int", True, "GEMM output tile rows per SM"),
    ("gemm_tile.n", "int", True, "GEMM output tile columns per SM"),
    ("efficiency.gemm", "mapping", True, "per compute class {value: fraction, source: text}"),
    ("efficiency.hbm.value", "number", True, "achieved fraction of HBM bandwidth"),
    ("efficiency.hbm.source", "str", True, "where the fraction comes from"),
    ("efficiency.scaleup.value", "number", True, "achieved fraction of the scale-up link"),
    ("efficiency.scaleup.source", "str", True, "where the fraction comes from"),
    (
        "efficiency.attention_decode",
        "mapping",
        False,
        "per compute class {value, source}: decode attention's compute fraction of that peak; "
        "optional measured MLA kernel terms: hbm (fraction of HBM bandwidth on the latent "
        "cache), per_query_head_s (s per query head per query token), per_call_s (s per layer)",
    ),
    (
        "efficiency.attention_decode_fa3",
        "mapping",
        False,
        "as efficiency.attention_decode, for FlashAttention-3's MLA decode kernel (engines with "
        "attention_kernels: fa3); classes absent use efficiency.attention_decode",
    ),
    (
        "efficiency.fp8_kv_decode",
        "mapping",
        False,
        "per GQA decode kernel family (" + ", ".join(GQA_DECODE_KERNEL_FAMILIES) + ") {value, "
        "source}: the rate its kernels read an FP8 KV cache at, as a fraction of the datasheet "
        "bandwidth at one byte per element; it caps the decode fraction of engines whose "
        "gqa_decode_kernels name the family",
    ),
    (
        "efficiency.grouped_gemm",
        "mapping",
        False,
        "per compute class {value, source}: the fraction of that class's GEMM ceiling that "
        "routed grouped (MoE expert) GEMMs reach; a weight format ("
        + ", ".join(GROUPED_WEIGHT_FORMATS)
        + ") may have its own entry: the rate of the rows computed that bounds its GEMMs' time "
        "where they are compute-bound (work off the tensor cores; cost.gemm_time)",
    ),
    ("scaleout_bytes_per_s", "number", False, "per-GPU scale-out (NIC) bandwidth, bytes/s"),
    ("device_memory_bytes", "number", False, "nvidia-smi total; engines budget it (or hbm)"),
    ("device_memory_source", "str", False, "where device_memory_bytes was read"),
    ("l2_bytes", "number", False, "L2 cache bytes"),
    ("boost_clock_hz", "number", False, "boost clock"),
    ("gemm_tile.cluster_sms", "int", False, "SMs a tile spans (2 on Blackwell 2-SM MMA)"),
    ("gemm_tile.split_k_rows", "int", False, "widest row tile of split-K GEMMs (default: any)"),
    ("aliases", "list", False, "other names in measurement tables"),
    ("sources", "mapping", False, "citation keys used in the *_source fields"),
)
# the keys of the ``efficiency`` mapping, read from the schema (one home)
_EFFICIENCY_KEYS = {
    path.split(".")[1] for path, *_ in HARDWARE_SCHEMA if path.startswith("efficiency.")
}
_KINDS = {
    "str": (str,),
    "number": (int, float),
    "int": (int,),
    "mapping": (dict,),
    "list": (list, tuple),
}


def hardware_problems(data: Any) -> list[str]:
    """Every missing required field and every wrongly typed field of a hardware mapping, with
    its path (empty: the file can be parsed)."""
    if not isinstance(data, dict):
        return ["the file must hold a mapping of fields"]
    out = []
    for path, kind, required, meaning in HARDWARE_SCHEMA:
        node: Any = data
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            if required:
                out.append(f"{path}: missing ({kind}: {meaning})")
            continue
        if kind == "number" and isinstance(node, str):  # YAML 1.1 writes 8e12 as a string
            try:
                node = float(node)
            except ValueError:
                pass
        if not isinstance(node, _KINDS[kind]) or isinstance(node, bool):
            out.append(f"{path}: expected {kind}, got {type(node).__name__} {node!r}")
    unknown = sorted(set(data) - _TOP_KEYS)
    out += [
        f"{k}: unknown field (allowed: see `llm-codesign hardware --template`)" for k in unknown
    ]
    return out


def hardware_template() -> str:
    """A hardware file to start from: every field of ``HARDWARE_SCHEMA`` documented in a
    comment block, then the fields with a bundled H100 SXM's values (valid YAML)."""
    import yaml

    example = read_mapping(_hardware_dir() / "h100-sxm.yaml")
    lines = ["# llm-codesign hardware file (docs/HARDWARE.md). Fields:"]
    for path, kind, required, meaning in HARDWARE_SCHEMA:
        lines.append(f"#   {path} ({'required' if required else 'optional'} {kind}): {meaning}")
    lines.append("# Values below are an H100 SXM's: replace them with your GPU's.")
    body: dict[str, Any] = {}
    for path, _kind, _required, _meaning in HARDWARE_SCHEMA:
        src: Any = example
        for part in path.split("."):
            src = src.get(part) if isinstance(src, dict) else None
        if src is None:
            continue
        dst = body
        parts = path.split(".")
        for part in parts[:-1]:
            dst = dst.setdefault(part, {})
        dst[parts[-1]] = src
    return "\n".join(lines) + "\n" + yaml.safe_dump(body, sort_keys=False, width=100)


def hardware_from_mapping(data: dict[str, Any], where: str) -> HardwareSpec:
    problems = hardware_problems(data)
    if problems:
        raise SpecError(f"{where}: {len(problems)} problem(s): " + "; ".join(problems))
    f = Fields(data, where)
    f.reject_unknown(_TOP_KEYS)
    arch = f.str("architecture")
    if arch not in ARCHITECTURES:
        raise SpecError(f"{where}: architecture {arch!r} is not one of {', '.join(ARCHITECTURES)}")
    peaks_f = f.mapping("peak_flops_per_s")
    peaks: dict[str, float] = {}
    for key in peaks_f.data:
        if key not in COMPUTE_CLASSES:
            raise SpecError(
                f"{peaks_f.where}: unknown compute class {key!r}; allowed: "
                f"{', '.join(COMPUTE_CLASSES)}"
            )
        peaks[key] = peaks_f.float(key)
    if not peaks:
        raise SpecError(f"{peaks_f.where}: at least one peak is required")
    up = f.mapping("scaleup")
    tile = f.mapping("gemm_tile")
    eff = f.mapping("efficiency")
    eff.reject_unknown(_EFFICIENCY_KEYS)  # a misspelt kernel family is refused, not ignored
    gemm_f = eff.mapping("gemm")
    gemm = {k: _efficiency(gemm_f, k) for k in gemm_f.data}
    att = _class_efficiencies(eff, "attention_decode", peaks)
    grouped = _class_efficiencies(eff, "grouped_gemm", peaks, GROUPED_WEIGHT_FORMATS)
    families = {
        fam: _class_efficiencies(eff, f"attention_decode_{fam}", peaks)
        for fam in ATTENTION_KERNEL_FAMILIES
        if eff.has(f"attention_decode_{fam}")
    }
    l2 = f.data.get("l2_bytes")
    clock = f.data.get("boost_clock_hz")
    hbm = f.float("hbm_bytes")  # the driver exposes at most the DRAM the GPU has
    visible = f.float("device_memory_bytes", maximum=hbm) if f.has("device_memory_bytes") else None
    return HardwareSpec(
        id=f.str("id"),
        name=f.str("name"),
        vendor=f.str("vendor"),
        architecture=arch,
        peak_flops_per_s=peaks,
        hbm_bytes=hbm,
        hbm_bytes_per_s=f.float("hbm_bytes_per_s"),
        device_memory_bytes=visible,
        device_memory_source=str(f.data.get("device_memory_source") or ""),
        sm_count=f.int("sm_count"),
        l2_bytes=f.float("l2_bytes") if l2 is not None else None,
        boost_clock_hz=f.float("boost_clock_hz") if clock is not None else None,
        tdp_w=f.float("tdp_w"),
        scaleup_technology=up.str("technology"),
        scaleup_bytes_per_s=up.float("bytes_per_s_per_direction"),
        scaleup_domain_size=up.int("domain_size"),
        scaleout_bytes_per_s=f.float("scaleout_bytes_per_s", 0.0, positive=False),
        tile_m=tile.int("m"),
        tile_n=tile.int("n"),
        tile_cluster_sms=tile.int("cluster_sms", 1),
        split_k_rows=tile.int("split_k_rows") if tile.has("split_k_rows") else None,
        gemm_efficiency=gemm,
        hbm_efficiency=_efficiency(eff, "hbm"),
        scaleup_efficiency=_efficiency(eff, "scaleup"),
        attention_decode_efficiency=att,
        attention_decode_kernels=families,
        grouped_gemm_efficiency=grouped,
        fp8_kv_decode=_families(eff, "fp8_kv_decode", GQA_DECODE_KERNEL_FAMILIES),
        sources={str(k): str(v) for k, v in (f.data.get("sources") or {}).items()},
        aliases=tuple(f.str_list("aliases", [])),
        **_name_match(f),
        notes=str(f.data.get("notes") or ""),
    )


def _name_match(f: Fields) -> dict[str, Any]:
    if not f.has("name_match"):
        return {}
    m = f.mapping("name_match")
    m.reject_unknown({"chip", "unless"})
    words = [m.str("chip"), *m.list("unless", [])]
    for w in words:
        if not isinstance(w, str) or not _CHIP.fullmatch(w):
            raise SpecError(
                f"{m.where}: {w!r} must be lower-case letters and digits (a name with spaces and "
                "punctuation removed, e.g. 'h100', 'rtxpro6000')"
            )
    return {"name_chip": words[0], "name_unless": tuple(words[1:])}


def _hardware_dir() -> Path:
    return Path(str(resources.files("llm_codesign") / "data" / "hardware"))


@cache
def bundled_hardware() -> dict[str, HardwareSpec]:
    out: dict[str, HardwareSpec] = {}
    for path in sorted(_hardware_dir().glob("*.yaml")):
        spec = hardware_from_mapping(read_mapping(path), path.name)
        out[spec.id] = spec
    return out


def hardware_alias_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for spec in bundled_hardware().values():
        table[spec.id.lower()] = spec.id
        for alias in spec.aliases:
            table[alias.lower()] = spec.id
    return table


def hardware_chip_table() -> list[tuple[str, str, tuple[str, ...]]]:
    """``(chip, hardware id, unless words)`` of every bundled GPU whose file has ``name_match``,
    longest chip first (so ``gb200`` is tried before ``b200`` and ``h200`` before ``h20``)."""
    rows: dict[str, tuple[str, str, tuple[str, ...]]] = {}
    for spec in bundled_hardware().values():
        if not spec.name_chip:
            continue
        if spec.name_chip in rows:
            raise SpecError(
                f"{spec.id}.yaml: name_match chip {spec.name_chip!r} is also "
                f"{rows[spec.name_chip][1]}'s"
            )
        rows[spec.name_chip] = (spec.name_chip, spec.id, spec.name_unless)
    return sorted(rows.values(), key=lambda r: (-len(r[0]), r[0]))


def load_hardware(hardware: str | Path | HardwareSpec) -> HardwareSpec:
    """Resolve a GPU: a spec, a bundled id or alias, or a path to a YAML/JSON spec file. (A
    calibration profile as a GPU is resolved above specs: ``calibrate.resolve_hardware``.)"""
    if isinstance(hardware, HardwareSpec):
        return hardware
    text = str(hardware)
    hws = bundled_hardware()
    if text in hws:
        return hws[text]
    alias = hardware_alias_table().get(text.lower())
    if alias:
        return hws[alias]
    path = existing_file(text)
    if path is not None:
        data = read_mapping(path)
        if (
            "profile_version" in data
        ):  # the interfaces resolve profiles (calibrate.resolve_hardware)
            raise SpecError(
                f"{path}: a calibration profile, not a hardware spec; load it with "
                "llm_codesign.load_hardware or llm_codesign.calibrate.resolve_hardware"
            )
        return hardware_from_mapping(data, str(path))
    raise UnknownIdError(
        f"unknown hardware {shown(text)!r}: not a bundled id and not a readable YAML/JSON path; "
        f"bundled: {', '.join(sorted(hws))}"
    )
