"""``fairmt data download {winomt,geneval,bios,lexicons,flores200}``: fetch benchmark files into the local data cache.

The files land in :func:`fairmt.data.paths.cache_dir` (``$FAIRMT_CACHE/data`` or ``~/.cache/fairmt/data``), or
``dest``, in the same layout as the project's shared data folder, so that ``FAIRMT_DATA`` may point at either:

* ``winomt/`` — gabrielStanovsky/mt_gender: ``aggregates/en*.txt`` (from ``data/aggregates/``),
  ``translations/<system>/en-XX.txt``, ``LICENSE``;
* ``mt_geneval/`` — amazon-science/machine-translation-gender-eval: ``sentences/{dev,test}/`` (+ ``annotated/``),
  ``context/``, ``LICENSE``, ``NOTICE`` (from the repository's ``data/`` folder);
* ``bios/`` — the Bias-in-Bios sample of the offline classification recipes: ``bios_28prof_x10.csv`` (10
  biographies of LabHC/bias_in_bios for each of its 28 professions) and ``bios_accountant_1000.csv``, from a public
  repository at a fixed commit that keeps the sample as one CSV per profession: the 28 files are fetched, each
  checked against its pinned sha256, and joined (header once) into the one file, whose sha256 is checked too;
* ``lexicons/`` — Zhao et al. (2018)'s WinoBias word lists (uclanlp/corefBias at a fixed commit, MIT):
  ``corefBias_generalized_swaps.txt``, ``corefBias_extra_gendered_words.txt`` and ``corefBias_LICENSE`` (the GACL
  lexicon ``zhao2018``, :mod:`fairmt.data.zhao_lexicon`);
* ``flores200/`` — the FLORES-200 tarball (``flores200_dataset.tar.gz``), unpacked without its top folder:
  ``flores200/{dev,devtest}/<lang>.{dev,devtest}``.

Every file's size and sha256 are pinned in ``fairmt/resources/data_manifest.json`` (made by
``scripts/make_data_manifest.py`` from a verified copy). A file that does not match is an error and nothing of the
failed download is left behind: files are first written to a staging folder, checked, and only then moved into
place. A few files have no plain upstream URL (the 2019 WinoMT gold lives in mt_gender's history; the 2019 logs
and the alignment file are evaluator output): they are fetched only from a mirror given with ``base_url``, which
must be laid out like the data folder (``{base_url}/winomt/aggregates/en.txt``,
``{base_url}/flores200_dataset.tar.gz``); ``file://`` URLs work too.

The FLORES-200 tarball's hash is not pinned (no verified copy was at hand when the manifest was made). Pass
``sha256=`` (``--sha256``) to check it; otherwise its sha256 is printed and written to ``flores200/SHA256SUMS``
with a warning, so later runs and other machines can be compared.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import lzma
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
import warnings
import zlib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PurePosixPath

from fairmt.errors import FairmtError

DATASETS = ("winomt", "geneval", "bios", "lexicons", "flores200")
ALIASES = {
    "mt_geneval": "geneval",
    "flores": "flores200",
    "flores-200": "flores200",
    "bias_in_bios": "bios",
    "corefbias": "lexicons",
}
USER_AGENT = "fairmt-data-download"


@dataclass(frozen=True)
class RemotePart:
    """One upstream file of a :class:`RemoteFile` that is the join of several (its URL and checksum)."""

    url: str
    sha256: str
    size: int


@dataclass(frozen=True)
class RemoteFile:
    """One file of a dataset: where it goes (relative to the data root), where it comes from, its checksum.

    A file with ``parts`` has no upstream copy of its own: it is the upstream ``parts`` joined in order, each after
    the first without its first ``header_lines`` lines (a CSV header); a mirror (``base_url``) serves it whole."""

    path: str
    url: str | None
    sha256: str
    size: int
    parts: tuple[RemotePart, ...] = ()
    header_lines: int = 0


@dataclass(frozen=True)
class RemoteArchive:
    """A tarball unpacked under ``target`` (minus ``strip_components`` leading folders; only ``include`` paths)."""

    name: str
    url: str
    sha256: str | None
    target: str
    strip_components: int = 1
    include: tuple[str, ...] = ()


@dataclass
class DownloadReport:
    """What a download did."""

    dataset: str
    dest: str
    downloaded: list[str] = field(default_factory=list)
    already_present: list[str] = field(default_factory=list)
    unavailable: list[str] = field(default_factory=list)
    """Files that have no upstream URL and were skipped because no mirror (``base_url``) was given."""
    archive_sha256: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [
            f"{self.dataset}: {len(self.downloaded)} downloaded, {len(self.already_present)} already present "
            f"(checksums verified) in {self.dest}"
        ]
        if self.unavailable:
            lines.append(
                f"  {len(self.unavailable)} files have no upstream URL and need a mirror (--base-url): "
                + ", ".join(self.unavailable[:5])
                + (" ..." if len(self.unavailable) > 5 else "")
            )
        lines += [f"  {name}: sha256 {digest}" for name, digest in self.archive_sha256.items()]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def load_manifest() -> dict:
    """The packaged manifest (``fairmt/resources/data_manifest.json``)."""
    text = resources.files("fairmt").joinpath("resources", "data_manifest.json").read_text(encoding="utf-8")
    return json.loads(text)


def canonical(dataset: str) -> str:
    """The manifest name of ``dataset`` (accepts ``mt_geneval`` for ``geneval``), or a clear error."""
    name = ALIASES.get(dataset, dataset)
    if name not in DATASETS:
        raise FairmtError(f"unknown dataset {dataset!r}; available: {', '.join(DATASETS)}")
    return name


def dataset_files(dataset: str) -> tuple[list[RemoteFile], list[RemoteArchive]]:
    """The files and archives the manifest lists for ``dataset``."""
    entry = load_manifest()["datasets"][canonical(dataset)]
    files = [
        RemoteFile(
            f["path"],
            f["url"],
            f["sha256"],
            f["size"],
            tuple(RemotePart(p["url"], p["sha256"], p["size"]) for p in f.get("parts", ())),
            f.get("header_lines", 0),
        )
        for f in entry["files"]
    ]
    archives = [
        RemoteArchive(
            a["name"], a["url"], a["sha256"], a["target"], a.get("strip_components", 1), tuple(a.get("include", ()))
        )
        for a in entry["archives"]
    ]
    return files, archives


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _url_for(rel: str, upstream: str | None, base_url: str | None) -> str | None:
    if base_url:
        return mirror_url(base_url).rstrip("/") + "/" + rel
    return upstream


def mirror_url(base_url: str) -> str:
    """``--base-url`` as a URL: a local folder (``/srv/mirror``, ``./mirror``) becomes its ``file://`` URL; a URL
    with a scheme urllib cannot fetch is one line (was urllib's ``unknown url type`` traceback)."""
    import urllib.parse

    scheme = urllib.parse.urlsplit(base_url).scheme.lower()
    if scheme in ("http", "https", "file", "ftp"):
        return base_url
    if not scheme or len(scheme) == 1:  # a path (a Windows drive letter looks like a one-letter scheme)
        folder = Path(base_url).expanduser().resolve()
        if not folder.is_dir():
            raise FairmtError(
                f"--base-url {base_url}: no such folder (give a mirror's URL or a local folder laid out "
                "like the data folder)"
            )
        return folder.as_uri()
    raise FairmtError(f"--base-url {base_url}: unsupported scheme {scheme!r}; use http(s)://, file:// or a folder")


def _fetch(url: str, out: Path, *, progress: bool = False, desc: str = "") -> None:
    """Stream ``url`` into ``out``; a clear :class:`FairmtError` on any network/HTTP failure."""
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    total = None
    try:
        from fairmt.hub import network_timeout

        with urllib.request.urlopen(req, timeout=network_timeout()) as resp, out.open("wb") as fh:
            total = int(resp.headers.get("Content-Length") or 0) or None
            bar = None
            if progress:
                from tqdm.auto import tqdm

                bar = tqdm(total=total, unit="B", unit_scale=True, desc=desc or Path(url).name, leave=False)
            for block in iter(lambda: resp.read(1 << 16), b""):
                try:
                    fh.write(block)
                except OSError as err:
                    raise _WriteError(err) from None
                if bar is not None:
                    bar.update(len(block))
            if bar is not None:
                bar.close()
    except _WriteError as err:
        raise FairmtError(_write_failure(err.error, out, url, total)) from None
    except urllib.error.HTTPError as err:
        raise FairmtError(f"download of {url} failed: HTTP {err.code} {err.reason}") from None
    except (urllib.error.URLError, OSError, TimeoutError) as err:
        reason = getattr(err, "reason", err)
        if isinstance(reason, TimeoutError):
            from fairmt.hub import network_timeout, timeout_hint

            reason = f"no answer within {network_timeout():g} s ({timeout_hint()})"
        raise FairmtError(
            f"download of {url} failed ({reason}); check the network or give --base-url for a mirror, "
            "or point FAIRMT_DATA at a directory that already holds the data"
        ) from None


class _WriteError(Exception):
    """An OSError while writing a downloaded file (told apart from the network's OSErrors)."""

    def __init__(self, error: OSError):
        super().__init__(str(error))
        self.error = error


def _write_failure(err: OSError, out: Path, url: str, total: int | None) -> str:
    """One line for a write that failed during a download: a full disk says so, with the free space and the size
    needed, instead of blaming the network."""
    folder = out.parent
    for parent in (out, *out.parents):  # name the data folder, not fairmt's staging folder inside it
        if parent.name.startswith(".fairmt-staging-"):
            folder = parent.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    need = f" (needs ~{total / 1e6:.0f} MB for {Path(url).name})" if total else ""
    try:
        free = f"; {shutil.disk_usage(folder).free / 1e6:.0f} MB free there"
    except OSError:
        free = ""
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        what = f"no space left on {folder}{need}{free}"
    elif err.errno == errno.EFBIG:
        what = f"file too large for {folder} (a file-size limit, `ulimit -f`?){need}"
    else:
        what = f"cannot write {out}: {err.strerror or err}"
    return f"download of {url} stopped: {what}. Nothing was moved into the data folder; free space or give --dest"


def _check(path: Path, rel: str, url: str, sha256: str, size: int | None) -> None:
    got_size = path.stat().st_size
    digest = sha256_file(path)
    if digest != sha256 or (size is not None and got_size != size):
        raise FairmtError(
            f"checksum mismatch for {rel} from {url}: expected sha256 {sha256} ({size} bytes), got {digest} "
            f"({got_size} bytes). Nothing was written; the upstream file may have changed or the mirror is wrong"
        )


def _fetch_joined(f: RemoteFile, out: Path, staging: Path) -> str:
    """Fetch ``f``'s upstream parts into ``staging``, check each, and join them into ``out`` (each part after the
    first without its header lines, which must equal the first part's). Returns a description for errors."""
    first_header = None
    pieces = []
    for i, part in enumerate(f.parts):
        tmp = staging / ".parts" / f"{i:03d}"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        _fetch(part.url, tmp)
        _check(tmp, f"{f.path} (part {i + 1} of {len(f.parts)})", part.url, part.sha256, part.size)
        data = tmp.read_bytes()
        tmp.unlink()
        cut = 0
        for _ in range(f.header_lines):
            cut = data.index(b"\n", cut) + 1
        header, body = data[:cut], data[cut:]
        if first_header is None:
            first_header = header
            pieces.append(data)
        else:
            if header != first_header:  # pinned checksums make this a manifest error, not a network one
                raise FairmtError(
                    f"{f.path}: part {part.url} has another header than the first part; the manifest is wrong"
                )
            pieces.append(body)
    from fairmt.outputs import write_file

    write_file(out, b"".join(pieces), what=f"{f.path} (joined from {len(f.parts)} upstream files)")
    return f"the {len(f.parts)} upstream files joined"


def _present_and_valid(path: Path, f: RemoteFile) -> bool:
    return path.is_file() and path.stat().st_size == f.size and sha256_file(path) == f.sha256


def _escapes(name: str) -> bool:
    p = PurePosixPath(name)
    return p.is_absolute() or ".." in p.parts or name.startswith("\\") or ":" in (p.parts[0] if p.parts else "")


def _safe_rel(name: str, strip: int) -> PurePosixPath | None:
    """The member's path below the target folder, or None for a leading folder entry stripped away."""
    parts = [p for p in PurePosixPath(name).parts if p not in ("", ".")]
    if len(parts) <= strip:
        return None
    return PurePosixPath(*parts[strip:])


def _unpack(archive: Path, spec: RemoteArchive, staging: Path, url: str) -> list[str]:
    """Copy the archive's included regular files under ``staging/target``. An archive with a member that would
    land outside the target folder (absolute path, ``..``) or with a link / device member is refused as a whole:
    nothing of it is kept (the caller's staging folder is discarded)."""
    try:
        return _unpack_checked(archive, spec, staging)
    except OSError as err:
        if err.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise
        raise FairmtError(_write_failure(err, staging / spec.target, url, archive.stat().st_size * 4)) from None
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile) as err:
        why = (str(err).splitlines() or ["cut short"])[0].rstrip(":")
        raise FairmtError(
            f"{spec.name}: not a readable tar archive ({type(err).__name__}: {why}); the file "
            f"downloaded from {url} is corrupt, cut short or not the dataset archive. Nothing "
            "was unpacked; try again, use another --base-url mirror, or pass --sha256 to catch a bad file early"
        ) from None


