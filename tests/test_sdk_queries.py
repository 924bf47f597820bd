"""SDK drivers and compilers asked about themselves read; building, running and loading
project code still asks (``engine/permissions/rules_sdk.py`` and the toolchain rules).

Where the program is on this machine (gcc, ldconfig) a control run shows what the command
does to the folder; the others follow each tool's documented behaviour.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json

ENV = {"HOME": "/home/agent", "PATH": "/usr/bin:/bin"}


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.c").write_text('#include <stdio.h>\nint main(void) '
                                              '{ puts("hi"); return 0; }\n')
    (tmp_path / "src" / "lib.rs").write_text("pub fn f() {}\n")
    (tmp_path / "composer.json").write_text("{}\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


def _decision(workspace: Path, command: str) -> tuple[str, str]:
    verdict = check_shell_json(command, workspace, ENV)
    return str(verdict["decision"]), str(verdict["reason"])


@pytest.mark.parametrize("command", [
    "dotnet --info", "dotnet --list-sdks", "dotnet tool list --global",
    "dotnet new list --language C#", "dotnet nuget locals all --list",
    "rustup toolchain list", "rustup show", "rustup target list --installed",
    "rustup run stable rustc --version",
    "composer show --locked --no-plugins", "composer validate --no-plugins --no-check-all",
    "composer --version",
    "java -version", "java --list-modules | grep '^java\\.'",
    "java -XshowSettings:properties -version 2>&1 | grep java.home", "jps -l",
    "jar --describe-module --file build/app.jar",
    "php -m | sort", "php --ini", "php --ri json", "php -l src/a.php",
    "ldconfig -p | grep libc", "npm run", "go tool dist list | grep '^linux/'",
    "uv python list --only-installed", "uv tool list", "uv cache dir",
    "gcc -MM -MG src/main.c", "gcc -Q -O2 --help=optimizers | grep -c enabled",
    "gcc -S -O2 -o - src/main.c | head", "clang -fsyntax-only -Xclang -ast-dump src/main.c",
    "rustc --print crate-name src/lib.rs",
    "terraform fmt -write=false -list=true -recursive .", "terraform workspace show",
    "kubectl kustomize deploy/k8s", "brotli -c README.md | wc -c", "npm run --json",
    "npm version --json", "npm query '.prod'", "yarn run", "yarn cache dir",
    "pnpm store path", "tsc -b --dry --verbose", "npm config get registry",
    "kubectl create configmap c --from-file=config/app.yaml --dry-run=client -o yaml",
    "kubectl create deployment api --image=x:1 --dry-run=client -o yaml",
    "kubectl apply --dry-run=client -f deploy/k8s/app.yaml -o yaml",
    "kubectl delete -f deploy/k8s/app.yaml --dry-run=client",
    "sysctl vm.max_map_count", "jupyter kernelspec list", "npm sbom --omit dev",
    "pnpm licenses list --prod", "clang -### -c src/main.c -o build/main.o",
    "rustup doc --path std", "pdm lock --check",
    "npm pack --dry-run --ignore-scripts --json", "python3 -m pyclbr src/app.py",
    "gcc -print-prog-name=ld", "gcc -print-file-name=libc.so", "rustup default",
    "go build -n ./src", "pyenv versions --bare", "pyenv version-name", "pyenv which pip",
    "pyenv install --list", "pyenv prefix 3.12.1", "pyenv local", "pyenv global",
    "python3 -m pydoc subprocess.run", "uv tree --frozen",
    "rbenv versions", "jenv versions", "nodenv version-name", "goenv which go",
    "rbenv global", "asdf current", "asdf list nodejs", "asdf plugin list", "asdf where python",
    "jcmd -l", "xcrun --show-sdk-path", "xcrun --find clang", "actionlint -oneline",
    "actionlint -shellcheck= -pyflakes= .github/workflows/ci.yml",
    "actionlint -format '{{range $err := .}}{{$err.Message}}{{end}}'", "checkmake Makefile",
    "helm show chart ./charts/app", "helm dependency list ./charts/app",
])
def test_a_question_an_sdk_answers_about_itself_is_a_read(workspace: Path,
                                                          command: str) -> None:
    assert _decision(workspace, command) == ("allow", "reads only inside the workspace")


@pytest.mark.parametrize(("command", "why"), [
    ("dotnet build", "MSBuild targets are code"),
    ("dotnet list package", "MSBuild targets are code"),  # evaluates (and may restore)
    ("dotnet nuget locals all --clear", "changes the caches"),
    ("rustup update", "installs, removes or changes"),
    ("rustup run stable cargo build", "cargo build runs project code"),
    ("composer show -l --no-plugins", "asks the package repositories"),
    ("composer -d /etc show --no-plugins", "read of /etc outside the workspace"),
    ("java -jar app.jar", "java runs a program"),
    ("java -XshowSettings:all Main", "java runs a program"),
    ("java @options.txt -version", "java runs a program"),  # an argfile: any option
    ("JDK_JAVA_OPTIONS=-javaagent:a.jar java -version", "setting JDK_JAVA_OPTIONS"),
    ("jps build-host", "asks another machine"),
    ("php -i | grep memory_limit", "it reads credentials"),  # phpinfo() prints the env
    ("php src/a.php", "runs the script"),
    ("ldconfig", "rebuilds the linker's cache"),
    ("npm run build", "runs project code"),
    ("gcc -S src/main.c", "gcc compiles"),
    ("clang -fsyntax-only -Xclang -load -Xclang ./plugin.so src/main.c", "clang compiles"),
    ("rustc --print crate-name -o out src/lib.rs", "rustc compiles"),
    ("kubectl kustomize --enable-alpha-plugins --enable-exec deploy/k8s",
     "runs the programs the kustomization names"),
    ("duckdb -c \"SELECT count(*) FROM sqlite_scan('app.db', 'users')\"",
     "an extension duckdb installs on first use"),
    ("terraform fmt", "rewrites files"),
    ("kubectl create configmap c --from-file /etc/passwd --dry-run=client -o yaml",
     "read of /etc/passwd outside the workspace"),
    ("kubectl create deployment api --image=x", "changes the cluster"),
    ("kubectl create --dry-run=client -f /etc/shadow -o yaml",
     "read of /etc/shadow outside the workspace"),  # -f after the verb is still read
    ("kubectl apply --dry-run=client -f https://example.com/app.yaml", "downloads"),
    ("kubectl apply --dry-run=client -k deploy/k8s", "changes the cluster"),
    ("sysctl -w vm.max_map_count=262144", "sets kernel parameters"),
    ("jupyter lab", "runs kernels or servers"),
    ("npm config get //registry.npmjs.org/:_authToken", "it reads credentials"),
    ("yarn config get npmAuthToken", "it reads credentials"),
    ("npm query ':outdated(major)'", "asks the registry"),
    ("tsc -b", "tsc writes its output files"), ("npm run build", "runs project code"),
    ("clang -c src/main.c -o build/main.o", "clang compiles"),
    ("rustup default nightly", "installs, removes or changes"), ("go build ./src", "go build"),
    ("pyenv install 3.12", "installs"),
    ("pyenv local 3.12", ".python-version"),
    ("python3 -m pydoc -k json", "runs a module"),  # imports every package it walks
    ("python3 -m pydoc app", "runs a module"),  # a module of the project: imported
    ("uv tree --frozen --outdated", "asks the package index"),
    ("rustup doc std", "installs, removes or changes"),  # opens a browser
    ("pdm list", "makes the project's environment"), ("pdm lock", "pdm lock installs"),
    ("npm pack --dry-run", "npm pack is not a known subcommand"),  # runs prepack
    ("python3 -m pyclbr /etc/x.py", "read of /etc/x.py outside the workspace"),
    ("rbenv local 3.2.0", ".ruby-version"), ("rbenv install 3.3.0", "installs"),
    ("jenv add /usr/lib/jvm/x", "installs"), ("asdf list all nodejs", "asks the plugin's"),
    ("asdf install nodejs 20", "installs"), ("jcmd 4242 GC.heap_dump h.hprof", "inside a"),
    ("xcrun clang -c src/main.c", "clang compiles"), ("actionlint -shellcheck=./x",
                                                      "names a program to run"),
    ("actionlint -init-config", "writes its configuration"),
    ("helm template x oci://r.example/charts/x", "fetches the chart"),
    ("helm show values bitnami/nginx", "uses the network"),
    ("docker compose --env-file ~/.aws/credentials config",
     "read of /home/agent/.aws/credentials outside the workspace"),
])
def test_building_running_or_loading_code_still_asks(workspace: Path, command: str,
                                                     why: str) -> None:
    decision, reason = _decision(workspace, command)
    assert decision == "ask" and why in reason


def test_gcc_prints_assembly_with_o_dash_and_writes_it_without(workspace: Path) -> None:
    """The control runs: ``-S -o -`` prints and leaves the folder as it was; plain ``-S``
    writes ``main.s`` (which is why it asks)."""
    gcc = shutil.which("gcc")
    assert gcc is not None
    before = sorted(os.listdir(workspace))
    shown = subprocess.run([gcc, "-S", "-O2", "-o", "-", "src/main.c"], cwd=workspace,
                           capture_output=True, text=True, check=True).stdout
    assert "main" in shown and sorted(os.listdir(workspace)) == before
    subprocess.run([gcc, "-S", "src/main.c"], cwd=workspace, check=True)
    assert (workspace / "main.s").is_file()


def test_ldconfig_print_cache_changes_nothing(workspace: Path) -> None:
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    cache = Path("/etc/ld.so.cache")
    stamp = cache.stat().st_mtime_ns if cache.exists() else None
    out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, check=True).stdout
    assert "libc.so" in out
    assert (cache.stat().st_mtime_ns if cache.exists() else None) == stamp


@pytest.mark.parametrize("command", [
    "kubectl get secret db-creds -o jsonpath='{.data.password}' | base64 -d",
    "kubectl get secret db-creds -o yaml", "terraform output -raw db_password",
    "terraform output -json", "mysql --print-defaults", "my_print_defaults client",
    "tr '\\0' '\\n' < /proc/$PPID/environ", "sops -d config/secrets.enc.yaml",
    "ansible-vault view group_vars/prod/vault.yml",
])
def test_a_tool_printing_a_secret_reads_credentials(workspace: Path, command: str) -> None:
    """Asked, and refused under --approval auto (only a person may see a secret printed)."""
    assert _decision(workspace, command)[0] == "ask"
    assert check_shell_json(command, workspace, ENV, approval="auto")["decision"] == "deny"


@pytest.mark.parametrize("command", ["kubectl get secrets", "kubectl get secret x -o name",
                                     "terraform output", "kubectl get pods -o yaml"])
def test_names_and_redacted_values_are_no_secret(workspace: Path, command: str) -> None:
    assert check_shell_json(command, workspace, ENV, approval="auto")["decision"] != "deny"


def test_kubectl_external_diff_is_a_command_line(workspace: Path) -> None:
    command = "KUBECTL_EXTERNAL_DIFF='sh -c \"rm -rf src\"' kubectl diff -f k8s/"
    assert _decision(workspace, command)[0] == "deny"


def test_a_project_requiring_poetry_plugins_runs_them(workspace: Path) -> None:
    """Poetry 2 installs and loads what [tool.poetry.requires-plugins] names, on any
    command; without it poetry show reads the lock file."""
    assert _decision(workspace, "poetry show --tree")[0] == "allow"
    (workspace / "pyproject.toml").write_text(
        "[tool.poetry.requires-plugins]\npoetry-plugin-export = \">=1.8\"\n")
    assert _decision(workspace, "poetry show --tree") == (
        "ask", "poetry show --tree: poetry loads pyproject.toml: it names code to load")


@pytest.mark.parametrize(("command", "secret"), [
    ("bundle config list", True), ("bundle config", True),
    ("bundle config get gems.contribsys.com", True), ("bundle config get path", False),
])
def test_bundle_config_prints_the_sources_logins(workspace: Path, command: str,
                                                 secret: bool) -> None:
    auto = check_shell_json(command, workspace, ENV, approval="auto")["decision"]
    assert (auto == "deny") == secret


@pytest.mark.parametrize("command", [
    "ps eww -o pid,args ax | grep -i token", "ps auxe", "ps e", "ps -u root e",
    "git config --get-regexp 'http\\..*\\.extraheader'", "git config github.token",
    "git config --get-urlmatch http https://github.com", "git config --get-regexp .",
    "git config sendemail.smtpPass",
    "git credential-store --file ~/.git-credentials get <<< $'protocol=https\\nhost=x\\n'",
])
def test_environments_and_secret_settings_printed_are_credentials(workspace: Path,
                                                                  command: str) -> None:
    assert _decision(workspace, command)[0] == "ask"
    assert check_shell_json(command, workspace, ENV, approval="auto")["decision"] == "deny"


@pytest.mark.parametrize("command", [
    "ps aux", "ps -ef", "ps -e -o pid,user", "ps axo pid,user,etime", "ps -o user= -p 1",
    "ps -eo pid,comm --sort=-pcpu", "git config --get-regexp alias", "git config user.email",
    "git config --local --get-regexp extraheader", "git config --get remote.origin.url",
])
def test_process_lists_and_plain_settings_are_reads(workspace: Path, command: str) -> None:
    assert _decision(workspace, command)[0] == "allow"


def test_ps_e_without_a_dash_prints_the_environment(tmp_path: Path) -> None:
    """Control: BSD ``e`` appends each process's environment; ``-e`` only selects all."""
    child = subprocess.Popen(["sleep", "60"], env={**os.environ, "DEMO_TOKEN": "tok-31337"})
    try:
        pid = str(child.pid)
        bsd = subprocess.run(["ps", "eww", "-p", pid], capture_output=True, text=True,
                             check=True).stdout
        unix = subprocess.run(["ps", "-e", "-o", "pid,args"], capture_output=True, text=True,
                              check=True).stdout
    finally:
        child.kill()
        child.wait()
    assert "DEMO_TOKEN=tok-31337" in bsd and "tok-31337" not in unix


