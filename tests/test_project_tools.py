"""The JavaScript tools a project installs: ``node_modules/.bin/tsc``, ``pnpm exec``,
``npx --no-install``, and the rules of eslint, prettier and esbuild, judged by what they load.

A tool's own package is trusted like the tool on the PATH; a configuration written in
JavaScript, or a settings file naming plugins, is code that runs with it: the command asks.
The files are real files in a real workspace (the classifier reads them as it judges).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV, make_workspace


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = make_workspace(tmp_path)
    for name in ("src/main.ts", "web/src/app.ts", "package.json"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("{}\n" if name.endswith(".json") else "export {}\n")
    return root


def decision(command: str, ws: Path) -> str:
    return str(check_shell_json(command, ws, ENV)["decision"])


def reasons(command: str, ws: Path) -> str:
    return str(check_shell_json(command, ws, ENV)["reason"])


@pytest.mark.parametrize("command", [
    "node_modules/.bin/tsc --noEmit", "./node_modules/.bin/tsc --version",
    "web/node_modules/.bin/tsc --noEmit -p web", "node_modules/.bin/esbuild src/main.ts --bundle",
    "npx --no-install tsc --noEmit", "npm exec --no -- tsc --noEmit",
    "pnpm exec prettier --check src", "git ls-files -z '*.ts' | xargs -0 "
    "./node_modules/.bin/prettier --check",
])
def test_the_projects_own_install_of_a_modelled_tool_is_that_tool(command: str,
                                                                   ws: Path) -> None:
    _installed(ws, "tsc", "esbuild", "prettier")
    assert decision(command, ws) == "allow"


def _installed(ws: Path, *tools: str) -> None:
    """The project's own install: ``node_modules/.bin`` holds the tools."""
    (ws / "node_modules" / ".bin").mkdir(parents=True, exist_ok=True)
    for tool in tools:
        (ws / "node_modules" / ".bin" / tool).write_text("#!/usr/bin/env node\n")



@pytest.mark.parametrize("command", [
    "../node_modules/.bin/tsc --noEmit",  # above the working directory: nobody's install
    "/tmp/x/node_modules/.bin/tsc --noEmit",
    "node_modules/.bin/cat src/main.ts",  # not a tool whose package is modelled
    "node_modules/.bin/webpack --version",
    "pnpm exec cowsay", "npx --no-install cowsay",
    "npx tsc --noEmit",  # may download the package
    "node_modules/.bin/tsc",  # emits
])
def test_other_programs_by_path_or_runner_ask(command: str, ws: Path) -> None:
    assert decision(command, ws) != "allow"


def test_a_runner_still_judges_the_command_it_runs(ws: Path) -> None:
    assert decision("pnpm exec rm -rf src", ws) == "deny"
    assert decision("npx --no-install eslint src -o README.md", ws) == "deny"


@pytest.mark.parametrize("config, text", [
    ("eslint.config.js", "export default [];\n"),
    ("eslint.config.mjs", "export default [];\n"),
    (".eslintrc.cjs", "module.exports = {};\n"),
    (".eslintrc.json", '{"plugins": ["local"]}\n'),
    (".eslintrc.yml", "extends: ./base.js\n"),
])
def test_eslint_asks_when_its_config_is_code(config: str, text: str, ws: Path) -> None:
    assert decision("eslint src", ws) == "allow"
    (ws / config).write_text(text)
    assert decision("eslint src", ws) == "ask"
    assert config in reasons("eslint src", ws)
    assert decision("./node_modules/.bin/eslint --print-config src/main.ts", ws) == "ask"


def test_eslint_looks_up_to_the_workspace_top(ws: Path) -> None:
    (ws / "eslint.config.js").write_text("export default [];\n")
    assert decision("cd web && eslint src", ws) == "ask"
    assert decision("cd web && eslint --no-config-lookup src", ws) == "allow"


def test_a_settings_file_without_plugins_is_data(ws: Path) -> None:
    (ws / ".eslintrc.json").write_text('{"rules": {"semi": "error"}}\n')
    (ws / ".prettierrc").write_text('{"semi": false}\n')
    assert decision("eslint --max-warnings=0 src", ws) == "allow"
    assert decision("prettier --check src", ws) == "allow"


@pytest.mark.parametrize("command, expected", [
    ("eslint --fix src", "ask"), ("eslint --cache src", "ask"),
    ("eslint src -o README.md", "deny"), ("eslint -f ./fmt.js src", "ask"),
    ("eslint -f unix src", "allow"), ("eslint --rulesdir rules src", "ask"),
    ("eslint --plugin x src", "ask"), ("eslint --frobnicate src", "ask"),
    ("eslint -c other.config.js src", "ask"), ("eslint --inspect-config", "ask"),
    ("eslint -c rules.json src", "allow"), ("eslint -c plugged.json src", "ask"),
])
def test_eslint_options(command: str, expected: str, ws: Path) -> None:
    (ws / "other.config.js").write_text("export default [];\n")
    (ws / "rules.json").write_text('{"rules": {}}\n')
    (ws / "plugged.json").write_text('{"plugins": ["x"]}\n')
    assert decision(command, ws) == expected


