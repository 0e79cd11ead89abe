"""Every file gbdesk writes — a CSV table, a PDF report, a dataset — whole or not at all
(no Qt, light imports).

THE RULE, stated here once (docs/cli.md, "Files gbdesk writes"):

1. **A temporary file in the same folder**, created exclusively (``O_CREAT | O_EXCL |
   O_NOFOLLOW``: never an existing file, never through a link someone planted at its
   name), under a name nobody can guess (`tempfile.mkstemp`: ``.NAME.XXXXXXXX.tmp``).
2. **Written, flushed and synced** (``fsync``), then **checked**: the writer's own check
   (a PDF is re-opened and its pages counted; `check_pdf`), and the bytes on disk are as
   many as were written.
3. **Renamed into place** (``os.replace``, atomic on every file system gbdesk supports):
   the final name holds the old file or the new one, never half of one.
4. **A final name that is a symbolic link is refused** in one line (before anything is
   written, and again just before the rename): gbdesk never writes a file the person did
   not name. A final name that is a folder is refused too.
5. **On failure** — a full disk, a read-only folder, a check that fails, Ctrl-C — the
   temporary file is removed, nothing is left under the final name, and `WriteFailed`
   (a `UserError`: one line naming the file, exit status 2) says what happened.

`Batch` writes several files (an export's tables) this way and renames them only when
every one of them is written and checked, so an export that fails leaves the folder as it
was. `earlier_exports` names the tables of an earlier export that stay beside new ones.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from gbdesk.support.errors import UserError

log = logging.getLogger(__name__)


class WriteFailed(UserError):
    """A file could not be written (whole): one line naming it; nothing is left under its
    name."""

    def __init__(self, path: str | os.PathLike, why: str):
        super().__init__(
            f"could not write {os.fspath(path)}: {why}; nothing was left under its name"
        )
        self.path = Path(path)


def refuse_link(path: str | os.PathLike) -> Path:
    """`path` as a `Path`; `UserError` (one line) when it is a symbolic link (even a dangling
    one) or a folder: gbdesk writes only the file a person named."""
    final = Path(path)
    if final.is_symlink():
        raise UserError(
            f"{final} is a symbolic link: gbdesk does not write through links (it would "
            "overwrite the file the link points to) — remove the link or choose another name"
        )
    if final.is_dir():
        raise UserError(f"{final} is a folder, not a file name")
    return final


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc) or type(exc).__name__
    return str(exc) or type(exc).__name__


def _temporary(final: Path) -> tuple[int, Path]:
    """A new, empty temporary file beside `final` (see the module: exclusive, no link
    followed), as (descriptor, path)."""
    fd, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    # mkstemp makes it private (0600); the final file gets the usual permissions (Windows:
    # no fchmod, and no need)
    with contextlib.suppress(OSError, AttributeError):
        os.fchmod(fd, 0o666 & ~_umask())
    return fd, Path(name)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class Pending:
    """One file being written: its temporary file until `commit` renames it into place."""

    def __init__(self, final: str | os.PathLike, check: Callable[[Path], None] | None = None):
        self.final = refuse_link(final)
        self.check = check
        try:
            self.fd, self.temp = _temporary(self.final)
        except OSError as exc:
            raise WriteFailed(self.final, _why(exc)) from exc
        self.written = 0
        self._closed = False

    def open(self, mode: str = "w", **kwargs: Any) -> IO[Any]:
        """The temporary file, opened once (text: utf-8 and newline="" by default)."""
        if "b" not in mode:
            kwargs.setdefault("encoding", "utf-8")
            kwargs.setdefault("newline", "")
        self._closed = True  # the file object owns the descriptor now
        return os.fdopen(self.fd, mode, **kwargs)

    def finish(self, fh: IO[Any] | None = None) -> None:
        """Flush, sync and close the temporary file, then check it (`WriteFailed`)."""
        try:
            if fh is not None:
                fh.flush()
                os.fsync(fh.fileno())
                fh.close()
            elif not self._closed:
                os.fsync(self.fd)
                os.close(self.fd)
                self._closed = True
            if self.check is not None:
                self.check(self.temp)
        except WriteFailed:
            self.discard()
            raise
        except (OSError, ValueError) as exc:
            self.discard()
            raise WriteFailed(self.final, _why(exc)) from exc

    def commit(self) -> Path:
        """Rename the checked temporary file into place (the final name refused again if a
        link appeared meanwhile)."""
        try:
            refuse_link(self.final)
            os.replace(self.temp, self.final)
        except UserError:
            self.discard()
            raise
        except OSError as exc:
            self.discard()
            raise WriteFailed(self.final, _why(exc)) from exc
        return self.final

    def discard(self) -> None:
        if not self._closed:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self._closed = True
        with contextlib.suppress(OSError):
            self.temp.unlink()


@contextlib.contextmanager
def written(
    path: str | os.PathLike,
    mode: str = "w",
    *,
    check: Callable[[Path], None] | None = None,
    **kwargs: Any,
) -> Iterator[IO[Any]]:
    """Write one file by the rule (see the module): ``with written(path) as fh: …``."""
    pending = Pending(path, check)
    try:
        fh = pending.open(mode, **kwargs)
    except BaseException:
        pending.discard()
        raise
    try:
        yield fh
    except BaseException as exc:
        with contextlib.suppress(OSError, ValueError):
            fh.close()
        pending.discard()
        if isinstance(exc, OSError):
            raise WriteFailed(pending.final, _why(exc)) from exc
        raise
    pending.finish(fh)
    pending.commit()


def write_bytes(
    path: str | os.PathLike, data: bytes, check: Callable[[Path], None] | None = None
) -> Path:
    """`data` as the whole file `path`, by the rule; the size on disk is checked."""

    def same_size(temp: Path) -> None:
        if temp.stat().st_size != len(data):
            raise WriteFailed(path, f"{temp.stat().st_size:,} of {len(data):,} bytes were written")
        if check is not None:
            check(temp)

    with written(path, "wb", check=same_size) as fh:
        fh.write(data)
    return Path(path)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """`text` (UTF-8) as the whole file `path`, by the rule."""
    return write_bytes(path, text.encode("utf-8"))


def check_pdf(path: Path) -> None:
    """A PDF re-opened: it parses, and has at least one page (`WriteFailed` otherwise)."""
    import pypdf

    try:
        pages = len(pypdf.PdfReader(path, strict=False).pages)
    except Exception as exc:  # pypdf raises many kinds on a truncated file
        raise WriteFailed(path, f"the PDF written does not read back ({_why(exc)})") from None
    if pages < 1:
        raise WriteFailed(path, "the PDF written has no page")


class Batch:
    """Several files written by the rule and renamed into place together, only when every
    one is written and checked (an export's tables): a failure leaves every final name as
    it was. ``with Batch() as batch: fh = batch.open(path); …``; `paths` are the files
    written, in order."""

    def __init__(self) -> None:
        self._pending: list[tuple[Pending, IO[Any] | None]] = []
        self.paths: list[Path] = []

    def open(self, path: str | os.PathLike, check: Callable[[Path], None] | None = None) -> IO[Any]:
        pending = Pending(path, check)
        fh = pending.open("w")
        self._pending.append((pending, fh))
        return fh

    def adopt(self, pending: Pending, fh: IO[Any] | None = None) -> None:
        """A file the caller wrote to a `Pending` of its own (a spool)."""
        self._pending.append((pending, fh))

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is None:
            try:
                for pending, fh in self._pending:
                    pending.finish(fh)
            except BaseException:
                self._discard()
                raise
            for pending, _ in self._pending:
                self.paths.append(pending.commit())
            return
        self._discard()
        if isinstance(exc, OSError):
            where = next((p.final for p, _ in reversed(self._pending)), None)
            if where is not None:
                raise WriteFailed(where, _why(exc)) from exc

    def _discard(self) -> None:
        for pending, fh in self._pending:
            if fh is not None:
                with contextlib.suppress(OSError, ValueError):
                    fh.close()
            pending.discard()


def earlier_exports(
    folder: Path, written: list[Path], is_export: Callable[[Path], bool]
) -> list[Path]:
    """The tables of an earlier gbdesk export in `folder` that this one did not write
    (`is_export`: a file gbdesk exported), so that they are named, not mistaken for these
    runs' tables."""
    names = {p.name for p in written}
    out = []
    with contextlib.suppress(OSError):
        for path in sorted(folder.iterdir()):
            if path.name in names or path.suffix.lower() != ".csv" or path.is_symlink():
                continue
            if path.is_file() and is_export(path):
                out.append(path)
    return out


def leftovers(folder: Path) -> list[Path]:
    """Temporary files a killed gbdesk left in `folder` (``.NAME.XXXX.tmp``; only a kill
    leaves one: every other failure removes its own)."""
    with contextlib.suppress(OSError):
        return sorted(p for p in folder.glob(".*.tmp") if p.is_file() and not p.is_symlink())
    return []


__all__ = [
    "Batch",
    "Pending",
    "WriteFailed",
    "check_pdf",
    "earlier_exports",
    "leftovers",
    "refuse_link",
    "write_bytes",
    "write_text",
    "written",
]
