"""Binder metric labels as upstream's."""

from __future__ import annotations

import pytest

from ksched_binder.metrics import attempts_label


@pytest.mark.parametrize(("attempts", "label"), [(1, "1"), (14, "14"), (15, "15+"), (40, "15+")])
def test_attempts_label_is_capped_like_upstream(attempts: int, label: str) -> None:
    assert attempts_label(attempts) == label
