"""``fairmt data download {winomt,geneval,flores200}`` and ``fairmt data verify``."""

from __future__ import annotations


def _download(args) -> int:
    from fairmt.data.download import download

    for name in args.datasets:
        report = download(
            name, dest=args.dest, base_url=args.base_url, force=args.force, sha256=args.sha256, progress=not args.quiet
        )
        print(report)
    return 0


def _verify(args) -> int:
    from fairmt.data.download import verify

    ok = True
    for name in args.datasets:
        report = verify(name, args.root)
        print(report)
        ok &= report.passed
    return 0 if ok else 1


def register(groups) -> None:
    """Add ``download`` and ``verify`` to the ``fairmt data`` group."""
    p = groups["data"].add_parser(
        "download",
        help="fetch benchmark data (winomt, geneval, flores200) into the local cache, checking sha256",
        description="Fetch benchmark files into the data cache ($FAIRMT_CACHE/data or ~/.cache/fairmt/data) in the "
        "layout FAIRMT_DATA expects, verifying each file's pinned sha256. Datasets: winomt, geneval (mt_geneval), "
        "flores200.",
    )
    p.add_argument("datasets", nargs="+", metavar="DATASET", help="winomt, geneval (or mt_geneval), flores200")
    p.add_argument("--dest", default=None, help="download into this folder instead of the cache")
    p.add_argument(
        "--base-url",
        default=None,
        help="a mirror laid out like the data folder (e.g. http://host/data, file:///srv/data) used instead of the "
        "upstream URLs; also the only source of files without an upstream URL",
    )
    p.add_argument("--sha256", default=None, help="expected sha256 of a dataset archive (FLORES-200) not pinned in fairmt")
    p.add_argument("--force", action="store_true", help="download again even when files are present and valid")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(handler=_download)

    v = groups["data"].add_parser("verify", help="check a data folder's files against the pinned sha256 checksums")
    v.add_argument("datasets", nargs="+", metavar="DATASET", help="winomt, geneval")
    v.add_argument("--root", default=None, help="the data folder (default: FAIRMT_DATA or the cache)")
    v.set_defaults(handler=_verify)
