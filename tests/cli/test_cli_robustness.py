"""CLI robustness: every bad input or failed write is one line on stderr, exit code 2, and no partial file.

Most cases run `respc.cli.main` in process (fast, and lets a full disk or an unreadable file be simulated
by monkeypatching); the ones that depend on the interpreter's own stdin decoding run as subprocesses.
Tests run as root here, which reads files whatever their mode, so the real `chmod 000` cases skip
when the file stays readable and the simulated ones cover the same error paths.
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from support.compare import TEMPLATES

from respc.cli import main

TEMPLATE_JSON = json.dumps(TEMPLATES["smollm"], indent=1)
COMMANDS = [["compile"], ["compile", "-o", "out.py"], ["explain"]]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch working directory; `main` replaces `warnings.showwarning`, which is restored after."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)
    return tmp_path


def run(capsys: pytest.CaptureFixture, *args: str) -> tuple[Any, str, str]:
    """Exit code (or the exception that escaped `main`), stdout and stderr of one in-process run."""
    try:
        code: Any = main(list(args))
    except SystemExit as error:
        code = error.code
    except BaseException as error:  # an escaped exception is a traceback for the user
        code = f"escaped {type(error).__name__}: {error}"
    out, err = capsys.readouterr()
    return code, out, err


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def assert_one_line_error(result: tuple[Any, str, str], *names: str) -> None:
    code, out, err = result
    assert code == 2, f"exit {code!r}, stderr {err!r}"
    assert err.startswith("respc: error: ") and err.count("\n") == 1 and err.endswith("\n"), err
    for name in names:
        assert name in err, f"{name!r} not named in {err!r}"
    assert out == ""


def assert_fails_cleanly(capsys: pytest.CaptureFixture, workdir: Path, source: str, *names: str) -> None:
    """Every command on `source`: one-line error, exit 2, and no new file in the working directory."""
    before = listing(workdir)
    for command in COMMANDS:
        assert_one_line_error(run(capsys, command[0], source, *command[1:]), *names)
        assert listing(workdir) == before, f"{command}: files left behind"


def test_unreadable_file_chmod(capsys: pytest.CaptureFixture, workdir: Path) -> None:
    path = workdir / "t.json"
    path.write_text(TEMPLATE_JSON, encoding="utf-8")
    path.chmod(0)
    try:
        with open(path, encoding="utf-8"):
            pytest.skip("running as root: a mode-000 file is still readable (see the simulated test below)")
    except PermissionError:
        pass
    assert_fails_cleanly(capsys, workdir, "t.json", "t.json", "permission denied")


@pytest.mark.parametrize(
    "error",
    [PermissionError(errno.EACCES, "Permission denied"), OSError(errno.EIO, "Input/output error")],
    ids=["EACCES", "EIO"],
)
def test_unreadable_file_simulated(
    capsys: pytest.CaptureFixture, workdir: Path, monkeypatch: pytest.MonkeyPatch, error: OSError
) -> None:
    (workdir / "t.json").write_text(TEMPLATE_JSON, encoding="utf-8")
    real = Path.read_text

    def failing(self: Path, *args: Any, **kwargs: Any) -> str:
        if self.name in ("t.json", "tokenizer_config.json"):
            raise error
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", failing)
    assert_fails_cleanly(capsys, workdir, "t.json", "t.json")


@pytest.mark.parametrize("case", ["permission", "directory"])
def test_unreadable_config_in_a_model_dir(
    capsys: pytest.CaptureFixture, workdir: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """An unreadable tokenizer_config.json, or a directory by that name, in a model directory."""
    model = workdir / "model"
    model.mkdir()
    config = model / "tokenizer_config.json"
    if case == "directory":
        config.mkdir()
    else:
        config.write_text(json.dumps({"response_template": TEMPLATES["smollm"]}), encoding="utf-8")
        real = Path.read_text

        def failing(self: Path, *args: Any, **kwargs: Any) -> str:
            if self.name == "tokenizer_config.json":
                raise PermissionError(errno.EACCES, "Permission denied", str(self))
            return real(self, *args, **kwargs)

        monkeypatch.setattr(Path, "read_text", failing)
    assert_fails_cleanly(capsys, workdir, "model", "tokenizer_config.json")


def test_directories_where_files_are_expected(capsys: pytest.CaptureFixture, workdir: Path) -> None:
    (workdir / "empty").mkdir()
    assert_fails_cleanly(capsys, workdir, "empty", "empty")
    (workdir / "t.json").write_text(TEMPLATE_JSON, encoding="utf-8")
    (workdir / "outdir").mkdir()
    (workdir / "outdir" / "keep").write_text("x")
    before = listing(workdir)
    assert_one_line_error(run(capsys, "compile", "t.json", "-o", "outdir"), "outdir")
    assert listing(workdir) == before and listing(workdir / "outdir") == ["keep"]
    assert_one_line_error(run(capsys, "compile", "t.json", "-o", "t.json/out.py"), "t.json/out.py")
    assert listing(workdir) == before and (workdir / "t.json").read_text(encoding="utf-8") == TEMPLATE_JSON


@pytest.mark.parametrize("cut", [0, 1, 2, 17, 60, 200, 421, -3, -2, -1])
def test_truncated_json(capsys: pytest.CaptureFixture, workdir: Path, cut: int) -> None:
    (workdir / "t.json").write_text(TEMPLATE_JSON[:cut], encoding="utf-8")
    assert_fails_cleanly(capsys, workdir, "t.json", "t.json")


@pytest.mark.parametrize("text", ["   \n", "null", "[]", '"fields"', "5", "{}", '{"fields": {}}', "[1,"])
def test_json_that_is_no_template(capsys: pytest.CaptureFixture, workdir: Path, text: str) -> None:
    (workdir / "t.json").write_text(text, encoding="utf-8")
    assert_fails_cleanly(capsys, workdir, "t.json", "t.json")


@pytest.mark.parametrize("where", ["file", "model dir"])
def test_deeply_nested_json(capsys: pytest.CaptureFixture, workdir: Path, where: str) -> None:
    """JSON nested past the recursion limit: json.loads raises RecursionError, not a decode error."""
    deep = "[" * 100_000 + "]" * 100_000
    if where == "file":
        (workdir / "t.json").write_text(deep, encoding="utf-8")
        assert_fails_cleanly(capsys, workdir, "t.json", "t.json")
    else:
        (workdir / "model").mkdir()
        (workdir / "model" / "tokenizer_config.json").write_text('{"response_template": ' + deep + "}")
        assert_fails_cleanly(capsys, workdir, "model", "tokenizer_config.json")


ENCODINGS = {
    "latin-1": TEMPLATE_JSON.replace("assistant", "assistänt").encode("latin-1"),
    "utf-16": TEMPLATE_JSON.encode("utf-16"),
    "utf-8 BOM": TEMPLATE_JSON.encode("utf-8-sig"),
    "surrogate bytes": TEMPLATE_JSON.encode("utf-8").replace(b"assistant", b"assist\xed\xa0\x80ant"),
    "truncated utf-8": TEMPLATE_JSON.encode("utf-8")[:-1] + b"\xc3",
}


@pytest.mark.parametrize("data", list(ENCODINGS.values()), ids=list(ENCODINGS))
def test_non_utf8_input(capsys: pytest.CaptureFixture, workdir: Path, data: bytes) -> None:
    (workdir / "t.json").write_bytes(data)
    assert_fails_cleanly(capsys, workdir, "t.json", "t.json")
    (workdir / "model").mkdir()
    (workdir / "model" / "tokenizer_config.json").write_bytes(b'{"response_template": ' + data + b"}")
    assert_fails_cleanly(capsys, workdir, "model", "tokenizer_config.json")


def test_non_utf8_stdin_in_process(
    capsys: pytest.CaptureFixture, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """stdin with surrogateescape (what Python picks under a C locale) reads bytes as JSON garbage."""
    stdin = io.TextIOWrapper(io.BytesIO(b"\xff\xfe{}"), encoding="utf-8", errors="surrogateescape")
    monkeypatch.setattr(sys, "stdin", stdin)
    assert_one_line_error(run(capsys, "compile", "-"), "<stdin>")


def test_non_utf8_stdin_strict(tmp_path: Path) -> None:
    """Under a UTF-8 locale stdin decodes strictly: the read itself raises UnicodeDecodeError."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    done = subprocess.run(
        [sys.executable, "-m", "respc", "compile", "-"], input=b"\xff\xfe{}", capture_output=True, env=env
    )
    err = done.stderr.decode()
    assert (done.returncode, err.count("\n"), err.startswith("respc: error: <stdin>")) == (2, 1, True), err


