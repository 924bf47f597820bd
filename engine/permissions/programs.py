"""Program tables: which programs wrap others, which are shells, which are dangerous by name.

Data only; the rules that read these tables are in ``rules.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.tooling.spec import Risk


@dataclass(frozen=True, slots=True)
class Wrapper:
    """A program that runs another command given after its own options."""

    short_values: str = ""
    """Short options that take a value (``timeout -s SIG``)."""
    long_values: frozenset[str] = frozenset()
    positionals: int = 0
    """Positionals before the command (``timeout DURATION``, ``chroot NEWROOT``)."""
    risk: Risk = "read"
    why: str = ""
    no_command: frozenset[str] = frozenset()
    """Options after which it runs no command (``command -v``, ``sudo -l``)."""
    script_options: frozenset[str] = frozenset()
    """Options whose value is shell code (``env -S``, ``flock -c``)."""
    later_options: frozenset[str] = frozenset()
    """Options that schedule the command to run later (``systemd-run --on-calendar``)."""
    write_options: frozenset[str] = frozenset()
    chdir_options: frozenset[str] = frozenset()
    alone: str | None = None
    """``shell`` when, given no command, it starts a shell."""
    shell_options: str = ""
    """Short options after which a shell runs the command's words as code (``sudo -s``)."""
    by_shell: bool = False
    """A shell always runs the command's words as code (``sg GROUP 'rm a.txt'``)."""
    keeps_env: bool = False
    """Runs the command with the environment it was given (``nice``): a shell it starts holds
    what was exported. Unset (``sudo`` resets it), a new shell's variables are only known at
    run time."""
    env_letters: str = ""
    """Short options that empty the environment even so (``exec -c``)."""
    env_options: frozenset[str] = frozenset()
    """Options whose value sets a variable for the command (``strace -E NAME=VALUE``)."""
    opens_positional: bool = False
    """Its positional is a file it opens, creating it when missing (``flock FILE``)."""


def _fs(*names: str) -> frozenset[str]:
    return frozenset(names)


