"""What `serve --simulate` prints once its tenants exist (simulation/live.py `announcement`),
read back from the server's output as a person would read it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.conftest import Server
from tests.e2e.support import eventually

CLUSTER = re.compile(r"  (VM|Kubernetes) cluster (\S+) \(island (\w+)\): (\S+)")
YOURS = "yours, which the simulation never touches"
WATCH = "watch, or sign in as a simulated tenant:"
OPERATOR = "operator token"


@dataclass(frozen=True)
class Cluster:
    kind: str
    """`vm` or `k8s`, as the API says it."""
    name: str
    island: str
    token: str


@dataclass(frozen=True)
class Announced:
    yours: list[Cluster]
    watch: list[Cluster]
    operator: str | None
    """The operator line, if one was printed."""
    export: str
    """The `export ...` line, to run in a shell before the walk-through's curl lines."""

    def your(self, name: str) -> Cluster:
        return next(c for c in self.yours if c.name == name)


def read(output: str) -> Announced | None:
    """The announcement in `output`, once it is all there (its last line is the export)."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(YOURS)), None)
    if start is None:
        return None
    sections: dict[str, list[Cluster]] = {YOURS: [], WATCH: []}
    section, operator = YOURS, None
    for line in lines[start + 1 :]:
        found = CLUSTER.fullmatch(line)
        if found:
            kind = {"VM": "vm", "Kubernetes": "k8s"}[found[1]]
            sections[section].append(Cluster(kind, found[2], found[3], found[4]))
        elif line == WATCH:
            section = WATCH
        elif line.startswith(OPERATOR):
            operator = line
        elif line.startswith("  export "):
            return Announced(sections[YOURS], sections[WATCH], operator, line.strip())
    return None


def announced(server: Server) -> Announced:
    return eventually(lambda: read(server.log()), "the announcement of the tenants", server)
