"""HTTP servers for the serving tests: `respc serve` (or examples/server.py) in a process of its own, or
an app on a uvicorn in a thread of this process (so a test can look inside it). Loopback only."""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import select
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def running(command: list[str], log: Path, cwd: Path | None = None) -> Iterator[str]:
    """Run a server `command` (which prints `serving NAME on URL` first) until the block ends; its URL."""
    with log.open("w", encoding="utf-8") as errors:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True, cwd=cwd)
    try:
        ready, _, _ = select.select([process.stdout], [], [], 60)
        line = process.stdout.readline() if ready else ""
        started = re.fullmatch(r"serving \S+ on (http://127\.0\.0\.1:\d+)\n", line)
        assert started, f"the server did not start: {line!r}\n{log.read_text(encoding='utf-8')}"
        url = started.group(1)
        deadline = time.monotonic() + 30
        while True:  # until it answers HTTP (an unknown path: 404)
            try:
                urllib.request.urlopen(url + "/", timeout=5)
            except urllib.error.HTTPError:
                break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, log.read_text(encoding="utf-8")
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


class ThreadServer:
    """`app` served by uvicorn on a free loopback port, in a thread of this process with its own loop."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.loop: asyncio.AbstractEventLoop | None = None
        self.started = threading.Event()
        self.thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)

    async def _serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.started.set()
        await self.server.serve(sockets=[self.listener])

    def __enter__(self) -> ThreadServer:
        self.thread.start()
        assert self.started.wait(30)
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.listener.close()

    def tasks(self) -> int:
        """How many tasks the server's loop has, other than the server's own main task."""

        async def count() -> int:
            return len(asyncio.all_tasks()) - 1  # this one

        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(count(), self.loop).result(10)

    def stacks(self) -> str:
        """Where each of the server loop's tasks is waiting, for a test's failure message."""

        async def where() -> str:
            out = io.StringIO()
            for task in asyncio.all_tasks():
                task.print_stack(file=out)
            return out.getvalue()

        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(where(), self.loop).result(10)