def test_output_into_a_missing_directory(capsys: pytest.CaptureFixture, workdir: Path) -> None:
    (workdir / "t.json").write_text(TEMPLATE_JSON, encoding="utf-8")
    before = listing(workdir)
    assert_one_line_error(
        run(capsys, "compile", "t.json", "-o", "missing/deeper/out.py"), "missing/deeper/out.py"
    )
    assert listing(workdir) == before


class FullDisk(io.StringIO):
    """A stream on a full disk: writes seem to work, the error surfaces when data reaches the disk."""

    def __init__(self, fail_on: str) -> None:
        super().__init__()
        self.fail_on = fail_on

    def write(self, text: str) -> int:
        if self.fail_on == "write":
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(text)

    def close(self) -> None:
        if self.fail_on == "close" and not self.closed:
            super().close()
            raise OSError(errno.ENOSPC, "No space left on device")
        super().close()


@pytest.mark.parametrize("fail_on", ["write", "close", "replace"])
def test_full_disk_on_write(
    capsys: pytest.CaptureFixture, workdir: Path, monkeypatch: pytest.MonkeyPatch, fail_on: str
) -> None:
    """ENOSPC while writing, on close (flush) or at the rename: exit 2, and the old OUT stays intact."""
    (workdir / "t.json").write_text(TEMPLATE_JSON, encoding="utf-8")
    (workdir / "out.py").write_text("# the previous module\n", encoding="utf-8")
    real_fdopen, real_replace = os.fdopen, os.replace

    def fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
        if fail_on == "replace":
            return real_fdopen(fd, *args, **kwargs)
        os.close(fd)
        return FullDisk(fail_on)

    def replace(src: Any, dst: Any) -> None:
        if fail_on == "replace":
            raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fdopen", fdopen)
    monkeypatch.setattr(os, "replace", replace)
    before = listing(workdir)
    assert_one_line_error(run(capsys, "compile", "t.json", "-o", "out.py"), "out.py", "No space left")
    assert listing(workdir) == before, "temporary file left behind"
    assert (workdir / "out.py").read_text(encoding="utf-8") == "# the previous module\n"


