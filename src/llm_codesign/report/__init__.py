"""Reports from result objects: tables and JSON (render), exports, launch settings (and reading a
deployment back: ``read_deployment``), plots, and
the self-contained HTML report (html); ``check_output_path`` (from ``outputs``) says
why an output path cannot be written."""

from ..outputs import check_output_path, write_text
from .deploy_map import Deployment, read_deployment
from .export import frontier_json
from .html import write_report
from .launch import launch_settings
from .launch_files import launch_files, write_launch_dir
from .plots import output_paths, plot_frontiers
from .render import SCHEMA_VERSION, clean, console, fmt, table, to_json, trust_text

__all__ = [
    "SCHEMA_VERSION",
    "Deployment",
    "check_output_path",
    "clean",
    "console",
    "fmt",
    "frontier_json",
    "launch_files",
    "launch_settings",
    "output_paths",
    "plot_frontiers",
    "read_deployment",
    "table",
    "to_json",
    "trust_text",
    "write_launch_dir",
    "write_report",
    "write_text",
]