_PRIV = "with other privileges"
WRAPPERS: dict[str, Wrapper] = {
    "env": Wrapper("uCS", _fs("--unset", "--chdir", "--split-string"),
                   script_options=_fs("-S", "--split-string"),
                   chdir_options=_fs("-C", "--chdir"),
                   keeps_env=True),
    "command": Wrapper(no_command=_fs("-v", "-V"), keeps_env=True),
    "builtin": Wrapper(keeps_env=True),
    "exec": Wrapper("a", keeps_env=True, env_letters="c"),
    "nice": Wrapper("n", _fs("--adjustment"), keeps_env=True),
    "nohup": Wrapper(keeps_env=True),
    "coproc": Wrapper(keeps_env=True),
    "timeout": Wrapper("sk", _fs("--signal", "--kill-after"), positionals=1, keeps_env=True),
    "stdbuf": Wrapper("ioe", _fs("--input", "--output", "--error"), keeps_env=True),
    "time": Wrapper("fo", _fs("--format", "--output"), write_options=_fs("-o", "--output"),
                    keeps_env=True),
    "sudo": Wrapper("ugCDhprtTU", _fs("--user", "--group", "--close-from", "--chdir", "--host",
                                      "--prompt", "--role", "--type", "--command-timeout",
                                      "--other-user"),
                    risk="exec", why=_PRIV, alone="shell", shell_options="si",
                    chdir_options=_fs("-D", "--chdir"),
                    no_command=_fs("-l", "--list", "-v", "--validate", "-k", "-K",
                                   "--reset-timestamp", "--remove-timestamp", "-e", "--edit",
                                   "-V", "--version", "-h", "--help")),
    "doas": Wrapper("uC", risk="exec", why=_PRIV, alone="shell"),
    "pkexec": Wrapper("", _fs("--user"), risk="exec", why=_PRIV, alone="shell"),
    "chroot": Wrapper("", _fs("--userspec", "--groups"), positionals=1, risk="exec",
                      why="in another root directory", alone="shell"),
    "ionice": Wrapper("cnP", _fs("--class", "--classdata", "--pgid", "--uid"),
                      no_command=_fs("-p", "--pid", "-u", "--uid", "-P", "--pgid"),
                      keeps_env=True),
    "setsid": Wrapper(keeps_env=True),
    "taskset": Wrapper(positionals=1, no_command=_fs("-p", "--pid"), keeps_env=True),
    "chrt": Wrapper(positionals=1, no_command=_fs("-p", "--pid", "-m", "--max"), keeps_env=True),
    "flock": Wrapper("wEc", _fs("--timeout", "--conflict-exit-code", "--command"),
                     positionals=1, opens_positional=True,
                     script_options=_fs("-c", "--command"), keeps_env=True),
    "unbuffer": Wrapper(keeps_env=True),
    "xvfb-run": Wrapper("nsfe", _fs("--server-num", "--server-args", "--auth-file",
                                    "--error-file")),
    "caffeinate": Wrapper("tw", keeps_env=True),
    "proxychains": Wrapper("f", risk="network", why="through a proxy"),
    "proxychains4": Wrapper("f", risk="network", why="through a proxy"),
    "torsocks": Wrapper("uapP", risk="network", why="through Tor"),
    "strace": Wrapper("eoOpPsSuEbXaI", _fs("--output", "--attach", "--trace", "--signal",
                                            "--env"),
                      write_options=_fs("-o", "--output"), no_command=_fs("-p", "--attach"),
                      keeps_env=True, env_options=_fs("-E", "--env")),
    "ltrace": Wrapper("aADeFlnopsuwx", _fs("--output", "--library", "--config"),
                      write_options=_fs("-o", "--output"),
                      no_command=_fs("-p"), keeps_env=True),
    "valgrind": Wrapper(risk="exec", why="under a debugger",
                        write_options=_fs("--log-file", "--xml-file"),
                        no_command=_fs("--version", "--help", "-h", "--help-debug")),
    "sshpass": Wrapper("pfdP", risk="network", why="with a stored password"),
    "setarch": Wrapper(positionals=1, alone="shell", keeps_env=True),
    "linux32": Wrapper(keeps_env=True), "linux64": Wrapper(keeps_env=True),
    "unshare": Wrapper("", _fs("--mount-proc", "--map-user", "--map-group", "--setgroups",
                                "--propagation", "--root", "--wd"), risk="exec",
                       why="in new namespaces", alone="shell"),
    "nsenter": Wrapper("tSGrw", _fs("--target", "--setuid", "--setgid", "--root", "--wd"),
                       risk="exec", why="in another process's namespaces", alone="shell"),
    "firejail": Wrapper(risk="exec", why="in a sandbox", alone="shell"),
    "systemd-run": Wrapper("pEMu", _fs("--unit", "--property", "--setenv", "--machine",
                                       "--uid", "--gid", "--working-directory", "--slice",
                                       "--description", "--on-calendar", "--on-active",
                                       "--on-boot", "--on-unit-active"),
                           risk="exec", why="as a system service",
                           env_options=_fs("-E", "--setenv"),
                           later_options=_fs("--on-calendar", "--on-active", "--on-boot",
                                             "--on-startup", "--on-unit-active",
                                             "--on-unit-inactive", "--on-clock-change",
                                             "--on-timezone-change", "--path-property",
                                             "--timer-property")),
    "chronic": Wrapper(keeps_env=True), "catchsegv": Wrapper(keeps_env=True),
    "dbus-run-session": Wrapper(), "prlimit": Wrapper("p", _fs("--pid"), keeps_env=True),
    "entr": Wrapper(risk="exec", why="on file changes"),
    "sg": Wrapper(positionals=1, risk="exec", why=_PRIV, script_options=_fs("-c"),
                  by_shell=True),
    "fakeroot": Wrapper(keeps_env=True),
    "proot": Wrapper("rbw", risk="exec", why="in another root"),
}

ENV_KEEPING_OPTIONS = frozenset({"-C", "--chdir", "-S", "--split-string", "-v", "--debug"})
"""``env`` options that leave the environment as it was; any other (``-i``, ``-u NAME``,
``-``) drops variables a new shell would otherwise hold."""
STARTS_WITH_ENV = frozenset({"xargs", "find", "watch", "parallel", "script", "make", "awk",
                             "gawk", "mawk", "sed", "perl", "python", "python3", "git"})
