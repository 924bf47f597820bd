"""Paths a command makes, crossed with the ways its later words reach them.

A command can make a file before its next word is read: a link to a program or to a folder
outside the workspace, a copy of a program, a folder. What a later word names then depends
on what was made, not on the disk the classifier sees (``ln -s /bin b; b/rm -rf src`` runs
``rm``; ``ln -s .. up; cat up/secret.txt`` reads beside the workspace). Each row here makes
the path ``kk`` lead somewhere (``MAKERS``, ``{t}`` the target, ``{b}`` its last name), or
writes code into it (``WRITERS``), and each use reaches it by name, glob, folder change, PATH
or another program. ``planted`` writes code that deletes ``src`` into a file a program runs
as code (a Makefile, a module ``python -m`` finds first, an awk, sed, cmake, perl or python
script), then runs that program: the program shows nothing of it, but the command wrote it.
``tests/test_shell_made.py`` runs every command in bash (the shell oracle's sandbox, beside
whose workspace lies ``secret.txt``) and compares what it did with the decision.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

from tests.shell_generator import Generated

MAKERS = (
    "ln -s {t} kk", "ln -sf {t} kk", "ln -s -- {t} kk", "ln -sT {t} kk", "ln -sr {t} kk",
    "ln --symbolic {t} kk", "ln -s {t} tmp; mv tmp kk", "ln -s {t} tmp; ln -s tmp kk",
    "ln -s {t} tmp; cp -P tmp kk", "ln -s {t} tmp; cp -a tmp kk",
    "mkdir kk0; ln -s {t} kk0/; mv kk0/{b} kk",
    "mkdir kk0; ln -st kk0 {t}; mv kk0/{b} kk", "mkdir kk0; ln -s -t kk0 {t}; mv kk0/{b} kk",
    "ln -s {t}; mv {b} kk", "(ln -s {t} kk)", "{{ ln -s {t} kk; }}", "true && ln -s {t} kk",
    "f() {{ ln -s {t} kk; }}; f", "ln -s {t} kk & wait", "ln -s {t} kk | cat",
    ": $(ln -s {t} kk)", "bash -c 'ln -s {t} kk'", "eval 'ln -s {t} kk'", "ln -s \"{t}\" k\\k",
    "n=kk; ln -s {t} $n", "ln -s {t} ./kk", "mkdir -p kk0 && ln -s {t} kk0/kk && mv kk0/kk .",
)
"""Ways to make ``kk`` a link to ``{t}`` (``{b}``: the target's last name)."""
COPIERS = ("cp {t} kk", "install {t} kk", "install -m 755 {t} kk", "cp -s {t} kk",
           "cp {t} tmp; mv tmp kk", "cp -- {t} kk", "mkdir kk0; cp {t} kk0; mv kk0/{b} kk")
"""Ways to make ``kk`` a copy of the file ``{t}`` (a program: the copy runs the same)."""

RUN_FILE = ("./kk -rf src", "./k? -rf src", "./[k]k -rf src", "./k* -rf src",
            "$PWD/kk -rf src", "command ./kk -rf src", "env ./kk -rf src",
            "echo src | xargs ./kk -rf", "bash -c './kk -rf src'", "PATH=.:$PATH kk -rf src",
            "find src -maxdepth 0 -exec ./kk -rf {{}} +", "(./kk -rf src)")
"""Uses that run the file ``kk`` (``rm`` when it leads there)."""
RUN_IN_DIR = ("set -- k?; \"$1\"/rm -rf src", "kk/rm -rf src", "./kk/rm -rf src",
              "./k?/rm -rf src", "./kk/r[m] -rf src",
              "$PWD/kk/rm -rf src", "env kk/rm -rf src", "PATH=$PWD/kk; rm -rf src")
"""Uses that run ``rm`` out of the folder ``kk`` (``/bin`` when it leads there)."""
READ_IN_DIR = ("set -- k*; cat \"$1\"/secret.txt", "cat kk/secret.txt", "cat ./k?/secret.txt",
               "cat kk/*.txt", "head kk/secret.txt",
               "cd kk && cat secret.txt", "cd kk; cat secret.txt", "cat < kk/secret.txt",
               "grep -h oracle kk/secret.txt", "cat k*/s*", "pushd kk >/dev/null; cat secret.txt")
"""Uses that read ``secret.txt`` in the folder ``kk`` (beside the workspace when ``kk`` is
``..``)."""
READ_FILE = ("cat kk", "cat ./k?", "head kk", "cat < kk", "cat kk*", "sort kk",
             "while read -r l; do echo \"$l\"; done < kk")
"""Uses that read the file ``kk`` (``secret.txt`` beside the workspace when it leads there)."""

WRITERS = ("echo '{t}' > kk", "printf '{t}\\n' > kk", "cat > kk <<< '{t}'",
           "tee kk <<< '{t}' >/dev/null", "echo '{t}' >> kk", "echo '{t}' > tmp; mv tmp kk",
           "echo '{t}' > tmp; cp tmp kk", "mkdir kk0; echo '{t}' > kk0/kk; mv kk0/kk .")
"""Ways to write the shell code ``{t}`` into ``kk``."""
RUN_SCRIPT = ("bash kk", "bash k?", "sh ./[k]k", "source k*", ". ./k?", "chmod +x kk; ./k?",
              "bash < kk", "bash -c '. ./kk'", "bash -- k*")
"""Uses that run ``kk`` as a script."""

PLANTS = (
    ("Makefile", "all:\\n\\trm -rf src", "make"), ("mk", "x:\\n\\trm -rf src", "make -f mk x"),
    ("GNUmakefile", "all:\\n\\trm -rf src", "make -s all"),
    ("unittest.py", "import shutil; shutil.rmtree(\"src\")", "python3 -m unittest"),
    ("p.awk", "BEGIN { system(\"rm -rf src\") }", "awk -f p.awk"),
    ("s.sed", "1e rm -rf src", "sed -f s.sed a.txt"),
    ("x.cmake", "file(REMOVE_RECURSE src)", "cmake -P x.cmake"),
    ("x.pl", "system(\"rm -rf src\")", "perl x.pl"),
    ("x.py", "import shutil; shutil.rmtree(\"src\")", "python3 x.py"),
    (".git/config", "[core]\\n\\tfsmonitor = rm -rf src", "git status"),
    (".git/config", "[alias]\\n\\tx = !rm -rf src", "git x"),
)
"""Files a program runs as code (named on its command line, found by name, or named by its
configuration), the code that deletes ``src`` (``printf`` escapes), and the program."""
PLANTERS = ("printf '{c}\\n' > {f}", "echo -e '{c}' > {f}", "cat > {f} <<'E'\n{raw}\nE\n",
            "cat <<< $'{c}' > {f}", "printf '{c}\\n' > tmp; mv tmp {f}", "printf '{c}\\n' >> {f}",
            "printf '{c}\\n' | tee {f} >/dev/null", "mkdir d; printf '{c}\\n' > d/{f}; cp d/{f} .")
"""Ways to write that code into the file; each is followed by the program in several places
(``PLANTED_RUNS``)."""
PLANTED_RUNS = ("; {r}", " && {r}", "\n{r}", "; ({r})", "; bash -c '{r}'", "; true && {r}",
                "; /usr/bin/{r}", "; env {r}", "; command {r}")


def planted() -> Iterator[Generated]:
    """Every plant written every way, then run from every place."""
    for (file, code, run), planter, place in itertools.product(PLANTS, PLANTERS, PLANTED_RUNS):
        raw = code.replace("\\n", "\n").replace("\\t", "\t")
        write = planter.format(c=code, f=file, raw=raw)
        if write.endswith("\n"):  # after a here-doc's last line: a command of its own
            place = place.lstrip("; &\n")
        yield Generated(write + place.format(r=run), run, (file, planter, place))


OPTION_NAMES = (
    ("-oa.txt", "sort [-b]*"), ("--output=a.txt", "sort [-b]*"), ("-i", "sed 's/.*//' *"),
    ("--in-place", "sed 's/.*//' [-b]*"), ("--remove-files", "tar -cf /dev/null *"),
    ("--checkpoint=1", "echo 'rm -rf src' > x.sh; touch -- '--checkpoint-action=exec=sh x.sh'; "
                       "tar -cf /dev/null *"),
)
"""A file name that is an option of the program a glob is given to, and the command; bash
sorts ``-`` first, so the name is the program's first argument."""
NAMERS = ("touch -- {n}", "touch ./{n}", ": > ./{n}", "echo > ./{n}", "cp a.txt ./{n}",
          "printf '' > ./{n}", "(touch -- {n})", "true && touch -- {n}", "mkdir d; cp a.txt d/{n}"
          "; mv d/{n} .")
"""Ways to make a file of that name."""


def optioned() -> Iterator[Generated]:
    """Every option name made every way, then the glob given to its program."""
    for (name, use), namer in itertools.product(OPTION_NAMES, NAMERS):
        yield Generated(f"{namer.format(n=name)}; {use}", use, (name, namer))


TARGETS = (
    ("/bin/rm", MAKERS + COPIERS, RUN_FILE),
    ("rm -rf src", WRITERS, RUN_SCRIPT),
    ("/usr/bin/rm", MAKERS, RUN_FILE[:4]),
    ("/bin", MAKERS, RUN_IN_DIR),
    ("/usr/bin", MAKERS[:8], RUN_IN_DIR[:3]),
    ("..", MAKERS, READ_IN_DIR),
    ("../secret.txt", MAKERS, READ_FILE),
)
"""Each target with the ways to make ``kk`` lead to it and the uses that then reach it."""


def made() -> Iterator[Generated]:
    """Every maker of every target with every use of it, deterministic and in order."""
    for target, makers, uses in TARGETS:
        for maker, use in itertools.product(makers, uses):
            make = maker.format(t=target, b=os.path.basename(target))
            yield Generated(f"{make}; {use}", use, (target, maker))
