"""The records on this machine: `<home>/dreams/<tenant>/` (`LocalArchive`), or one folder whoever the
tenant (`FolderArchive`, the viewer's `--dream DIR`). The port is `port.DreamArchive`; in the bucket on
AWS, `aws.dream_archive.S3Archive`."""

from __future__ import annotations

from pathlib import Path

from episodic.dream.port import DreamArchive, StoredFile
from episodic.kernel.models import check_tenant

DREAM_FOLDER = "dreams"  # below the home: `<home>/dreams/<tenant>/`


class LocalArchive(DreamArchive):
    def __init__(self, root: Path) -> None:
        self.root = root

    def folder(self, tenant_id: str) -> Path:
        return self.root / check_tenant(tenant_id)

    def files(self, tenant_id: str) -> list[StoredFile]:
        folder = self.folder(tenant_id)
        if not folder.is_dir():
            return []
        found = []
        for path in folder.iterdir():
            if path.is_file():
                stat = path.stat()
                found.append(StoredFile(path.name, stat.st_size, stat.st_mtime))
        return found

    def read_file(self, tenant_id: str, name: str) -> str | None:
        path = self.folder(tenant_id) / name
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None

    def write_file(self, tenant_id: str, name: str, text: str) -> str:
        folder = self.folder(tenant_id)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        partial = path.with_suffix(path.suffix + ".partial")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)  # a reader never sees half a record
        return str(path)


class FolderArchive(LocalArchive):
    """One folder of records, whoever the tenant (the viewer's `--dream DIR`)."""

    def folder(self, tenant_id: str) -> Path:
        return self.root


def local_archive(home: Path) -> LocalArchive:
    """The records beside the index: `<home>/dreams/<tenant>/`."""
    return LocalArchive(home / DREAM_FOLDER)