"""Programs (besides shells and wrappers that keep it) that start the commands they run with
the environment they were given: a new shell they start holds what was exported."""

PRINTS_CREDENTIALS: dict[str, frozenset[tuple[str, ...]]] = {
    "gh": frozenset({("auth", "token"), ("auth", "status", "-t"),
                     ("auth", "status", "--show-token")}),
    "gcloud": frozenset({("auth", "print-access-token"), ("auth", "print-identity-token"),
                         ("auth", "application-default", "print-access-token")}),
    "az": frozenset({("account", "get-access-token")}),
    "aws": frozenset({("configure", "get"), ("configure", "export-credentials"),
                      ("sts", "get-session-token"), ("ecr", "get-login-password"),
                      ("secretsmanager", "get-secret-value")}),
    "git": frozenset({("credential", "fill"), ("credential-store", "get"),
                      ("credential-cache", "get")}),
    "php": frozenset({("-i",), ("--info",)}),  # phpinfo(): the environment, whole
    "rails": frozenset({("credentials:show",), ("credentials:edit",)}),  # decrypted
    "kubectl": frozenset({("config", "view", "--raw"), ("create", "token")}),
    "vault": frozenset({("read",), ("kv", "get")}),
    "op": frozenset({("read",), ("item", "get")}),
    "pass": frozenset({("show",)}),
    "security": frozenset({("find-generic-password", "-w"),
                           ("find-internet-password", "-w")}),
    "heroku": frozenset({("auth:token",)}),
    "terraform": frozenset({("output", "-raw"), ("output", "-json")}),  # sensitive values
    "mysql": frozenset({("--print-defaults",)}),  # ~/.my.cnf's password among them
    "my_print_defaults": frozenset({()}),
    "mvn": frozenset({("help:effective-settings", "-DshowPasswords=true")}),  # ~/.m2 logins
    "dotnet": frozenset({("user-secrets", "list")}),
    "sops": frozenset({("-d",), ("--decrypt",)}),
    "ansible-vault": frozenset({("view",), ("decrypt",)}),
    "keyring": frozenset({("get",)}),  # a stored password or token, printed
    "secret-tool": frozenset({("lookup",)}),
}
"""Commands whose output is a credential (a token, a password, a key): the words that must
follow the program, in order, among its arguments."""
TRACERS = frozenset({"strace", "ltrace"})
"""Wrappers that only watch the command they run (its inner command is judged); alone, with
``-p PID``, they attach to a running process."""

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh",
                    "rbash", "yash", "posh", "busybox"})
INTERPRETERS = frozenset({"python", "pypy", "node", "nodejs", "perl", "ruby", "php", "lua",
                          "luajit", "Rscript", "julia", "tclsh", "wish", "osascript", "pwsh",
                          "powershell", "deno", "irb", "jshell", "groovy", "scala", "expect",
                          "guile", "racket", "sbcl", "ghci", "runghc", "elixir", "erl"})
INLINE_CODE = {
    "python": "cm", "pypy": "cm", "node": "epr", "nodejs": "epr", "perl": "eEmMI",
    "ruby": "erI", "php": "rBEdc", "lua": "el", "luajit": "el", "Rscript": "e",
    "julia": "e", "deno": "", "irb": "", "expect": "c", "pwsh": "c", "powershell": "c",
}
"""Short options taking a value, per interpreter; ``-c``/``-e``/``-r``-like ones are code."""
CODE_OPTIONS = frozenset({"-c", "-e", "-E", "-r", "-p", "--eval", "--print", "--command",
                          "-Command", "-command"})

EDITORS = frozenset({"vi", "vim", "nvim", "view", "vimdiff", "gvim", "nano", "pico", "emacs",
                     "emacsclient", "ed", "ex", "red", "micro", "joe", "jed", "mcedit", "code",
                     "subl", "gedit", "kate", "less", "more", "most", "pg", "zless", "zmore",
                     "lessfile", "lesspipe", "sudoedit", "visudo", "vipw", "vigr", "crontab-e",
                     "mc", "ranger", "nnn", "tmux", "screen", "script"})
