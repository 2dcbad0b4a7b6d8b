"""A `ParseResponses` that is slow and says where it runs, so a test can kill a Ray actor mid-job.

It lives in its own module so the test can have Ray ship it to the workers by value
(`cloudpickle.register_pickle_by_value`), as a user's own subclass would be.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa

from respc.batch.ray import ParseResponses


class SlowParse(ParseResponses):
    """Writes `actor-<pid>` in `state` when it starts and a line per batch; sleeps `delay` per batch."""

    def __init__(self, *, state: str, delay: float, **options: object) -> None:
        super().__init__(**options)
        self.log = Path(state) / f"actor-{os.getpid()}"
        self.log.touch()
        self.delay = delay

    def __call__(self, batch: pa.Table) -> pa.Table:
        with self.log.open("a") as log:
            log.write(f"{batch.num_rows}\n")
        time.sleep(self.delay)
        return super().__call__(batch)
