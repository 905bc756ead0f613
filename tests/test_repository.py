"""Repository hygiene that no other test sees: the Makefile declares only targets it has, no
tracked file names a path of a development machine (shared material is ``../shared``), test
helpers follow one naming (CONTRIBUTING.md), and pre-commit runs exactly ``make lint``'s checks."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
ABSOLUTE_WORK_PATH = re.compile(r"(?<![\w.])/" + "work/")  # split so this file does not match itself
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".json", ".txt", ".cfg", ".lock", ""}

#: names a module of test helpers must not have: a package's shared test builders are its ``testing.py``
OTHER_HELPER_NAMES = {"testutil.py", "testutils.py", "test_utils.py", "helpers.py", "util.py", "utils.py"}


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def test_makefile_phony_targets_have_rules() -> None:
    text = (ROOT / "Makefile").read_text()
    [phony] = re.findall(r"^\.PHONY:(.*)$", text, re.MULTILINE)
    rules = set(re.findall(r"^([A-Za-z][\w-]*):", text, re.MULTILINE))
    assert set(phony.split()) - rules == set()


def test_no_absolute_paths_of_a_development_machine() -> None:
    offenders = []
    for name in tracked_files():
        path = ROOT / name
        if path.suffix not in TEXT_SUFFIXES:
            continue
        if path.is_file() and ABSOLUTE_WORK_PATH.search(path.read_text(errors="replace")):
            offenders.append(name)
    assert offenders == []


def test_test_helpers_are_named_testing() -> None:
    python_files = [Path(name) for name in tracked_files() if name.endswith(".py")]
    assert [str(path) for path in python_files if path.name in OTHER_HELPER_NAMES] == []


def makefile_recipe(target: str) -> list[str]:
    """The commands of ``target``'s recipe, with ``$(BIN)`` spelled out as ``.venv/bin``."""
    text = (ROOT / "Makefile").read_text()
    match = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
    assert match is not None, f"no rule for {target}"
    return [line.strip().replace("$(BIN)", ".venv/bin") for line in match.group(1).splitlines()]


def pre_commit_entries() -> list[str]:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    return [str(hook["entry"]) for repo in config["repos"] for hook in repo["hooks"]]


def test_pre_commit_runs_the_lint_recipe() -> None:
    assert pre_commit_entries() == makefile_recipe("lint")


#: the Kubernetes client layer (docs/client.md), and the bench that measures the clients it chose from
CLIENT_LAYER = ("shared/ksched/client/", "shared/ksched/bench/client.py")
#: what reaches the API server past ``ksched.client``: kubernetes_asyncio's typed APIs and ApiClient,
#: its request machinery, or the internals of a client's session
PAST_THE_CLIENT = re.compile(
    r"\b(\w+V\d\w*Api|ApiClient|call_api|rest_client|pool_manager|new_client_from_config)\b"
)


def test_only_the_client_layer_reaches_the_api_server() -> None:
    offenders = [
        f"{name}:{number}: {line.strip()}"
        for name in tracked_files()
        if name.endswith(".py")
        and name.startswith(("shared/", "services/"))
        and not name.startswith(CLIENT_LAYER)
        for number, line in enumerate((ROOT / name).read_text().splitlines(), 1)
        if PAST_THE_CLIENT.search(line)
    ]
    assert offenders == []