def _unpack_checked(archive: Path, spec: RemoteArchive, staging: Path) -> list[str]:
    written = []
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        for member in members:
            bad = None
            if _escapes(member.name):
                bad = "its path leaves the target folder"
            elif member.issym() or member.islnk():
                bad = f"it is a link (to {member.linkname!r})"
            elif not (member.isfile() or member.isdir()):
                bad = "it is a device, FIFO or other special file"
            if bad:
                raise FairmtError(
                    f"{spec.name}: refusing the archive: member {member.name!r} is unsafe ({bad}); nothing was "
                    "unpacked. The file at the URL is not the expected dataset archive"
                )
        for member in members:
            rel = _safe_rel(member.name, spec.strip_components)
            if rel is None or not member.isfile():
                continue
            if spec.include and not any(str(rel) == inc or str(rel).startswith(inc) for inc in spec.include):
                continue
            out = staging / spec.target / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(member)
            assert src is not None
            with src, out.open("wb") as fh:
                shutil.copyfileobj(src, fh)
            written.append(f"{spec.target}/{rel}")
    if not written:
        raise FairmtError(f"{spec.name}: the archive holds none of the expected files ({', '.join(spec.include)})")
    return written


def download(
    dataset: str,
    *,
    dest: str | Path | None = None,
    base_url: str | None = None,
    force: bool = False,
    sha256: str | None = None,
    progress: bool = True,
) -> DownloadReport:
    """Fetch ``dataset`` (``winomt``, ``geneval``/``mt_geneval``, ``bios``, ``lexicons`` or ``flores200``) into ``dest``.

    ``dest`` defaults to :func:`fairmt.data.paths.cache_dir`. Files already present with the right checksum are
    kept (unless ``force``). ``base_url`` replaces the upstream URLs by a mirror laid out like the data folder.
    ``sha256`` pins the checksum of a dataset's archive (FLORES-200) when the manifest does not.
    Raises :class:`FairmtError` on a network failure or a checksum mismatch; then nothing is moved into ``dest``.
    """
    from fairmt.data.paths import cache_dir

    name = canonical(dataset)
    root = Path(dest) if dest is not None else cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    files, archives = dataset_files(name)
    report = DownloadReport(dataset=name, dest=str(root))
    if os.environ.get("FAIRMT_DATA") and dest is None:
        report.notes.append(
            f"FAIRMT_DATA is set ({os.environ['FAIRMT_DATA']}): fairmt reads data from there, not from this cache"
        )

    staging = Path(tempfile.mkdtemp(prefix=f".fairmt-staging-{name}-", dir=root))
    try:
        todo: list[tuple[RemoteFile, str | None]] = []
        for f in files:
            if not force and _present_and_valid(root / f.path, f):
                report.already_present.append(f.path)
                continue
            url = _url_for(f.path, f.url, base_url)
            if url is None and not f.parts:
                report.unavailable.append(f.path)
                continue
            todo.append((f, url))
        bar = None
        if progress and todo:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(todo), unit="file", desc=f"download {name}")
        for f, url in todo:
            out = staging / f.path
            out.parent.mkdir(parents=True, exist_ok=True)
            if url is None:  # no upstream copy of its own, no mirror: join its upstream parts
                url = _fetch_joined(f, out, staging)
            else:
                _fetch(url, out)
            _check(out, f.path, url, f.sha256, f.size)
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()

        unpacked: list[str] = []
        for a in archives:
            marker = root / a.target / "SHA256SUMS"
            if not force and marker.is_file() and (root / a.target).is_dir():
                report.already_present.append(a.target + "/")
                continue
            url = _url_for(a.name, a.url, base_url)
            tmp_archive = staging / a.name
            _fetch(url, tmp_archive, progress=progress, desc=a.name)
            digest = sha256_file(tmp_archive)
            pinned = sha256 or a.sha256
            if pinned is not None and digest != pinned.lower():
                raise FairmtError(
                    f"checksum mismatch for {a.name} from {url}: expected sha256 {pinned}, got {digest}. "
                    "Nothing was written"
                )
            if pinned is None:
                warnings.warn(
                    f"{a.name}: no pinned sha256 to verify against; got {digest} (recorded in "
                    f"{a.target}/SHA256SUMS). Pass --sha256 to check it.",
                    stacklevel=2,
                )
                report.notes.append(f"{a.name} not verified against a pinned checksum (sha256 {digest})")
            report.archive_sha256[a.name] = digest
            unpacked += _unpack(tmp_archive, a, staging, url)
            tmp_archive.unlink()
            from fairmt.outputs import write_file

            write_file(staging / a.target / "SHA256SUMS", f"{digest}  {a.name}\n", what="the archive's checksum")

        # everything fetched and checked: move into place
        for f, _ in todo:
            target = root / f.path
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / f.path, target)
            report.downloaded.append(f.path)
        for a in archives:
            src = staging / a.target
            if src.is_dir():
                for p in sorted(src.rglob("*")):
                    if p.is_file():
                        target = root / p.relative_to(staging)
                        target.parent.mkdir(parents=True, exist_ok=True)
                        os.replace(p, target)
        report.downloaded += unpacked
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return report


