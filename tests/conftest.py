"""pytest wiring for the whole suite: the `target` fixture and closing the oracle workers. Shared helpers
live in `tests/support/` (see tests/README.md)."""

from __future__ import annotations

import logging

import pytest

from respc.runtime.targets import SUPPORTED_TARGETS

logging.getLogger("transformers").setLevel(logging.ERROR)


@pytest.fixture(params=SUPPORTED_TARGETS)
def target(request: pytest.FixtureRequest) -> str:
    """Each target respc supports, checked against its own transformers release."""
    return request.param


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from support.oracles import close_all

    close_all()
