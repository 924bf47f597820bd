"""Permissions: judging paths, shell commands and tool calls before anything runs.

``paths`` confines paths to the workspace whitelist, ``shell`` parses and classifies shell
commands, ``policy`` turns a tool call into a ``Decision`` using the built-in defaults and the
policy file's rules. Everything here is pure: nothing is executed, nothing is written.
"""

from engine.permissions.paths import PathVerdict, Root, check_path_json, judge_path
from engine.permissions.shell import ShellVerdict, check_shell_json, classify_command

__all__ = [
    "PathVerdict",
    "Root",
    "ShellVerdict",
    "check_path_json",
    "check_shell_json",
    "classify_command",
    "judge_path",
]
