"""Reading a deployment: engine command lines (``trtllm-serve``, ``vllm serve``,
``python -m sglang.launch_server``), TensorRT-LLM LLM-API option files, NVIDIA Dynamo
``DynamoGraphDeployment`` YAMLs and benchmark-client commands, as settings with their origin.

What each flag or key means is ``data/launch/flags.yaml``'s ``reads`` table, the same file that
lists the flags the launch artifacts write (:mod:`.launch_data`), so reading and writing share
one vocabulary. A flag the table does not know is an error naming it and the known ones; a flag
the table marks as ignored is kept with its reason. :mod:`.deploy_map` turns the settings into
the model's inputs.

Example:
    >>> s = read_sources(["vllm serve meta-llama/Llama-3.1-8B-Instruct -tp 2 --port 8000"])
    >>> [(x.name, x.value) for x in s[0].settings], s[0].ignored[0][0]
    ([('model', 'meta-llama/Llama-3.1-8B-Instruct'), ('tp', '2')], '--port 8000')
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import SpecError
from .launch_data import flag_table

MAX_SOURCE_BYTES = 1_000_000  # a launch script or deployment YAML is far smaller
ENGINE_OF = {
    "trtllm-serve": "trtllm",
    "vllm serve": "vllm",
    "python -m sglang.launch_server": "sglang",
    "dynamo.vllm": "vllm",
    "dynamo.sglang": "sglang",
}
BENCH_TOOLS = (
    "vllm bench serve",
    "python -m tensorrt_llm.serve.scripts.benchmark_serving",
    "python -m sglang.bench_serving",
    "genai-perf profile",
)
# words before a server command that only start it elsewhere (MPI, the LLM-API launcher)
DYNAMO_MODULES = ("dynamo.vllm", "dynamo.sglang")
LAUNCHERS = ("mpirun", "trtllm-llmapi-launch", "srun")
# commands of a launch script that start no server and no benchmark: (first words, why ignored)
SKIPPED_COMMANDS = {
    "ray start": "starts a Ray cluster node: placement only",
    "trtllm-serve disaggregated": "the router of disaggregated workers: give the workers instead",
    "export": "sets an environment variable",
    "cd": "changes directory",
    "set": "sets shell options",
    ":": "checks a shell variable",
    "echo": "prints text",
    "sleep": "waits",
    "wait": "waits",
}


@dataclass(frozen=True)
class Setting:
    """One setting a deployment states: its name (``flags.yaml`` ``reads``), the raw value
    (text from a command line, the parsed value from a YAML) and where it came from."""

    name: str
    value: Any
    origin: str


@dataclass
class Source:
    """One server, worker or benchmark read from a deployment: ``tool`` is the ``reads`` key,
    ``engine`` the engine id ('' for a benchmark client), ``role`` '' (aggregated), 'prefill' or
    'decode', ``replicas`` the copies a Dynamo service runs, ``ignored`` (origin, reason)."""

    tool: str
    where: str
    engine: str = ""
    settings: list[Setting] = field(default_factory=list)
    ignored: list[tuple[str, str]] = field(default_factory=list)
    role: str = ""
    replicas: int = 1

    @property
    def is_bench(self) -> bool:
        return self.tool in BENCH_TOOLS

    def values(self, name: str) -> list[Setting]:
        return [s for s in self.settings if s.name == name]


def reads(tool: str) -> dict[str, Any]:
    """The ``reads`` entry of a tool (``same_as`` followed)."""
    table = flag_table()["reads"]
    entry = table[tool]
    while "same_as" in entry:
        entry = table[entry["same_as"]]
    return entry


def _ignored_reason(entry: dict[str, Any], flag: str) -> str | None:
    for reason, flags in (entry.get("ignored") or {}).items():
        if flag in flags:
            return str(reason)
    return None


def _known(entry: dict[str, Any]) -> list[str]:
    names = set(entry.get("settings") or {})
    for flags in (entry.get("ignored") or {}).values():
        names |= set(flags)
    return sorted(names)


def read_sources(sources: Sequence[str], base: Path | None = None) -> list[Source]:
    """Every server, worker and benchmark in ``sources``: files (YAML by suffix, else a shell
    script or text file with one command a line, backslash continuations joined) or inline
    command lines."""
    out: list[Source] = []
    for text in sources:
        if not isinstance(text, str) or not text.strip():
            raise SpecError("--from: an empty source; give a file or a command line")
        path = Path(text).expanduser()
        looks_like_file = "\n" not in text and " " not in text.strip()
        if looks_like_file and path.is_file():
            out += _read_file(path)
        elif looks_like_file:
            raise SpecError(f"--from {text}: no such file (a command line has spaces)")
        else:
            out += _read_script(text, "--from", base or Path.cwd())
    return out


def _read_file(path: Path) -> list[Source]:
    if path.stat().st_size > MAX_SOURCE_BYTES:
        raise SpecError(f"--from {path}: larger than {MAX_SOURCE_BYTES} bytes")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"--from {path}: cannot read ({exc})") from None
    if path.suffix.lower() in (".yaml", ".yml", ".json"):
        data = _yaml(text, str(path))
        if data.get("kind") == "DynamoGraphDeployment":
            return read_dynamo(data, str(path), path.parent)
        if "kind" in data:
            raise SpecError(
                f"{path}: kind {data['kind']!r} is not a deployment this reads; allowed: "
                "DynamoGraphDeployment, or a TensorRT-LLM LLM-API options file"
            )
        src = Source("trtllm-config", str(path), engine="trtllm")
        _read_config(data, str(path), src)
        return [src]
    return _read_script(text, str(path), path.parent)


def _yaml(text: str, where: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
        raise SpecError(f"{where}: not readable YAML ({problem})") from None
    if not isinstance(data, dict):
        raise SpecError(f"{where}: expected a mapping at the top level")
    return data


def _lines(text: str) -> list[str]:
    """Command lines of a script: continuations joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\r?\n", " ", text)
    return [
        ln.strip() for ln in joined.splitlines() if ln.strip() and not ln.lstrip().startswith("#")
    ]


