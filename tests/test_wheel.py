"""The package as a wheel ships it: built from the repository and installed in a fresh venv, it
holds every module, query and feed (sql/ and feeds/ sit at the repository's top level), and
`burstmarket clear` and `burstmarket serve` run from it.

The wheel is built without a download (the project's build backend is a dev dependency) and
installed without its dependencies, which the new venv reads from this one's site-packages.
"""

from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import StartServer
from tests.e2e.support import make_account, make_cluster, ok, tick
from tests.test_cli_clear import ISSUE_CASE, ISSUE_STATS

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parent.parent
SHIPPED = {"src/burstmarket": "burstmarket", "sql": "burstmarket/sql", "feeds": "burstmarket/feeds"}
"""Each folder of the repository the wheel ships, and where it lands in the wheel."""


def run(*args: str | Path, cwd: Path, stdin: str | None = None, errors: bool = False) -> str:
    """The command's output (with `errors`, its standard error after it), once it succeeded."""
    done = subprocess.run(
        [str(arg) for arg in args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr if errors else done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the repository's sources (the build writes beside them)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for folder in SHIPPED:
        shutil.copytree(REPO / folder, source / folder, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    log = run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "--verbose",  # the build backend's warnings, for the test that there are none
        "-w",
        work / "dist",
        source,
        cwd=work,
        errors=True,
    )
    (work / "build.log").write_text(log)
    (built,) = (work / "dist").glob("burstmarket-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path) -> Path:
    """The bin/ of a new venv holding the wheel; its dependencies are this venv's."""
    root = wheel.parent.parent / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", root, cwd=wheel.parent)
    python = root / "bin" / "python"
    purelib = run(
        python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=root
    ).strip()
    # a path line adds this venv's packages without running its .pth files (nor, so, the
    # editable install of the repository's sources)
    Path(purelib, "dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--no-deps",
        "--no-index",
        "--quiet",
        wheel,
        cwd=root,
    )
    return root / "bin"


def test_the_wheel_holds_every_module_query_and_feed(wheel: Path) -> None:
    expected = {
        f"{inside}/{path.relative_to(REPO / folder).as_posix()}"
        for folder, inside in SHIPPED.items()
        for path in (REPO / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert {"burstmarket/sql/billing.sql", "burstmarket/feeds/stats.toml"} <= expected
    with zipfile.ZipFile(wheel) as archive:
        shipped = {
            name for name in archive.namelist() if not name.split("/")[0].endswith(".dist-info")
        }
    assert sorted(expected - shipped) == [], "missing from the wheel"
    assert sorted(shipped - expected) == [], "in the wheel, not in the repository"


def test_the_build_warns_of_no_package_left_out(wheel: Path) -> None:
    log = (wheel.parent.parent / "build.log").read_text()
    assert "Successfully built burstmarket" in log
    assert "Package would be ignored" not in log
    assert "BuildBackendWarning" not in log


def test_the_installed_package_reads_its_own_queries_and_feeds(venv: Path) -> None:
    probe = (
        "import json, burstmarket\n"
        "from burstmarket.feed.catalog import load_catalog\n"
        "from burstmarket.shipped import sql\n"
        "print(json.dumps({'package': burstmarket.__file__,\n"
        "  'feeds': [spec.name for spec in load_catalog()],\n"
        "  'billing': sql('billing')}))\n"
    )
    found = json.loads(run(venv / "python", "-c", probe, cwd=venv))
    assert Path(found["package"]).is_relative_to(venv.parent)
    assert found["feeds"] == ["ladder", "rates", "stats"]
    assert found["billing"] == (REPO / "sql" / "billing.sql").read_text()


def test_clear_runs_from_the_wheel(venv: Path) -> None:
    out = json.loads(run(venv / "burstmarket", "clear", stdin=json.dumps(ISSUE_CASE), cwd=venv))
    assert out["winners"] == ["a", "b"]
    assert out["stats"] == ISSUE_STATS


def test_serve_runs_from_the_wheel_and_publishes_its_feeds(
    venv: Path, start_server: StartServer
) -> None:
    server = start_server(command=venv / "burstmarket")
    make_account(server, "wheel-acct")
    auth = make_cluster(server, "wheel-acct", "ref", "vm", "wheel-vm")
    body = {"max_gpus": 16, "max_price_per_gpu_hour": 2.5}
    ok(server.client.put("/api/vm/capacity", json=body, headers=auth))
    assert tick(server, island="ref")["tick"] == 1
    stats = ok(server.client.get("/api/market/stats", params={"island": "ref"}))
    assert (stats["tick"], stats["gpus"], stats["vwap"]) == (1, 16, 1.0)
    # the rates feed has no live row: it is read from the store with its own query
    rates = ok(server.client.get("/api/market/rates", params={"island": "ref"}))
    assert (rates["tick"], rates["rates"]) == (1, [{"gpus": 16, "rate": 1.0}])