@pytest.mark.parametrize("config, text", [
    ("prettier.config.js", "export default {};\n"), (".prettierrc.mjs", "export default {};\n"),
    (".prettierrc", '{"plugins": ["./plugin.js"]}\n'),
    (".prettierrc.yaml", "plugins:\n  - prettier-plugin-x\n"),
    ("package.json", '{"prettier": {"plugins": ["./p.js"]}}\n'),
])
def test_prettier_asks_when_its_config_is_code(config: str, text: str, ws: Path) -> None:
    assert decision("prettier --check 'src/**/*.ts'", ws) == "allow"
    (ws / config).write_text(text)
    assert decision("prettier --check 'src/**/*.ts'", ws) == "ask"
    assert decision("prettier --no-config --check 'src/**/*.ts'", ws) == "allow"


def test_a_shared_prettier_config_named_by_package_is_installed_code(ws: Path) -> None:
    (ws / "package.json").write_text('{"prettier": "@acme/prettier-config",\n'
                                     ' "devDependencies": {"prettier": "^3.3.0"}}\n')
    assert decision("prettier --list-different src", ws) == "allow"


@pytest.mark.parametrize("command, expected", [
    ("prettier src/main.ts", "allow"), ("prettier --write src", "ask"),
    ("prettier --cache --check src", "ask"), ("prettier --plugin=./x.js --check src", "ask"),
    ("prettier --parser ./parse.js src/main.ts", "ask"), ("prettier --frobnicate src", "ask"),
    ("prettier src/main.ts > src/main.ts", "deny"),
])
def test_prettier_options(command: str, expected: str, ws: Path) -> None:
    assert decision(command, ws) == expected


def test_a_config_the_command_line_writes_first_is_never_run_unseen(ws: Path) -> None:
    assert decision("echo 'export default []' > eslint.config.js && eslint src", ws) != "allow"
    assert decision("printf '{}' > prettier.config.js; prettier --check src", ws) != "allow"


@pytest.mark.parametrize("command, expected", [
    ("esbuild src/main.ts --bundle --format=esm --log-level=warning", "allow"),
    ("esbuild src/main.ts --bundle --loader:.svg=text --define:DEBUG=false", "allow"),
    ("esbuild src/main.ts --bundle --outfile=dist/main.js", "ask"),
    ("esbuild src/main.ts --bundle --metafile=meta.json --outdir=dist", "ask"),
    ("esbuild src/main.ts --bundle --outfile=src/main.ts --allow-overwrite", "deny"),
    ("esbuild src/main.ts --serve=8000", "ask"), ("esbuild src/main.ts --watch", "ask"),
    ("esbuild src/main.ts --frobnicate", "ask"),
])
def test_esbuild(command: str, expected: str, ws: Path) -> None:
    assert decision(command, ws) == expected


@pytest.mark.parametrize("command, expected", [
    ("node_modules/.bin/vite --version", "allow"), ("npx --no-install jest --version", "allow"),
    ("vitest -v", "allow"), ("playwright --help", "allow"),
    ("node_modules/.bin/vite build", "ask"), ("jest --listTests", "ask"),
    ("vitest run", "ask"), ("node_modules/.bin/playwright test --list", "ask"),
])
def test_runners_print_their_version_and_otherwise_load_the_project(command: str,
                                                                     expected: str,
                                                                     ws: Path) -> None:
    _installed(ws, "jest")
    assert decision(command, ws) == expected


def test_a_tool_linked_out_of_the_workspace_is_not_the_projects_install(ws: Path) -> None:
    bin_dir = ws / "node_modules" / ".bin"
    (ws / "node_modules" / "typescript" / "bin").mkdir(parents=True)
    (ws / "node_modules" / "typescript" / "bin" / "tsc").write_text("#!/usr/bin/env node\n")
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "tsc").symlink_to("../typescript/bin/tsc")
    (bin_dir / "eslint").symlink_to("/usr/bin/rm")  # planted by an earlier command
    assert decision("node_modules/.bin/tsc --noEmit", ws) == "allow"
    assert decision("node_modules/.bin/eslint --version", ws) == "ask"
    assert "program given by path" in reasons("node_modules/.bin/eslint -rf src", ws)
    (ws / "tsc").symlink_to("/usr/bin/rm")  # a bare name is looked up on PATH, not here
    assert decision("tsc --noEmit", ws) == "allow"
