"""The wheel the .vsix carries stands on its own: its metadata, its pins, its command."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

import topicforest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    [built] = out.glob("topicforest-*.whl")
    return built


def metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as zf:
        return zf.read(f"topicforest-{topicforest.__version__}.dist-info/METADATA").decode()


def pins(text: str) -> dict[str, str]:
    """name -> version for `name==version` lines (names normalized as pip does)."""
    found = re.findall(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", text, re.MULTILINE)
    return {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in found}


def test_wheel_version_is_the_package_and_the_extension_version(wheel: Path) -> None:
    extension = json.loads((ROOT / "clients/vscode/package.json").read_text())
    assert wheel.name == f"topicforest-{topicforest.__version__}-py3-none-any.whl"
    assert extension["version"] == topicforest.__version__


def test_wheel_carries_the_data_files_and_the_command(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        entry_points = zf.read(f"topicforest-{topicforest.__version__}.dist-info/entry_points.txt")
    assert {"topicforest/py.typed", "topicforest/data/sample_conversation.json"} <= names
    assert "topicforest/server/protocol.json" in names
    assert "topicforest = topicforest.cli:main" in entry_points.decode()


def test_dependencies_are_pinned_exactly_and_agree_with_the_constraints(wheel: Path) -> None:
    requires = [
        line.removeprefix("Requires-Dist: ")
        for line in metadata(wheel).splitlines()
        if line.startswith("Requires-Dist: ") and "extra ==" not in line
    ]
    assert requires, "no runtime dependencies found"
    assert all("==" in r for r in requires), requires
    constraints = pins((ROOT / "server/constraints.txt").read_text())
    for name, version in pins("\n".join(requires)).items():
        assert constraints.get(name) == version, (
            f"{name}: wheel {version}, constraints {constraints.get(name)}"
        )


def test_installed_wheel_gives_a_working_topicforest_command(wheel: Path, tmp_path: Path) -> None:
    # A bare venv gets the wheel; its dependencies come from this interpreter's site-packages
    # through a .pth line (no download; the e2e installs them from the registry).
    env = tmp_path / "env"
    venv.create(env, with_pip=False)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(env), "platbase": str(env)}))
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(env / "bin/python"), "install"]
    subprocess.run([*pip, "--quiet", "--no-deps", str(wheel)], check=True, capture_output=True)
    command = env / "bin/topicforest"
    version = subprocess.run([command, "--version"], check=True, capture_output=True, text=True)
    assert version.stdout.startswith(f"topicforest {topicforest.__version__} (Python 3.")
    assert "pygls 2.1.1" in version.stdout and "litellm 1.102.4" in version.stdout
    where = subprocess.run(
        [env / "bin/python", "-c", "import topicforest; print(topicforest.__file__)"],
        check=True,
        capture_output=True,
        text=True,
    )
    assert where.stdout.startswith(str(site)), "the wheel's copy, not the source tree's"
    serve = subprocess.run([command, "serve", "--help"], check=True, capture_output=True, text=True)
    assert "usage: topicforest serve" in serve.stdout