"""Editors, pagers and file managers: they can write files and run commands."""

DESTRUCTIVE_NAMES = frozenset({
    "mkfs", "mkfs.ext2", "mkfs.ext3", "mkfs.ext4", "mkfs.xfs", "mkfs.btrfs", "mkfs.vfat",
    "mkfs.fat", "mkfs.ntfs", "mke2fs", "mkswap", "mkdosfs", "fdisk", "sfdisk", "gdisk", "cfdisk",
    "sgdisk", "parted", "wipefs", "shred", "shutdown", "reboot", "halt", "poweroff", "telinit",
    "blkdiscard", "hdparm", "cryptsetup", "lvremove", "vgremove", "pvremove", "zpool", "userdel",
    "groupdel", "deluser", "delgroup", "srm", "wipe", "kexec", "swapoff", "dropdb",
    "dropuser", "droplang",
})

NETWORK_NAMES = frozenset({
    "curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "socat", "telnet",
    "ftp", "lftp", "tftp", "http", "https", "xh", "httpie", "ping", "ping6", "dig", "nslookup",
    "host", "whois", "traceroute", "tracepath", "mtr", "gh", "aws", "gcloud", "az", "gsutil",
    "s3cmd", "rclone", "aria2c", "axel", "nmap", "openssl", "ssh-copy-id", "mosh", "websocat",
    "grpcurl", "ngrok", "sshpass",
})

PLAIN_READ = frozenset({
    "echo", "printf", "true", "false", ":", "test", "[", "pwd", "whoami", "id", "uname", "seq",
    "expr", "sleep", "basename", "dirname", "yes", "tr", "printenv", "which", "type", "whereis",
    "help", "locale", "nproc", "arch", "uptime", "ps", "free", "df", "clear", "tput", "jobs",
    "wait", "cal", "factor", "getconf", "tty", "set", "shopt", "unset", "read", "let", "return",
    "exit", "break", "continue", "shift", "local", "declare", "typeset", "readonly", "times",
    "pgrep", "lscpu", "lsblk", "lsusb", "lspci", "who", "w", "groups", "logname", "realpath",
    "readlink", "dirs", "hash", "umask", "ulimit", "history", "unalias", "getopts", "mapfile",
    "readarray", "export", "env", "nice", "nohup", "builtin", "exec", "time", "setsid",
    "timeout", "stdbuf", "ionice", "taskset", "chrt", "unbuffer", "caffeinate", "man", "info",
    "apropos", "whatis", "tldr", "sync", "vmstat", "iostat", "mpstat", "sar",
    "pidof", "lsof", "ss", "netstat", "numfmt", "disown", "fg", "caller",
    "bg", "compgen", "complete", "enable", "fc", "bind", "col", "colrm", "pkg-config",
    "pkgconf", "sw_vers",
})
"""Programs that neither read named files nor change anything."""
READS_PATH_ARGUMENTS = frozenset({
    "ps", "free", "uptime", "lscpu", "lsblk", "lsusb", "lspci", "who", "w", "groups",
    "logname", "dirs", "sync", "vmstat", "iostat", "mpstat", "sar", "lsof", "ss", "netstat",
    "cowsay", "cowthink", "fortune", "neofetch", "fastfetch", "figlet", "toilet", "lolcat",
    "info", "tldr", "pkg-config", "pkgconf",
})
"""Programs whose options can name a file they read (``ss -F FILE``, ``who FILE``): any
argument that looks like a path is judged as a read."""
ID_OPTIONS: dict[str, frozenset[str]] = {
    "ps": frozenset({"-p", "--pid", "--ppid", "-q", "--quick-pid", "-u", "-U", "--user",
                     "--User", "-g", "-G", "--group", "--Group", "-t", "--tty", "-s", "--sid",
                     "-C", "-o", "-O", "--format", "--sort", "-k"}),
    "lsof": frozenset({"-p", "-u", "-g", "-c", "-d"}),
}
"""Options of ``READS_PATH_ARGUMENTS`` programs whose value names a process, user or column,
never a file: ``ps -p "$pid"`` reads nothing whatever the pid file held."""

