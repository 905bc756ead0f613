"""The per-plugin fidelity tests follow a scenario's own configuration: a scenario added with its own
``NNN.config.yaml`` to a copy of ``fidelity-public`` passes them when its golden is what that
configuration decides, and fails them only when the decision really differs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.plugins.interpodaffinity.fidelity_test import check_golden
from ksched.plugins.noderesources.fidelity_test import check_scores
from tests.fidelity import Scenario, in_categories, load_scenario, scenario_ids

NEW_ID = "900"
FIT, IPA = "NodeResourcesFit", "InterPodAffinity"
WEIGHTS = {FIT: 3, IPA: 5}


def _source() -> Scenario:
    """A default-profile scenario in which upstream scored both plugins (InterPodAffinity non-zero)."""
    for sid in scenario_ids(keep=in_categories("interpod", "mixed")):
        scenario = load_scenario(sid)
        if scenario.config_path.name != "default-config.yaml" or scenario.golden.get("scoring_skipped"):
            continue
        if any(s.get(IPA) for s in scenario.golden["scores"].values()):
            return scenario
    pytest.fail("no default-profile scenario with InterPodAffinity scores")


def _reweighed(golden: dict[str, Any], default: Scenario) -> dict[str, Any]:
    """The golden a profile with :data:`WEIGHTS` decides: each plugin's score rescaled, totals redone."""
    out = copy.deepcopy(golden)
    for scores in out["scores"].values():
        for name, weight in WEIGHTS.items():
            if name in scores:
                scores[name] = scores[name] // default.weight(name) * weight
    out["totals"] = {node: sum(s.values()) for node, s in out["scores"].items()}
    return out


def _add_scenario(folder: Path, source: Scenario, golden: dict[str, Any]) -> Scenario:
    for name in ("default-config.yaml", f"{source.sid}.yaml", f"{source.sid}.expected.json"):
        (folder / name).write_bytes((source.directory / name).read_bytes())
    (folder / f"{NEW_ID}.yaml").write_bytes((source.directory / f"{source.sid}.yaml").read_bytes())
    config = yaml.safe_load((source.directory / "default-config.yaml").read_text())
    config["profiles"][0]["plugins"] = {
        "score": {"enabled": [{"name": n, "weight": w} for n, w in WEIGHTS.items()]}
    }
    (folder / f"{NEW_ID}.config.yaml").write_text(yaml.safe_dump(config))
    (folder / f"{NEW_ID}.expected.json").write_text(json.dumps(golden))
    return load_scenario(NEW_ID, folder)


def test_a_scenario_with_its_own_config_passes_when_its_golden_is_right(tmp_path: Path) -> None:
    source = _source()
    added = _add_scenario(tmp_path, source, _reweighed(source.golden, source))
    assert added.config_path.name == f"{NEW_ID}.config.yaml"
    assert [added.weight(n) for n in WEIGHTS] == list(WEIGHTS.values())
    assert scenario_ids(tmp_path) == [source.sid, NEW_ID]
    check_scores(added)
    check_golden(added)
    check_scores(load_scenario(source.sid, tmp_path))  # the neighbour keeps the default profile


def test_a_scenario_with_its_own_config_fails_when_the_decision_differs(tmp_path: Path) -> None:
    source = _source()
    added = _add_scenario(tmp_path, source, source.golden)  # the default profile's scores, not this one's
    with pytest.raises(AssertionError, match="weight 3"):
        check_scores(added)
    with pytest.raises(AssertionError, match="weight 5"):
        check_golden(added)


def test_an_absent_folder_is_named_when_skipping_and_fails_where_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    absent = tmp_path / "no-shared"
    monkeypatch.setenv("KSCHED_SHARED_DIR", str(absent))
    monkeypatch.delenv("KSCHED_REQUIRE_SHARED", raising=False)
    [param] = scenario_ids()
    assert param.values == (None,)
    with pytest.raises(pytest.skip.Exception, match=str(absent / "fidelity-public")):
        load_scenario(None)
    monkeypatch.setenv("KSCHED_REQUIRE_SHARED", "1")
    with pytest.raises(pytest.fail.Exception, match="is absent"):
        load_scenario(None)
