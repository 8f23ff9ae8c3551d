"""A folder uploaded from the browser, written to disk as its request body arrives.

The browser sends each file of the folder as a part of a `multipart/form-data` body,
named by its path inside the folder. The parts are parsed as they come (python-multipart's
streaming parser) and each file's bytes go straight to its place under the target folder:
nothing is held in memory beyond one piece of the body, and nothing goes through the
system's temporary folder. `write` and `finish` do disk work: call them off the event loop.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import BinaryIO

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from taverna.errors import FormatError, TavernaError
from taverna.server.errors import PayloadTooLarge

MIB = 1024 * 1024


def safe_relative(name: str) -> PurePosixPath:
    """A path from the browser made safe to write under a folder: no root, no `..`."""
    parts = [
        p for p in PurePosixPath(name.replace("\\", "/")).parts if p not in ("", ".", "..", "/")
    ]
    if not parts:
        raise TavernaError(
            "an uploaded file has no name", field="files", code="uploaded_file_has_no_name"
        )
    if any(ord(c) < 0x20 or c == "\x7f" for p in parts for c in p):
        raise FormatError(
            "a file name holds a control character",
            file=name,
            field="files",
            code="file_name_holds_control_character",
        )
    return PurePosixPath(*parts)


def multipart_boundary(content_type: str) -> bytes:
    """The boundary of a `multipart/form-data` body; TavernaError for any other body."""
    kind, options = parse_options_header(content_type)
    boundary = options.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise TavernaError(
            "upload the folder's files as multipart/form-data (a field `files` per file)",
            field="files",
            code="upload_folder_s_files_as",
        )
    return boundary


class FolderWriter:
    """Writes the files of field `field` of a multipart body under `root`, part by part.

    Refuses (PayloadTooLarge) more than `max_files` files or `max_bytes` bytes of files,
    and (FormatError, naming the path) a file whose path is also a folder's.
    """

    def __init__(
        self, root: Path, boundary: bytes, *, field: str, max_files: int, max_bytes: int
    ) -> None:
        self.root = root
        self.field = field
        self.max_files = max_files
        self.max_bytes = max_bytes
        self.files = 0
        self.size = 0
        self._ended = False
        self._header_name = bytearray()
        self._header_value = bytearray()
        self._headers: dict[bytes, bytes] = {}
        self._out: BinaryIO | None = None
        self._path = ""
        self._parser = MultipartParser(
            boundary,
            {
                "on_part_begin": self._part_begin,
                "on_header_field": self._header_field,
                "on_header_value": self._header_value_part,
                "on_header_end": self._header_end,
                "on_headers_finished": self._headers_finished,
                "on_part_data": self._part_data,
                "on_part_end": self._part_end,
                "on_end": self._end,
            },
        )

    def write(self, data: bytes) -> None:
        """Parse the next piece of the body, writing what it holds."""
        try:
            self._parser.write(data)
        except MultipartParseError as exc:
            raise FormatError(
                f"the upload is not valid multipart data: {exc}",
                code="upload_is_not_valid_multipart",
                params={"exc": str(exc)},
            ) from None

    def finish(self) -> int:
        """After the whole body: the number of files written. A body cut short is refused."""
        self._parser.finalize()
        self._close_file()
        if not self._ended:
            raise FormatError(
                "the upload ended before its last file was complete",
                code="upload_cut_short",
            )
        return self.files

    def abort(self) -> None:
        """Close what is open (the caller removes the folder)."""
        self._close_file()

    # ------------------------------------------------------------ parser callbacks

    def _part_begin(self) -> None:
        self._headers = {}

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def _header_value_part(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _header_end(self) -> None:
        self._headers[bytes(self._header_name).lower()] = bytes(self._header_value)
        self._header_name.clear()
        self._header_value.clear()

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        filename = options.get(b"filename")
        if options.get(b"name") != self.field.encode() or filename is None:
            return  # another field: not part of the folder
        self.files += 1
        if self.files > self.max_files:
            raise PayloadTooLarge(
                f"the folder has more than {self.max_files} files",
                field="files",
                code="folder_has_more_than_files",
                params={"max_files": str(self.max_files)},
            )
        name = filename.decode("utf-8", "replace")
        relative = safe_relative(name)
        target = self.root / relative
        self._path = relative.as_posix()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            self._out = target.open("xb")
        except (FileExistsError, NotADirectoryError, IsADirectoryError):
            raise FormatError(
                "the folder holds a file and a folder of the same name, or the same file twice",
                file=self._path,
                field="files",
                code="folder_names_clash",
            ) from None
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise FormatError(
                f"this file cannot be written: {reason}",
                file=self._path,
                field="files",
                code="this_file_cannot_be_written",
                params={"reason": str(reason)},
            ) from None

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._out is None:
            return
        self.size += end - start
        if self.size > self.max_bytes:
            raise PayloadTooLarge(
                f"the folder's files are larger than {self.max_bytes / MIB:g} MiB",
                field="files",
                code="folder_s_files_are_larger",
                params={"value": format(self.max_bytes / MIB, "g")},
            )
        self._out.write(data[start:end])

    def _part_end(self) -> None:
        self._close_file()

    def _end(self) -> None:
        self._ended = True

    def _close_file(self) -> None:
        if self._out is not None:
            out, self._out = self._out, None
            out.close()
