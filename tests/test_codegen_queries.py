"""Code generators' checking modes read; the mode one option away writes or runs a plugin.

``buf lint``, ``protoc --descriptor_set_out=/dev/null``, ``sqlc compile``, ``mockgen
-source=F`` and ``go mod graph`` read the sources and print. ``--go_out`` runs
``protoc-gen-go``, ``buf generate`` the plugins of ``buf.gen.yaml``, ``mockgen`` in reflect
mode builds and runs a program, ``go vet`` builds the packages; a ``buf.yaml``, ``sqlc.yaml``
or ``.golangci.yml`` that names plugins makes even a check run them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.judged_workspace import committed, decisions

FILES = {"go.mod": "module example.com/app\n\ngo 1.22\n", "cmd/api/main.go": "package main\n",
         "internal/store/store.go": "package store\n", "proto/api.proto": "syntax = \"proto3\";\n",
         "buf.yaml": "version: v2\n", "sqlc.yaml": "version: \"2\"\n",
         ".golangci.yml": "linters:\n  enable: [govet]\n"}


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return committed(tmp_path / "ws", FILES)


@pytest.mark.parametrize("command", [
    "go mod graph | awk '{print $2}' | sort -u | wc -l", "go mod why -m golang.org/x/text",
    "go mod verify",
    "golangci-lint linters",
    "buf lint", "buf lint --error-format=json | jq -r .path | sort | uniq -c",
    "buf breaking --against '.git#branch=main'", "buf format -d --exit-code proto/",
    "buf build -o /dev/null", "buf ls-files", "buf config ls-lint-rules",
    "protoc -I proto --descriptor_set_out=/dev/null proto/api.proto",
    "protoc -I proto --include_imports -o /dev/stdout proto/*.proto | protoc --decode_raw",
    "mockgen -source=internal/store/store.go -package=mocks", "sqlc compile", "sqlc diff",
])
def test_a_check_reads(ws: Path, command: str) -> None:
    assert decisions(ws, command) == ("allow", "allow"), command


@pytest.mark.parametrize(("command", "expected"), [
    ("go vet ./...", "ask"),  # builds the packages (cgo runs the C compiler)
    ("go mod graph -modfile=/tmp/other.mod", "ask"),
    ("go mod tidy", "ask"), ("golangci-lint run --fix", "ask"),
    ("buf format -w", "ask"), ("buf build -o image.binpb", "ask"), ("buf generate", "ask"),
    ("buf push", "ask"), ("buf config init", "ask"), ("buf export . -o out", "ask"),
    ('buf build "$OUT"', "ask"),  # a run-time word may be -o=FILE
    ("protoc -I proto --go_out=gen proto/api.proto", "ask"),  # runs protoc-gen-go
    ("protoc --plugin=protoc-gen-x=./x -I proto --x_out=. proto/api.proto", "ask"),
    ("protoc -I proto -o api.pb proto/api.proto", "ask"),  # writes the descriptor set
    ("protoc -I /home/agent/.ssh -o /dev/stdout id_rsa", "ask"),  # imports read from there
    ("mockgen -source=internal/store/store.go -destination=mocks/store.go", "ask"),
    ("mockgen example.com/app/internal/store Store", "ask"),  # reflect mode: runs a build
    ("wire ./cmd/api", "ask"), ("wire check ./cmd/api", "ask"), ("sqlc generate", "ask"),
    ("golangci-lint run ./...", "ask"),  # builds the packages, as go vet does
])
def test_its_twin_that_writes_or_runs_a_plugin_is_asked(ws: Path, command: str,
                                                         expected: str) -> None:
    assert decisions(ws, command)[0] == expected, command


@pytest.mark.parametrize(("config", "text", "command"), [
    ("buf.yaml", "version: v2\nplugins:\n  - plugin: buf-plugin-x\n", "buf lint"),
    ("sqlc.yaml", "version: \"2\"\nplugins:\n- name: x\n  process:\n    cmd: ./x\n",
     "sqlc compile"),
    (".golangci.yml", "linters-settings:\n  custom:\n    x:\n      path: x.so\n",
     "golangci-lint linters"),
])
def test_a_config_that_names_a_plugin_makes_the_check_run_it(ws: Path, config: str, text: str,
                                                              command: str) -> None:
    (ws / config).write_text(text)
    assert decisions(ws, command)[0] == "ask", command