@dataclass
class VerifyReport:
    """Checksum verification of an existing data folder against the manifest."""

    dataset: str
    root: str
    ok: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when no file is missing or different."""
        return not self.missing and not self.mismatched

    def __str__(self) -> str:
        s = f"{self.dataset} in {self.root}: {len(self.ok)} ok, {len(self.missing)} missing, {len(self.mismatched)} differ"
        if self.mismatched:
            s += "\n  differ: " + ", ".join(self.mismatched[:10])
        if self.missing:
            s += "\n  missing: " + ", ".join(self.missing[:10])
        return s


def verify(dataset: str, root: str | Path | None = None) -> VerifyReport:
    """Check the files of ``dataset`` under ``root`` (default: the data root) against the manifest's sha256.

    For an unpacked archive (FLORES-200) only the presence of its ``SHA256SUMS`` record is checked.
    """
    from fairmt.data.paths import data_root

    name = canonical(dataset)
    base = Path(root) if root is not None else data_root()
    files, archives = dataset_files(name)
    rep = VerifyReport(dataset=name, root=str(base))
    for a in archives:  # unpacked archives: only their recorded checksum file can be checked
        marker = f"{a.target}/SHA256SUMS"
        (rep.ok if (base / marker).is_file() else rep.missing).append(marker)
    for f in files:
        p = base / f.path
        if not p.is_file():
            rep.missing.append(f.path)
        elif p.stat().st_size != f.size or sha256_file(p) != f.sha256:
            rep.mismatched.append(f.path)
        else:
            rep.ok.append(f.path)
    return rep


__all__ = [
    "DATASETS",
    "DownloadReport",
    "RemoteArchive",
    "RemoteFile",
    "RemotePart",
    "VerifyReport",
    "canonical",
    "dataset_files",
    "download",
    "load_manifest",
    "sha256_file",
    "verify",
]