def _device(path: Path, minor: int) -> None:
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
    except (PermissionError, OSError) as error:
        pytest.skip(f"cannot create a device node here: {error}")


@pytest.mark.parametrize("kind", ["full device", "null device", "fifo"])
def test_output_onto_special_files(capsys: pytest.CaptureFixture, workdir: Path, kind: str) -> None:
    """OUT is a device or FIFO: renaming over it would replace the node (as root, even /dev/null or
    /dev/full); it must stay what it is. /dev is never touched: a node made in tmp_path stands in."""
    (workdir / "t.json").write_text(TEMPLATE_JSON, encoding="utf-8")
    target = workdir / "target"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        _device(target, 7 if kind == "full device" else 3)
    mode = target.stat().st_mode
    if kind == "fifo":  # respc may write into it: keep a reader on the other end
        reader = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
    try:
        code, _, err = run(capsys, "compile", "t.json", "-o", "target")
    finally:
        if kind == "fifo":
            os.close(reader)
    assert stat.S_IFMT(target.stat().st_mode) == stat.S_IFMT(mode), f"{kind} was replaced by a regular file"
    if kind == "full device":
        assert code == 2 and err.count("\n") == 1, err
    assert listing(workdir) == ["t.json", "target"]


@pytest.mark.parametrize("out", [b"caf\xe9\n", b"\xff\xfe"])
def test_check_against_a_non_utf8_out(capsys: pytest.CaptureFixture, workdir: Path, out: bytes) -> None:
    """--check against an OUT that is not UTF-8: reported stale (or an error), never a traceback."""
    (workdir / "t.json").write_text(TEMPLATE_JSON, encoding="utf-8")
    (workdir / "out.py").write_bytes(out)
    code, _, err = run(capsys, "compile", "t.json", "--check", "-o", "out.py")
    assert code in (1, 2), f"{code}: {err}"
    assert (workdir / "out.py").read_bytes() == out


def test_a_template_nested_too_deep_for_python_source(capsys: pytest.CaptureFixture, workdir: Path) -> None:
    """A template transformers accepts but that is nested past what Python source can spell (~200 levels):
    a module that compiles, or one line and exit 2 with nothing written, never a traceback."""
    transform: Any = "{content}"
    for _ in range(200):
        transform = {"a": transform}
    template = {"start_anchor": "S", "fields": {"c": {"open": "<c>", "transform": transform}}}
    (workdir / "deep.json").write_text(json.dumps(template), encoding="utf-8")
    before = listing(workdir)
    result = run(capsys, "compile", "deep.json", "-o", "out.py")
    if result[0] == 0:
        compile((workdir / "out.py").read_text(encoding="utf-8"), "out.py", "exec")
    else:
        assert_one_line_error(result, "deep.json")
        assert listing(workdir) == before


def test_symlink_loop_and_missing_source(capsys: pytest.CaptureFixture, workdir: Path) -> None:
    (workdir / "a").symlink_to("b")
    (workdir / "b").symlink_to("a")
    assert_fails_cleanly(capsys, workdir, "a", "a")
    assert_fails_cleanly(capsys, workdir, "nothing.json", "nothing.json")
