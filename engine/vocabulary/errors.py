"""One exception tree for the whole engine; each class carries the CLI exit code it maps to.

    TurnstileError                      exit 1  (a run or an operation failed)
    ├── BadInputError                   exit 2  (the user's input is wrong; nothing was changed)
    │   ├── SpecError                   machine YAML: file, line, message, fix
    │   ├── UsageError                  command-line arguments, task files, config files
    │   ├── UnknownRunError             no run with that id
    │   ├── StoreError                  the database cannot be used (not a Turnstile database)
    │   │   ├── StoreReadOnlyError      the file or its folder cannot be written
    │   │   ├── StoreLockedError        another process held the write lock beyond the wait
    │   │   ├── StoreFullError          the disk (or a size limit) is full
    │   │   ├── StoreCorruptError       a damaged page or file
    │   │   ├── StoreSchemaError        written by a newer Turnstile
    │   │   ├── StoreUnreachableError   the database server cannot be reached
    │   │   ├── StoreAuthError          the server refused the login
    │   │   ├── StoreTooBusyError       the server has no connection left (too many clients)
    │   │   ├── StoreReplacedError      the file is not the database the run started with
    │   │   └── DamagedRowError         a stored row cannot be decoded (``check`` lists them)
    │   ├── LeaseHeldError              another live process drives the run
    │   ├── MachineChangedError         the machine YAML changed since the run started
    │   ├── ToolImportError             a tool named ``module:function`` cannot be imported
    │   ├── ModelConfigError            no model, missing API key, unknown provider
    │   ├── SandboxUnavailableError     sandbox mode required but commands cannot be confined
    │   ├── DecisionRefusedError        approve/deny of a run not waiting or a call not pending
    │   ├── DecisionUndeliveredError    a decision recorded for a run with no live workflow
    │   └── ForkNotExactError           a fork's workspace cannot be rebuilt exactly
    ├── ModelError                      a provider failed after retries (the run fails)
    ├── ScriptDivergedError             a scripted model's expectations were not met
    ├── TransitionError                 an action emitted a trigger the machine does not declare
    ├── UndeclaredDataError             an action or tool wrote a run-data key it did not declare
    ├── ToolError                       a tool could not be set up (not a tool *result*)
    ├── ContextOverflowError            even the minimal context does not fit the window
    ├── LimitExceededError              a step would pass the run's max_tokens or max_cost_usd
    ├── WorkspaceMissingError           the run's workspace folder is gone (deleted, unmounted)
    ├── InterruptedRun                  exit 3  (Ctrl-C or a signal; resumable)
    ├── PolicyRefusedError              exit 4  (refused by policy in non-interactive mode)
    ├── RunParked                       exit 5  (waiting for a person's decision; nothing held)
    └── RunContinuesError               exit 6  (this command stopped; the run goes on elsewhere)

Adapters translate foreign exceptions into this tree (``raise ... from exc``); only ``cli.py``
turns them into one line on stderr and an exit code.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 3
EXIT_REFUSED = 4
EXIT_PARKED = 5
EXIT_CONTINUES = 6


class TurnstileError(Exception):
    """Root of every error the engine raises on purpose."""

    exit_code: int = EXIT_FAILED


class BadInputError(TurnstileError):
    """The input (YAML, arguments, run id, database) is wrong; nothing persisted was changed."""

    exit_code = EXIT_BAD_INPUT


class SpecError(BadInputError):
    """A machine file is invalid; carries every problem found, each with file and line."""

    def __init__(self, problems: list[SpecProblem] | SpecProblem) -> None:
        self.problems = problems if isinstance(problems, list) else [problems]
        super().__init__("\n".join(str(p) for p in self.problems))


class SpecProblem:
    """One problem in a machine file: where it is, what is wrong, and how to fix it."""

    __slots__ = ("file", "line", "message")

    def __init__(self, file: str, line: int | None, message: str) -> None:
        self.file = file
        self.line = line
        self.message = message

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.message}"

    def __repr__(self) -> str:
        return f"SpecProblem({str(self)!r})"


class UsageError(BadInputError):
    """Command-line arguments or a referenced file are wrong."""


class UnknownRunError(BadInputError):
    """No run with the given id exists in the database."""


class StoreError(BadInputError):
    """The database cannot be used: corrupted, unreadable, or written by a newer version.

    Raised by the store adapter only; the message names the database file and the fault. A run
    that meets one mid-way is left resumable (``interrupted``, or ``crashed`` when even that
    could not be written).
    """


class StoreReadOnlyError(StoreError):
    """The database file or its folder is read-only: reading works, writing does not."""


class StoreLockedError(StoreError):
    """Another process held the database's write lock for longer than the busy timeout."""