SUBCOMMAND_PROGRAMS = frozenset({
    "git", "npm", "yarn", "pnpm", "bun", "pip", "pipx", "uv", "cargo", "go", "docker", "podman",
    "kubectl", "helm", "apt", "apt-get", "brew", "poetry", "pdm", "gh", "conda", "mamba", "gem",
    "bundle", "dotnet", "make", "terraform", "systemctl", "npx", "deno", "just", "tox", "nox",
    "hatch", "rye", "mvn", "gradle", "composer", "swift", "zig", "rustup", "dnf", "yum", "apk",
})
"""Programs whose capability key includes the first positional (``git commit``)."""

DANGEROUS_VARS = frozenset({
    "DOTNET_STARTUP_HOOKS", "CORECLR_PROFILER_PATH",
    "PATH", "BASH_ENV", "ENV", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "PS4", "IFS", "HOME",
    "XDG_CONFIG_HOME", "LESSOPEN", "LESSCLOSE", "PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME",
    "PYTHONINSPECT", "NODE_OPTIONS", "NODE_PATH", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT",
    "RUBYLIB", "SSH_ASKPASS", "SUDO_ASKPASS", "BROWSER", "SHELL", "RIPGREP_CONFIG_PATH",
    "MAKEFLAGS", "MAKEFILES", "GNUMAKEFLAGS",
    "COMPILER_PATH", "GCC_EXEC_PREFIX", "CDPATH", "GLOBIGNORE",
    "EXECIGNORE",
    "TMOUT", "LD_PRELOAD", "FPATH", "ZDOTDIR", "OPENSSL_CONF", "OPENSSL_ENGINES",
    "OPENSSL_MODULES",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "GCONV_PATH", "MANOPT",
    "GREP_OPTIONS", "TERMINAL",
    "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "NPM_CONFIG_REGISTRY", "GEM_HOME",
    "ELIXIR_ERL_OPTIONS", "PERL5DB", "PYTHONWARNINGS", "JULIA_LOAD_PATH", "JULIA_DEPOT_PATH",
    "GOFLAGS", "GOENV", "GOTOOLCHAIN", "RUSTC", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER",
    "RUSTDOC", "CARGO_HOME",
    "LESSKEYIN", "LESSKEYIN_SYSTEM", "LESSKEY", "LESSKEY_SYSTEM", "LESSKEY_CONTENT",
    "MANROFFOPT", "GROFF_BIN_PATH", "GROFF_COMMAND_PREFIX", "PYENV_HOOK_PATH", "PYENV_ROOT",
    "KUBECONFIG", "DOCKER_CONFIG", "NODE_V8_COVERAGE",
    "GEM_PATH", "RUBYGEMS_GEMDEPS", "BUNDLE_GEMFILE", "JAVA_HOME", "JAVA_OPTS", "CLASSPATH",
    "MAVEN_OPTS", "MAVEN_ARGS", "MAVEN_HOME", "M2_HOME", "GRADLE_OPTS", "GRADLE_USER_HOME",
    "SBT_OPTS", "ANT_OPTS", "SSH_SK_PROVIDER", "FLASK_APP",
    "DOCKER_HOST", "DOCKER_CONTEXT", "CONTAINER_HOST", "CONTAINER_CONNECTION",
    "PYTHONUSERBASE", "PYTHONPYCACHEPREFIX", "BZIP2", "BZIP", "XZ_DEFAULTS", "XZ_OPT",
    "GZIP", "ZIPOPT", "UNZIP", "UNZIPOPT", "CURL_HOME", "WGETRC", "PARALLEL_SHELL",
})
COMMAND_VARS = frozenset({
    "GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "GIT_PROXY_COMMAND", "SSH_ASKPASS", "SUDO_ASKPASS",
    "KUBECTL_EXTERNAL_DIFF",
    "EDITOR", "VISUAL", "PAGER", "MANPAGER", "BROWSER", "PROMPT_COMMAND", "RSYNC_RSH",
    "LESSOPEN", "LESSCLOSE", "SYSTEMD_PAGER", "TAR_RSH", "CVS_RSH", "DIFFTOOL", "TERMINAL",
})
"""Variables whose value programs run as a command: the value is judged as shell code."""
ARGUMENT_COMMAND_VARS = frozenset({
    "GIT_EXTERNAL_DIFF", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "EDITOR", "VISUAL", "GIT_SSH",
    "GIT_SSH_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS", "BROWSER",
    "GIT_PROXY_COMMAND", "RSYNC_RSH", "TAR_RSH", "CVS_RSH", "DIFFTOOL", "TERMINAL",
    "KUBECTL_EXTERNAL_DIFF", "diff.external", "core.editor", "sequence.editor",
    "core.sshcommand", "core.askpass", "gpg.program", "core.gitproxy", "web.browser",
})
"""Command variables and git settings whose command line is run with arguments the program
adds (``GIT_EXTERNAL_DIFF=rm`` deletes the files git names; an editor gets the file): the
line is judged followed by arguments only known at run time. Any ``*_EDITOR`` too."""
COMMAND_VAR_SUFFIXES = ("PAGER", "EDITOR")
"""Any ``*_PAGER``/``*_EDITOR`` (``PSQL_PAGER``, ``GH_PAGER``, ``SVN_EDITOR``) names a command
line too."""
COMMAND_VAR_PATTERN = re.compile(r"CARGO_TARGET_\w+_(?:RUNNER|LINKER)|(?:CARGO_BUILD_)?RUSTC_"
                                 r"(?:WORKSPACE_)?WRAPPER")
