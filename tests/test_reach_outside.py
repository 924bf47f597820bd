"""Reads of the user's secrets and reach to another server by roads a query mode hides.

jq loads a module's JSON as data from its search path (``-L DIR``, ``{search: DIR}``,
``~/.jq``), so ``import "config" as $c`` prints ``~/.docker/config.json``; git prints a
token kept in the key of ``url.<base>.insteadOf``; kubectl reads a template file, fetches
``-f URL`` and writes ``kustomize -o``; docker reaches the daemon ``DOCKER_HOST`` or a
context names. Where the program is here, the control run shows the secret printed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.judged_workspace import committed, decisions

SECRET = "FAKE_TOKEN_4711"


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    """A home folder outside the workspace holding the user's secrets."""
    home = tmp_path / "home"
    (home / ".docker").mkdir(parents=True)
    (home / ".docker" / "config.json").write_text(json.dumps({"auths": {"x": {"auth": SECRET}}}))
    (home / ".gitconfig").write_text(
        f'[url "https://{SECRET}@github.com/"]\n\tinsteadOf = https://github.com/\n')
    return home


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return committed(tmp_path / "ws", {"a.txt": "work\n", "k/kustomization.yaml":
                                       "configMapGenerator:\n- name: x\n  literals: [A=1]\n",
                                       "kr/kustomization.yaml":
                                       "resources:\n- https://example.com/remote.yaml\n"})


def _printed(ws: Path, home: Path, command: str) -> str:
    """The control: what bash running ``command`` prints, with ``home`` as HOME."""
    return subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, text=True,
                          env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
                          check=False).stdout


@pytest.mark.parametrize("command", [
    "jq -n -L ~/.docker 'import \"config\" as $c; $c'",
    "jq -n 'import \"config\" as $c {search: \"~/.docker\"}; $c'",
    "git config --get-regexp '^url\\.'", "git var -l",
])
def test_a_query_that_prints_the_users_secret(ws: Path, home: Path, command: str) -> None:
    program = command.split()[0]
    if shutil.which(program) is not None and "search" not in command:
        assert SECRET in _printed(ws, home, command), command  # the control
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    assert decisions(ws, command, env)[0] != "allow", command


@pytest.mark.parametrize(("command", "decided"), [
    ("kubectl -s http://127.0.0.1:18080 get pods", "ask"),  # another server than the cluster
    ("kubectl get -f http://127.0.0.1:18080/x.yaml", "ask"),  # fetched
    ("kubectl kustomize ./kr", "ask"),  # its resources are fetched
    ("kubectl kustomize ./k -o out.yaml", "ask"), ("kubectl kustomize ./k -o a.txt", "deny"),
    ("kubectl kustomize ./k --output=/etc/x", "deny"),
    ("kubectl get pods -o go-template-file=/home/agent/.netrc", "ask"),
    ("kubectl get pods -o jsonpath-file=/home/agent/.netrc", "ask"),
    ("kubectl get pods -o go-template-file --template=/home/agent/.netrc", "ask"),
    ("kubectl get pods -o go-template --template=/etc/passwd", "allow"),  # the text itself
    ("DOCKER_HOST=tcp://127.0.0.1:18080 docker ps", "ask"), ("docker --context=remote ps", "ask"),
    ("DOCKER_CONTEXT=remote docker ps", "ask"),
    # the configured cluster and daemon, and a local render: reads
    ("kubectl get pods -o yaml", "allow"), ("kubectl kustomize ./k", "allow"),
    ("docker ps", "allow"), ("jq . k/kustomization.yaml", "allow"), ("git var GIT_EDITOR", "allow"),
])
def test_another_server_a_fetch_or_a_file_outside(ws: Path, command: str, decided: str) -> None:
    assert decisions(ws, command)[0] == decided, command