class StoreFullError(StoreError):
    """The file system holding the database is full."""


class StoreCorruptError(StoreError):
    """A page of the database (or its header) is damaged."""


class StoreSchemaError(StoreError):
    """The database was written by a newer Turnstile (a higher schema version)."""


class StoreUnreachableError(StoreError):
    """The database server cannot be reached (down, wrong host or port, connection lost)."""


class StoreAuthError(StoreError):
    """The database server refused the credentials (or the role may not connect)."""


class StoreTooBusyError(StoreError):
    """The database server has no connection slot left (``max_connections`` reached)."""


class StoreReplacedError(StoreError):
    """The database file was replaced or deleted while a run used it: the run stops, and
    resumes once the original file is back."""


class DamagedRowError(StoreError):
    """A stored row cannot be decoded (its JSON is damaged): the run it belongs to cannot be
    shown or resumed; ``check`` lists every damaged run."""


class LeaseHeldError(BadInputError):
    """Another live process holds the run's lease."""


class MachineChangedError(BadInputError):
    """The machine definition changed since the run started."""


class ToolImportError(BadInputError):
    """A tool named by import path (``module:function``) cannot be imported or is no tool."""


class ModelConfigError(BadInputError):
    """The model cannot be configured: unknown provider, missing key, unreachable server."""


class DecisionRefusedError(BadInputError):
    """An approval decision that cannot be recorded: the run is not waiting, the call is not
    pending (already decided), or it changed since it was shown."""


class DecisionUndeliveredError(BadInputError):
    """A decision was recorded for a run on Temporal, but the run has no running workflow to
    take it up: ``resume RUN --backend temporal`` starts one."""

    def __init__(self, message: str, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id


class ForkNotExactError(BadInputError):
    """Some file of a fork's workspace cannot be rebuilt as it was at the step (its content
    was too large to keep, or the workspace changed since the run): ``--allow-partial``."""


class ModelError(TurnstileError):
    """A model provider failed after retries, or answered with a non-retryable error."""


class ScriptDivergedError(TurnstileError):
    """The scripted model's recorded expectations do not match what the run produced."""


class TransitionError(TurnstileError):
    """An action emitted a trigger that the current state does not declare."""


class UndeclaredDataError(TurnstileError):
    """An action or a tool wrote a run-data key it did not declare
    (``engine.vocabulary.run_data``)."""


class ToolError(TurnstileError):
    """A tool could not be registered or configured (failures while running are results)."""


class ContextOverflowError(TurnstileError):
    """Even the minimal context (system prompt, task, latest turn) exceeds the window."""


class LimitExceededError(TurnstileError):
    """A step would take the run past a token or cost limit; it is not committed."""


class WorkspaceMissingError(TurnstileError):
    """The run's workspace folder no longer exists: no tool can do what it was asked, so the
    run fails rather than "complete" with every call failing."""


class InterruptedRun(TurnstileError):
    """The run was interrupted (Ctrl-C, SIGTERM); it can be resumed."""

    exit_code = EXIT_INTERRUPTED


class PolicyRefusedError(TurnstileError):
    """A tool call was refused by policy and the run could not continue without it."""

    exit_code = EXIT_REFUSED


class SandboxUnavailableError(BadInputError):
    """``sandbox: {mode: required}`` and bubblewrap is missing or cannot confine here."""


class RunContinuesError(TurnstileError):
    """The command stopped following a run that goes on elsewhere (its Temporal workers): it
    lost Temporal or the store, or was asked to stop. The run is neither failed nor
    interrupted; the message says how to follow it."""

    exit_code = EXIT_CONTINUES


class RunParked(TurnstileError):
    """A call needs a person and the run is parked (``--approval park``): nothing is held."""

    exit_code = EXIT_PARKED

    def __init__(self, message: str, requests: tuple[object, ...] = ()) -> None:
        super().__init__(message)
        self.requests = requests