def _read_script(text: str, where: str, base: Path) -> list[Source]:
    out = []
    for line in _lines(text):
        src = read_command(line, where, base)
        if src is not None:
            out.append(src)
    if not out:
        raise SpecError(
            f"{where}: no server or benchmark command found; allowed: "
            + ", ".join(list(ENGINE_OF)[:3] + list(BENCH_TOOLS))
        )
    return out


def _tool_at(words: list[str], i: int) -> str | None:
    tools = sorted(
        [t for t in flag_table()["reads"] if t not in ("trtllm-config", *DYNAMO_MODULES)],
        key=len,
        reverse=True,
    )
    rest = [("python" if w in ("python3", "python") else w) for w in words[i : i + 6]]
    for t in tools:
        n = len(t.split())
        if rest[:n] == t.split():
            return t
    return None


def read_command(line: str, where: str, base: Path) -> Source | None:
    """One command line as a :class:`Source`; None for a line that starts no server or client
    (``SKIPPED_COMMANDS``)."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError as exc:
        raise SpecError(f"{where}: cannot split the command line ({exc}): {line[:80]}") from None
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]  # environment assignments
    if not words:
        return None
    i, tool = 0, None
    while i < len(words):
        tool = _tool_at(words, i)
        if tool:
            break
        if words[i].rsplit("/", 1)[-1] not in LAUNCHERS and i == 0:
            break
        i += 1  # a launcher and its own arguments
    if tool is None:
        head = " ".join(words[:2])
        for start, why in SKIPPED_COMMANDS.items():
            if head == start or words[0] == start:
                return None
        raise SpecError(
            f"{where}: {words[0]!r} is not a command this reads; allowed: "
            + ", ".join(list(ENGINE_OF)[:3] + list(BENCH_TOOLS))
        )
    args = words[i + len(tool.split()) :]
    if tool == "trtllm-serve" and args[:1] == ["serve"]:
        args = args[1:]  # `trtllm-serve serve MODEL` is the same command
    if tool == "trtllm-serve" and args[:1] == ["disaggregated"]:
        return None
    src = Source(tool, where, engine=ENGINE_OF.get(tool, ""))
    parse_args(src, tool, args, base)
    return src


# settings a flag gives as several words (SGLang's --cuda-graph-bs 1 2 4, argparse nargs="+")
LIST_SETTINGS = ("cuda_graph_batch_sizes",)


def parse_args(src: Source, tool: str, args: list[str], base: Path) -> None:
    """Flags of ``tool`` into ``src``: settings, ignored flags (with the reason), and the
    TensorRT-LLM options file a ``config`` setting names."""
    entry = reads(tool)
    settings = entry.get("settings") or {}
    switches = set(entry.get("switches") or [])
    positional = entry.get("positional")
    k = 0
    while k < len(args):
        word = args[k]
        k += 1
        if not word.startswith("-") or re.match(r"^-\d", word):
            if positional and not src.values(positional):
                src.settings.append(Setting(positional, word, f"{tool} {word}"))
                continue
            raise SpecError(f"{src.where}: {tool}: unexpected argument {word!r}")
        flag, eq, value = word.partition("=")
        if flag not in settings and _ignored_reason(entry, flag) is None:
            raise SpecError(
                f"{src.where}: {tool}: unknown flag {flag}; known: {', '.join(_known(entry))} "
                "(data/launch/flags.yaml reads)"
            )
        val: Any
        if flag in switches:
            val = value if eq else True
        elif eq:
            val = value
        elif k < len(args):
            val, k = args[k], k + 1
        else:
            raise SpecError(f"{src.where}: {tool}: {flag} needs a value")
        while settings.get(flag) in LIST_SETTINGS and k < len(args) and args[k].isdigit():
            val, k = f"{val} {args[k]}", k + 1  # (a flag of several values: nargs="+")
        origin = f"{flag} {val}" if val is not True else flag
        if flag in settings:
            name = settings[flag]
            if name == "config":
                _read_config_file(str(val), base, src)
            src.settings.append(Setting(name, val, origin))
        else:
            src.ignored.append((origin, _ignored_reason(entry, flag) or ""))


def _read_config_file(name: str, base: Path, src: Source) -> None:
    path = Path(name).expanduser()
    if not path.is_absolute():
        path = base / path if (base / path).is_file() else Path.cwd() / path
    if not path.is_file():
        raise SpecError(f"{src.where}: the options file {name} is not found (looked in {base})")
    if path.stat().st_size > MAX_SOURCE_BYTES:
        raise SpecError(f"{path}: larger than {MAX_SOURCE_BYTES} bytes")
    _read_config(_yaml(path.read_text(encoding="utf-8"), str(path)), str(path), src)


def _read_config(data: dict[str, Any], where: str, src: Source, prefix: str = "") -> None:
    """Dotted keys of a TensorRT-LLM LLM-API options mapping into ``src``."""
    entry = reads("trtllm-config")
    settings = entry.get("settings") or {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if dotted in settings:
            origin = f"{Path(where).name}: {dotted}: {value}"
            src.settings.append(Setting(settings[dotted], value, origin))
        elif _ignored_reason(entry, dotted) is not None:
            shown = f"{Path(where).name}: {dotted}: {value}"
            src.ignored.append((shown, _ignored_reason(entry, dotted) or ""))
        elif isinstance(value, dict):
            _read_config(value, where, src, dotted + ".")
        else:
            raise SpecError(
                f"{where}: unknown TensorRT-LLM option {dotted}; known: {', '.join(_known(entry))} "
                "(data/launch/flags.yaml reads)"
            )


def read_dynamo(data: dict[str, Any], where: str, base: Path) -> list[Source]:
    """The workers of a ``DynamoGraphDeployment``: each service's engine (the Dynamo worker
    module its container runs), role (``subComponentType``, else ``--disaggregation-mode`` /
    ``--is-prefill-worker``, else aggregated), replicas and engine flags. Kubernetes details
    (images, secrets, volumes) are kept as ignored settings."""
    spec = data.get("spec")
    services = spec.get("services") if isinstance(spec, dict) else None
    if not isinstance(services, dict) or not services:
        raise SpecError(f"{where}: a DynamoGraphDeployment needs spec.services")
    out = []
    for name, svc in services.items():
        if not isinstance(svc, dict):
            raise SpecError(f"{where}: spec.services.{name} must be a mapping")
        kind = str(svc.get("componentType", "")).lower()
        if kind in ("frontend", "planner", "router") or (not kind and "frontend" in name.lower()):
            continue  # the HTTP frontend and routers run no model
        src = _dynamo_worker(name, svc, where, base)
        out.append(src)
    if not out:
        raise SpecError(f"{where}: no worker service (componentType worker) in spec.services")
    return out


def _dynamo_worker(name: str, svc: dict[str, Any], where: str, base: Path) -> Source:
    here = f"{where}: spec.services.{name}"
    pod = svc.get("extraPodSpec") or {}
    main = pod.get("mainContainer") if isinstance(pod, dict) else None
    if not isinstance(main, dict):
        raise SpecError(f"{here}: no extraPodSpec.mainContainer (command and args of the worker)")
    words = []
    for key in ("command", "args"):
        part = main.get(key) or []
        if not isinstance(part, list):
            raise SpecError(f"{here}.extraPodSpec.mainContainer.{key} must be a list")
        words += [str(w) for w in part]
    if len(words) >= 2 and words[0].rsplit("/", 1)[-1] in ("sh", "bash") and words[1] == "-c":
        words = shlex.split(" ".join(words[2:]), comments=True)
    module = next((m for m in DYNAMO_MODULES if m in words), None)
    if module is None:
        raise SpecError(
            f"{here}: the container runs none of {', '.join(DYNAMO_MODULES)} (python3 -m ...); "
            "a dynamo.trtllm worker's engine options live in a file inside the image"
        )
    src = Source(module, here, engine=ENGINE_OF[module])
    parse_args(src, module, words[words.index(module) + 1 :], base)
    replicas = svc.get("replicas", 1)
    if isinstance(replicas, bool) or not isinstance(replicas, int) or not 1 <= replicas <= 100_000:
        raise SpecError(f"{here}.replicas={replicas!r} must be a positive integer")
    src.replicas = replicas
    role = str(svc.get("subComponentType", "")).lower()
    stated = [str(s.value).lower() for s in src.values("disagg_mode")]
    if src.values("prefill_worker"):
        stated.append("prefill")
    for r in [role, *stated]:
        if r and r not in ("prefill", "decode", "null"):
            raise SpecError(f"{here}: role {r!r}; allowed: prefill, decode")
    roles = {r for r in [role, *stated] if r in ("prefill", "decode")}
    if len(roles) > 1:
        raise SpecError(f"{here}: subComponentType and --disaggregation-mode disagree: {roles}")
    src.role = roles.pop() if roles else ""
    res = svc.get("resources")
    limits = res.get("limits") if isinstance(res, dict) else None
    gpus = limits.get("gpu") if isinstance(limits, dict) else None
    if gpus is not None:
        src.settings.append(Setting("worker_gpus", str(gpus), f"{name}.resources.limits.gpu"))
    for key in svc:
        if key not in (
            "componentType",
            "subComponentType",
            "replicas",
            "resources",
            "extraPodSpec",
        ):
            src.ignored.append(
                (f"{name}.{key}", "Kubernetes deployment detail: no effect on the priced work")
            )
    src.ignored.append(
        (
            f"{name} image {main.get('image', '')}".strip(),
            "container image: the engine is named by the worker module",
        )
    )
    return src