"""Cargo's: the runner ``cargo run``/``test`` starts the binary with, the linker, and the
wrapper every ``rustc`` call goes through, each a command line given arguments."""
COMMAND_TEMPLATE_VARS = frozenset({"LESSOPEN", "LESSCLOSE", "PROMPT_COMMAND"})
"""Command variables whose value is more than the command line run: ``LESSOPEN`` holds a
``|cmd %s`` template, ``PROMPT_COMMAND`` runs in this shell. For the others (``PAGER='less
-R'``, ``GIT_EDITOR=vim``), once that line is judged, setting them adds nothing."""
LOADS_NATIVE_CODE = frozenset({"LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH",
                               "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH"})
"""Variables that make the dynamic loader load a library the command line does not show
into whatever program runs: under ``--approval auto`` only a person may set them."""

_LOADS_CODE_FILE = {
    "NODE_OPTIONS": re.compile(r"(?:^|\s)(?:-r|--require|--import|--loader|"
                               r"--experimental-loader)(?:[\s=]|$)"),
    "PERL5OPT": re.compile(r"(?:^|\s)-[MmdI]"),
    "RUBYOPT": re.compile(r"(?:^|\s)-[rI]"),
    "PYTHONSTARTUP": re.compile(r"\S"),
    "JAVA_TOOL_OPTIONS": re.compile(r"-(?:javaagent|agentpath|agentlib):"),
    "_JAVA_OPTIONS": re.compile(r"-(?:javaagent|agentpath|agentlib):"),
    "JDK_JAVA_OPTIONS": re.compile(r"-(?:javaagent|agentpath|agentlib):"),
    "DOTNET_STARTUP_HOOKS": re.compile(r"\S"),  # assemblies run before Main
    "CORECLR_PROFILER_PATH": re.compile(r"\S"),  # a native profiler loaded into the runtime
}


def loads_unseen_code(name: str, values: list[str] | None) -> str:
    """What a setting makes the program load that the command line does not show: a library
    (``LD_PRELOAD``), or a code file its options name (``NODE_OPTIONS='--require ./x.cjs'``,
    ``PERL5OPT=-Mx``, ``PYTHONSTARTUP=x.py``, ``JAVA_TOOL_OPTIONS=-javaagent:x.jar``); ""
    for none. Under ``--approval auto`` only a person may set them."""
    if name in LOADS_NATIVE_CODE:
        return f"the library {name} loads into the program"
    pattern = _LOADS_CODE_FILE.get(name)
    if pattern is not None and (values is None or any(pattern.search(v) for v in values)):
        return f"the code {name} has the program load"
    return ""


