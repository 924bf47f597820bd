"""Inline code that evaluates text it decodes first hides what runs from the preview by
construction: refused, in every mode. The same decoders printing, and evaluation of shown
text, stay what any interpreter one-liner is (asked). The control runs each refused payload
with the real interpreter in a throwaway folder and sees it act."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV

_PY_RM = base64.b64encode(b"import os; os.remove('a.txt')").decode()
_PERL_RM = b"unlink 'a.txt'".hex()
_NODE_RM = base64.b64encode(b"require('fs').unlinkSync('a.txt')").decode()
REFUSED = [
    ("python3", f"python3 -c \"exec(__import__('base64').b64decode('{_PY_RM}'))\""),
    ("python3", f"python3 -c \"import base64; eval(compile(base64.b64decode('{_PY_RM}'), "
                "'x', 'exec'))\""),
    ("perl", f"perl -e 'eval pack \"H*\", \"{_PERL_RM}\"'"),
    ("node", f"node -e \"eval(Buffer.from('{_NODE_RM}', 'base64').toString())\""),
    ("python3", "python3 -c \"exec(bytes.fromhex('" + b"import os; os.remove('a.txt')".hex()
     + "').decode())\""),
    ("python3", "python3 -c \"exec(')\\'txt.a\\'(evomer.so ;so tropmi'[::-1])\""),
]


def _decision(ws: Path, command: str, approval: str = "policy") -> str:
    return str(check_shell_json(command, ws, ENV, approval=approval)["decision"])


@pytest.mark.parametrize(("program", "command"), REFUSED)
def test_code_decoded_then_evaluated_is_refused(tmp_path: Path, program: str,
                                                command: str) -> None:
    (tmp_path / "a.txt").write_text("work\n")
    assert _decision(tmp_path, command) == "deny", command
    assert _decision(tmp_path, command, "auto") == "deny", command
    if shutil.which(program) is None:  # node comes from the dev extra's wheel
        pytest.fail(f"{program} is not on PATH: scripts/test installs it")
    subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, timeout=60,
                   check=False)
    assert not (tmp_path / "a.txt").exists(), command  # the control: the payload ran


@pytest.mark.parametrize("command", [
    "python3 -c 'import base64; print(base64.b64decode(\"aGk=\").decode())'",
    "python3 -c 'exec(\"print(1)\")'", "python3 -c 'print(eval(\"1 + 2\"))'",
    "node -e 'console.log([1, 2].reverse())'", "perl -e 'print pack(\"A3\", \"abc\")'",
])
def test_decoding_or_evaluating_shown_text_is_an_ordinary_one_liner(tmp_path: Path,
                                                                    command: str) -> None:
    assert _decision(tmp_path, command) == "ask", command