def test_git_config_get_regexp_prints_the_users_auth_header(tmp_path: Path) -> None:
    """Control: the header CI stores is read from the user's file, outside the workspace."""
    (tmp_path / ".gitconfig").write_text(
        '[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic c2VjcmV0\n')
    out = subprocess.run(["git", "config", "--get-regexp", r"http\..*\.extraheader"],
                         capture_output=True, text=True, cwd=tmp_path, check=True,
                         env={**os.environ, "HOME": str(tmp_path)}).stdout
    assert "c2VjcmV0" in out


def test_git_apply_check_reports_without_applying(tmp_path: Path) -> None:
    """Control: ``git apply -R --check`` tests the patch and leaves the file as it was."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.txt").write_text("one\n")
    patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-zero\n+one\n"
    subprocess.run(["git", "apply", "-R", "--check"], input=patch, text=True, cwd=tmp_path,
                   check=True)
    assert (tmp_path / "a.txt").read_text() == "one\n"
    for command in ("git apply -R --check p.diff", "git stash show -p | git apply -R --check",
                    "git apply --numstat p.diff"):
        assert _decision(tmp_path, command)[0] == "allow"
    for command in ("git apply -R p.diff", "git apply --stat --apply p.diff"):
        assert _decision(tmp_path, command)[0] == "ask"
