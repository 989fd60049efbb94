"""The device a calibration runs on: device strings, torch (the optional ``[gpu]`` extra,
imported only when needed), the facts a profile's ``device`` block records (name, driver,
memory, compute units, cache, compute capability), and its :class:`Clock` (how calls are timed
on it).

Example:
    >>> parse_device("cuda")
    'cuda:0'
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import SpecError, UnsupportedError
from . import profile

_DEVICE_RE = re.compile(r"^(cpu|cuda(?::(\d+))?)$")


def require_torch() -> Any:
    """Import torch, or raise a one-line error telling how to install it."""
    try:
        import torch
    except ImportError:
        raise UnsupportedError(
            "calibrate needs PyTorch: install the [gpu] extra (pip install 'llm-codesign[gpu]')"
        ) from None
    return torch


def parse_device(text: str | None) -> str | None:
    """Validate a device string: ``cpu``, ``cuda`` or ``cuda:N`` (None = pick automatically)."""
    if text is None:
        return None
    t = text.strip().lower()
    m = _DEVICE_RE.match(t)
    if not m:
        raise SpecError(f"--device {text!r}: expected cpu, cuda or cuda:N")
    if t == "cuda":
        return "cuda:0"
    return t


def resolve_device(torch: Any, text: str | None) -> str:
    """The device to measure: the requested one if present, else cuda:0 if CUDA works, else cpu."""
    dev = parse_device(text)
    if dev is None:
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if dev.startswith("cuda"):
        if not torch.cuda.is_available():
            raise UnsupportedError(
                f"--device {dev}: CUDA is not available to this torch ({torch.__version__})"
            )
        idx = int(dev.split(":")[1])
        if idx >= torch.cuda.device_count():
            raise UnsupportedError(
                f"--device {dev}: only {torch.cuda.device_count()} CUDA device(s) visible"
            )
    return dev


# --------------------------------------------------------------------------------------------
# device facts
# --------------------------------------------------------------------------------------------


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def cpu_cache_bytes() -> float | None:
    """Size of the CPU's last-level cache from sysfs (None where not readable)."""
    best: tuple[int, float] | None = None
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    try:
        for idx in sorted(base.glob("index*")):
            level = int((idx / "level").read_text().strip())
            text = (idx / "size").read_text().strip().upper()
            mult = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
            size = float(text.rstrip("KMG")) * mult
            if best is None or level > best[0] or (level == best[0] and size > best[1]):
                best = (level, size)
    except (OSError, ValueError):
        return None
    return best[1] if best else None


def _memory_bytes() -> float | None:
    try:
        import psutil

        return float(psutil.virtual_memory().total)
    except ImportError:
        pass
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def _nvidia_driver() -> str | None:
    version: str | None = None
    try:
        import pynvml

        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        version = v.decode() if isinstance(v, bytes) else str(v)
    except Exception:  # noqa: BLE001 - optional probe; any failure means "not known this way"
        version = None
    if version:
        return version
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        line = out.stdout.strip().splitlines()
        return line[0].strip() if out.returncode == 0 and line else None
    except (OSError, subprocess.SubprocessError):
        return None


def device_info(torch: Any, device: str) -> dict[str, Any]:
    """The profile's ``device`` block for a torch device string."""
    now = _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()
    if device.startswith("cuda"):
        idx = int(device.split(":")[1])
        props = torch.cuda.get_device_properties(idx)
        if getattr(torch.version, "hip", None):
            driver = f"ROCm {torch.version.hip}"
        else:
            drv = _nvidia_driver()
            driver = (
                f"NVIDIA driver {drv}, CUDA {torch.version.cuda}"
                if drv
                else f"CUDA runtime {torch.version.cuda}"
            )
        l2 = getattr(props, "L2_cache_size", None)
        return {
            "name": props.name,
            "kind": "cuda",
            "driver": driver,
            "torch_version": torch.__version__,
            "date": now,
            "hardware_id": profile.match_hardware_id(props.name),
            "memory_bytes": float(props.total_memory),
            "compute_units": int(props.multi_processor_count),
            "cache_bytes": float(l2) if l2 else None,
            "compute_capability": f"{props.major}.{props.minor}",
            "device_count": int(torch.cuda.device_count()),
        }
    name = _cpu_name()
    return {
        "name": name,
        "kind": "cpu",
        "driver": f"{platform.system()} {platform.release()}",
        "torch_version": torch.__version__,
        "date": now,
        "hardware_id": profile.match_hardware_id(name),
        "memory_bytes": _memory_bytes(),
        "compute_units": int(torch.get_num_threads()),
        "cache_bytes": cpu_cache_bytes(),
        "compute_capability": None,
        "device_count": 1,
    }


def fp8_supported(torch: Any, device: str) -> bool:
    """FP8 GEMMs through ``torch._scaled_mm``: CUDA compute capability 8.9+ (Ada, Hopper,
    Blackwell). Not on CPUs, where it runs but is emulated (orders of magnitude slower)."""
    if (
        not device.startswith("cuda")
        or not hasattr(torch, "float8_e4m3fn")
        or not hasattr(torch, "_scaled_mm")
    ):
        return False
    major, minor = torch.cuda.get_device_capability(int(device.split(":")[1]))
    return (major, minor) >= (8, 9)


class Clock:
    """Times ``calls`` back-to-back calls of ``fn(i)``: CUDA events on a GPU, else perf_counter."""

    def __init__(self, torch: Any, device: str):
        self.torch = torch
        self.cuda = device.startswith("cuda")
        self.device = device

    @property
    def kind(self) -> str:
        return "cuda events" if self.cuda else "perf_counter"

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def run(self, fn: Callable[[int], Any], calls: int, start: int) -> float:
        if self.cuda:
            t0 = self.torch.cuda.Event(enable_timing=True)
            t1 = self.torch.cuda.Event(enable_timing=True)
            t0.record()
            for i in range(calls):
                fn(start + i)
            t1.record()
            t1.synchronize()
            return t0.elapsed_time(t1) / 1e3
        s = time.perf_counter()
        for i in range(calls):
            fn(start + i)
        return time.perf_counter() - s