DANGEROUS_VAR_PREFIXES = ("GIT_", "LD_", "DYLD_", "BASH_FUNC_", "NPM_CONFIG_", "npm_config_",
                          "TF_CLI_ARGS", "PIP_",
                          "LUA_INIT", "LUA_PATH", "LUA_CPATH", "ERL_", "R_PROFILE", "R_ENVIRON",
                          "CARGO_BUILD_", "CARGO_TARGET_", "CARGO_ALIAS_")
"""``LUA_INIT=@f.lua`` runs f.lua as lua starts (``lua -v`` too); ``ERL_AFLAGS`` can hold
``-eval CODE``; R runs its profile files; ``CARGO_BUILD_RUSTC_WRAPPER`` and a target's
``RUNNER`` name programs cargo runs (``GOFLAGS=-toolexec=..`` likewise for go);
``CARGO_ALIAS_FMT='run --'`` makes ``cargo fmt`` build and run the crate."""

GIT_SAFE_CONFIG_PREFIXES = ("color.", "log.", "advice.", "i18n.", "status.", "blame.",
                            "column.", "grep.", "format.pretty", "diff.noprefix",
                            "diff.renames", "diff.algorithm", "diff.mnemonicprefix",
                            "diff.context", "core.quotepath", "core.abbrev", "core.autocrlf",
                            "user.name", "user.email", "init.defaultbranch", "commit.gpgsign",
                            "tag.gpgsign", "merge.conflictstyle", "rerere.enabled",
                            "safe.directory", "pull.rebase", "fetch.prune",
                            "core.untrackedcache", "core.preloadindex")
GIT_SHELL_CONFIG = frozenset({"core.pager", "core.fsmonitor", "core.editor", "core.sshcommand",
                              "core.askpass", "sequence.editor", "diff.external",
                              "gpg.program", "credential.helper", "core.hookspath"})
"""Settings whose value git runs as a shell command; the value is judged as shell code."""
GIT_READ = frozenset({
    "status", "diff", "log", "show", "blame", "annotate", "rev-parse", "rev-list", "ls-files",
    "ls-tree", "describe", "shortlog", "grep", "cat-file", "merge-base", "name-rev",
    "for-each-ref", "show-ref", "check-ignore", "check-attr", "check-ref-format", "diff-tree",
    "diff-files", "diff-index", "count-objects", "verify-commit", "verify-tag", "whatchanged",
    "cherry", "range-diff", "show-branch", "fsck", "version", "help", "var", "reflog",
    "get-tar-commit-id", "--version", "--help", "-h", "column", "check-mailmap", "show-index",
    "verify-pack", "archive", "patch-id", "stripspace",
})
GIT_WRITE = frozenset({
    "add", "commit", "checkout", "switch", "restore", "merge", "cherry-pick", "revert", "mv",
    "rm", "init", "am", "apply", "notes", "update-index", "update-ref", "gc", "prune", "repack",
    "pack-refs", "maintenance", "sparse-checkout", "mktag", "mktree", "hash-object",
    "commit-tree", "read-tree", "write-tree", "checkout-index", "replace", "format-patch",
    "rerere", "stage", "citool", "merge-file", "symbolic-ref", "bundle", "worktree",
})
GIT_NETWORK = frozenset({"fetch", "pull", "clone", "ls-remote", "send-email", "request-pull",
                         "daemon", "instaweb", "http-backend", "svn", "p4", "lfs",
                         "fetch-pack", "send-pack", "remote-http", "archimport", "cvsimport"})
GIT_EXEC = frozenset({"difftool", "mergetool", "gui", "gitk", "credential", "hook", "shell",
                      "upload-pack", "receive-pack", "bisect", "submodule",
                      "web--browse", "credential-store", "credential-cache", "sh-setup"})
GIT_DESTRUCTIVE = frozenset({"filter-branch", "filter-repo"})


PROJECT_BIN_TOOLS = frozenset({"tsc", "esbuild", "prettier", "eslint", "vite", "vitest",
                               "jest", "playwright"})
"""Programs whose rule models the npm package of that name: ``node_modules/.bin/tsc``
(the project's own install) is judged as ``tsc``. Any other program in that folder is a
program given by path (its package could be anything)."""
