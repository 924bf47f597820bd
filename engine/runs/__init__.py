"""The front door for runs: ``service`` (``Runs``: start, resume, stream, cancel, list, show,
decide), ``events`` (what a host sees and how it answers), ``stream`` (a run read at its
reader's pace), ``approvals`` (parked calls and decisions), ``reading`` (a store opened to
read). ``engine.session.compose`` composes a run's parts below it; nothing is imported here, so a
module of the package costs only its own imports."""
