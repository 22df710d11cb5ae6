"""`fairmt data download` against a local HTTP server (127.0.0.1, started here) serving the real data folder."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import io
import os
import re
import tarfile
from pathlib import Path

import pytest

from fairmt.data import download as dl
from fairmt.errors import FairmtError
from http_standins import serving


class _Handler(http.server.SimpleHTTPRequestHandler):
    corrupt: set[str] = set()

    def log_message(self, *args):  # keep test output quiet
        pass

    def send_head(self):
        if self.path.lstrip("/") in self.corrupt:
            body = b"tampered\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return io.BytesIO(body)
        return super().send_head()


@pytest.fixture
def serve():
    """Start an HTTP server on 127.0.0.1 serving a folder; returns (base_url, handler class). Shut down after."""
    with contextlib.ExitStack() as servers:

        def start(folder: Path, corrupt: set[str] = frozenset()):
            handler = type("H", (_Handler,), {"corrupt": set(corrupt)})
            httpd = servers.enter_context(serving(functools.partial(handler, directory=str(folder))))
            httpd.timeout = 5
            return f"http://127.0.0.1:{httpd.server_address[1]}"

        yield start


def test_manifest_matches_shared_data(shared_data):
    """The pinned checksums are those of the real data folder (which FAIRMT_DATA may point at)."""
    for name in ("winomt", "geneval"):
        rep = dl.verify(name, shared_data)
        assert rep.passed, str(rep)
        assert len(rep.ok) == {"winomt": 70, "geneval": 184}[name]


def test_manifest_urls():
    files, _ = dl.dataset_files("winomt")
    by_path = {f.path: f for f in files}
    assert by_path["winomt/aggregates/en.txt"].url == (
        "https://raw.githubusercontent.com/gabrielStanovsky/mt_gender/master/data/aggregates/en.txt"
    )
    assert by_path["winomt/aggregates_acl2019/en.txt"].url is None  # history version: mirror only
    files, _ = dl.dataset_files("mt_geneval")  # alias
    assert all(
        f.url.startswith("https://raw.githubusercontent.com/amazon-science/machine-translation-gender-eval/")
        for f in files
    )
    _, archives = dl.dataset_files("flores200")
    assert archives[0].url == "https://dl.fbaipublicfiles.com/nllb/flores200_dataset.tar.gz"
    with pytest.raises(FairmtError, match="available: winomt, geneval, bios, lexicons, flores200"):
        dl.dataset_files("wmt")


def test_download_winomt_from_mirror(shared_data, serve, tmp_path, monkeypatch):
    base = serve(shared_data)
    dest = tmp_path / "cache"
    rep = dl.download("winomt", dest=dest, base_url=base, progress=False)
    assert len(rep.downloaded) == 70 and not rep.unavailable
    assert (dest / "winomt/aggregates_acl2019/en.txt").read_bytes() == (
        shared_data / "winomt/aggregates_acl2019/en.txt"
    ).read_bytes()
    assert dl.verify("winomt", dest).passed
    assert not [p for p in dest.iterdir() if p.name.startswith(".fairmt-staging")]
    # second run: nothing fetched again
    rep2 = dl.download("winomt", dest=dest, base_url=base, progress=False)
    assert rep2.downloaded == [] and len(rep2.already_present) == 70
    # FAIRMT_DATA pointed at the cache reads from it
    monkeypatch.setenv("FAIRMT_DATA", str(dest))
    from fairmt.data.paths import data_path

    assert data_path("winomt", "aggregates", "en.txt").is_file()


def test_download_geneval_default_cache_then_evaluate(shared_data, serve, tmp_path, monkeypatch):
    base = serve(shared_data)
    monkeypatch.setenv("FAIRMT_CACHE", str(tmp_path / "fc"))
    monkeypatch.delenv("FAIRMT_DATA", raising=False)
    rep = dl.download("geneval", base_url=base, progress=False)
    assert Path(rep.dest) == tmp_path / "fc" / "data"
    assert len(rep.downloaded) == 184
    from fairmt.eval.geneval import load_counterfactual

    d = load_counterfactual("it", "test")  # read from the cache: FAIRMT_DATA unset
    assert len(d.feminine_refs) == 300


def test_checksum_mismatch_leaves_nothing(shared_data, serve, tmp_path):
    base = serve(shared_data, corrupt={"winomt/translations/google/en-de.txt"})
    dest = tmp_path / "cache"
    with pytest.raises(FairmtError, match=r"checksum mismatch for winomt/translations/google/en-de.txt") as err:
        dl.download("winomt", dest=dest, base_url=base, progress=False)
    assert "expected sha256" in str(err.value) and "Nothing was written" in str(err.value)
    assert [p for p in dest.rglob("*")] == []  # not even the files fetched before the bad one


def test_upstream_urls_used_without_mirror(shared_data, serve, tmp_path, monkeypatch):
    """Without --base-url each file's own (upstream) URL is fetched; files without one are reported."""
    base = serve(shared_data)
    files, archives = dl.dataset_files("winomt")
    keep = [f for f in files if f.path in ("winomt/aggregates/en.txt", "winomt/aggregates_acl2019/en.txt")]
    faked = [dl.RemoteFile(f.path, f"{base}/{f.path}" if f.url else None, f.sha256, f.size) for f in keep]
    monkeypatch.setattr(dl, "dataset_files", lambda name: (faked, archives))
    rep = dl.download("winomt", dest=tmp_path, progress=False)
    assert rep.downloaded == ["winomt/aggregates/en.txt"]
    assert rep.unavailable == ["winomt/aggregates_acl2019/en.txt"]
    assert "need a mirror (--base-url)" in str(rep)


def test_network_failure_is_clear(tmp_path):
    with pytest.raises(FairmtError, match="download of http://127.0.0.1:9/winomt/.* failed"):
        dl.download("winomt", dest=tmp_path, base_url="http://127.0.0.1:9", progress=False)
    assert list(tmp_path.iterdir()) == []


def _flores_tarball(folder: Path, extra: tuple = ()) -> Path:
    tar_path = folder / "flores200_dataset.tar.gz"
    with tarfile.open(tar_path, "w:gz") as tar:

        def add(name, text):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

        add("flores200_dataset/devtest/eng_Latn.devtest", "Hello.\nGood morning.\n")
        add("flores200_dataset/devtest/deu_Latn.devtest", "Hallo.\nGuten Morgen.\n")
        add("flores200_dataset/dev/deu_Latn.dev", "Tag.\n")
        add("flores200_dataset/metadata_devtest.tsv", "x\n")  # not included
        for member in extra:
            tar.addfile(member, io.BytesIO(b"outside\n") if member.isfile() else None)
    return tar_path


def test_flores200_archive(serve, tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    tar_path = _flores_tarball(mirror)
    digest = hashlib.sha256(tar_path.read_bytes()).hexdigest()
    base = serve(mirror)
    dest = tmp_path / "cache"
    with pytest.warns(UserWarning, match="no pinned sha256"):
        rep = dl.download("flores200", dest=dest, base_url=base, progress=False)
    assert rep.archive_sha256 == {"flores200_dataset.tar.gz": digest}
    assert (dest / "flores200/SHA256SUMS").read_text().startswith(digest)
    assert not (dest / "flores200/metadata_devtest.tsv").exists()
    monkeypatch.setenv("FAIRMT_DATA", str(dest))
    from fairmt.eval.translation import flores_languages, read_flores

    assert read_flores("deu_Latn") == ["Hallo.", "Guten Morgen."]
    assert flores_languages() == ["deu_Latn", "eng_Latn"]
    assert read_flores("deu_Latn", "dev") == ["Tag."]
    assert dl.verify("flores200", dest).passed and not dl.verify("flores200", tmp_path / "none").passed
    # pinned checksum: the right one passes silently, a wrong one fails and writes nothing
    dest2 = tmp_path / "cache2"
    dl.download("flores200", dest=dest2, base_url=base, sha256=digest, progress=False)
    assert (dest2 / "flores200/devtest/eng_Latn.devtest").is_file()
    dest3 = tmp_path / "cache3"
    with pytest.raises(FairmtError, match="checksum mismatch for flores200_dataset.tar.gz"):
        dl.download("flores200", dest=dest3, base_url=base, sha256="0" * 64, progress=False)
    assert list(dest3.rglob("*")) == []


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = len(b"outside\n") if kind == tarfile.REGTYPE else 0
    return info


@pytest.mark.parametrize(
    "member",
    [
        _member("../evil.txt"),
        _member("flores200_dataset/devtest/../../../evil.txt"),
        _member("/tmp/fairmt-evil.txt"),
        _member("flores200_dataset/devtest/fra_Latn.devtest", tarfile.SYMTYPE, "/etc/passwd"),
        _member("flores200_dataset/devtest/ita_Latn.devtest", tarfile.LNKTYPE, "../../evil.txt"),
        _member("flores200_dataset/dev/fifo", tarfile.FIFOTYPE),
    ],
    ids=["dotdot", "dotdot-inside", "absolute", "symlink", "hardlink", "fifo"],
)
def test_archive_with_escaping_members_is_refused(member, serve, tmp_path):
    """A crafted tarball served from 127.0.0.1: the whole archive is refused, nothing is written anywhere."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    _flores_tarball(mirror, extra=(member,))
    dest = tmp_path / "cache"
    with (
        pytest.warns(UserWarning, match="no pinned sha256"),
        pytest.raises(FairmtError, match=f"refusing the archive: member {re.escape(repr(member.name))} is unsafe"),
    ):
        dl.download("flores200", dest=dest, base_url=serve(mirror), progress=False)
    assert not any(p.is_file() for p in dest.rglob("*")) if dest.exists() else True
    assert not (tmp_path / "evil.txt").exists() and not Path("/tmp/fairmt-evil.txt").exists()


def test_cli_download(shared_data, serve, tmp_path, capsys):
    from fairmt.cli import main

    base = serve(shared_data)
    rc = main(["data", "download", "winomt", "--base-url", base, "--output-dir", str(tmp_path), "--no-progress"])
    assert rc == 0
    assert "70 downloaded" in capsys.readouterr().out
    again = ["data", "download", "winomt", "--base-url", base, "--output-dir", str(tmp_path), "--no-progress"]
    assert main(again) == 0 and "70 downloaded" not in capsys.readouterr().out  # present and valid: kept
    assert main(again + ["--overwrite"]) == 0 and "70 downloaded" in capsys.readouterr().out  # one spelling
    assert main(again + ["--force"]) == 0  # its old name still works, with a note
    out, err = capsys.readouterr()
    assert "70 downloaded" in out and "--force is the old spelling of --overwrite" in err
    rc = main(["data", "verify", "winomt", "--root", str(tmp_path)])
    assert rc == 0
    (tmp_path / "winomt/LICENSE").write_text("changed")
    assert main(["data", "verify", "winomt", "--root", str(tmp_path)]) == 1
    assert "differ: winomt/LICENSE" in capsys.readouterr().out
    assert main(["data", "download", "nope", "--output-dir", str(tmp_path)]) == 2


def test_winomt_works_after_an_upstream_only_download(shared_data, serve, tmp_path, monkeypatch):
    """A server holding only what mt_gender publishes (its upstream paths), the manifest's upstream URLs pointed at
    it: after `download`, WinoMT's default gold is the downloaded current one and scoring works; --compat acl2019
    (whose 2019 gold has no fixed upstream URL) says how to get it."""
    import shutil

    from fairmt.eval.winomt.evaluate import default_gold_path, evaluate_winomt, load_gold

    upstream = "https://raw.githubusercontent.com/gabrielStanovsky/mt_gender/master/"
    files, archives = dl.dataset_files("winomt")
    site = tmp_path / "site"
    published = []
    for f in files:
        if f.url and f.url.startswith(upstream):
            target = site / f.url[len(upstream) :]
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(shared_data / f.path, target)
            published.append(f)
    base = serve(site)
    faked = [dl.RemoteFile(f.path, base + "/" + f.url[len(upstream) :], f.sha256, f.size) for f in published]
    assert any(f.path == "winomt/aggregates/en.txt" for f in faked)
    monkeypatch.setattr(dl, "dataset_files", lambda name: (faked, archives))
    data = tmp_path / "data"
    dl.download("winomt", dest=data, progress=False)
    monkeypatch.setenv("FAIRMT_DATA", str(data))
    assert default_gold_path() == data / "winomt" / "aggregates" / "en.txt"
    gold = load_gold()
    res = evaluate_winomt([e.sentence for e in gold.entries], "de", gold)  # any 3888 strings: the pipeline runs
    assert res.n == 3888 and "gold:aggregates/en.txt" in res.signature
    with pytest.raises(FairmtError, match="not published at a fixed upstream URL.*--base-url"):
        load_gold(compat="acl2019")


def test_corpora_list_and_fetch_with_checksums(serve, tmp_path, capsys):
    """The papers' training corpora: listed with URLs and licences; fetched from a 127.0.0.1 mirror, sha256 written
    and printed; a wrong pinned digest keeps nothing."""
    from fairmt.cli import main
    from fairmt.data.corpora import CORPORA

    assert main(["data", "corpora"]) == 0
    listing = capsys.readouterr().out
    for name in ("wmt18-ende", "ted2020-ende", "ted2020-entr", "news-commentary-v15"):
        assert name in listing
    assert "news-commentary-v15.en.gz" in listing and "prepare-wmt18en2de" in listing
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "news-commentary-v15.en.gz").write_bytes(b"\x1f\x8b fake gzip bytes")
    digest = hashlib.sha256((mirror / "news-commentary-v15.en.gz").read_bytes()).hexdigest()
    base = serve(mirror)
    assert (
        main(
            [
                "data",
                "corpora",
                "--fetch",
                "news-commentary-v15",
                "--output-dir",
                str(tmp_path / "d"),
                "--base-url",
                base,
                "--no-progress",
            ]
        )
        == 0
    )
    assert digest in capsys.readouterr().out
    got = tmp_path / "d" / "news-commentary-v15"
    assert (got / "SHA256SUMS").read_text() == f"{digest}  news-commentary-v15.en.gz\n"
    assert (
        main(
            [
                "data",
                "corpora",
                "--fetch",
                "news-commentary-v15",
                "--output-dir",
                str(tmp_path / "e"),
                "--base-url",
                base,
                "--sha256",
                "news-commentary-v15.en.gz=" + "0" * 64,
                "--no-progress",
            ]
        )
        == 2
    )
    assert "checksum mismatch" in capsys.readouterr().err
    assert not any(p.is_file() for p in (tmp_path / "e").rglob("*"))
    assert main(["data", "corpora", "--fetch", "nope"]) == 2
    assert "unknown corpus 'nope'" in capsys.readouterr().err
    assert set(CORPORA) == {
        "wmt18-ende",
        "ted2020-ende",
        "ted2020-entr",
        "news-commentary-v15",
        "bios-ravfogel",
        "bios-hub",
        "civilcomments-wilds",
        "moji",
        "hatespeech-huang2020",
        "celeba",
        "chexpert",
    }
    # the image sets are listed with where to get them and their licence, never fetched
    from fairmt.data.corpora import describe

    listing = describe()
    for name, where in (("celeba", "mmlab.ie.cuhk.edu.hk/projects/CelebA"), ("chexpert", "stanfordmlgroup.github.io")):
        block = listing.split(f"\n{name}\n")[1]
        assert where in block and "licence:" in block and "data.root" in block
        assert main(["data", "corpora", "--fetch", name, "--output-dir", str(tmp_path / "img")]) == 2
        assert f"{name} cannot be fetched by fairmt" in capsys.readouterr().err
    assert not (tmp_path / "img").exists()


@pytest.mark.parametrize("damage", ["random-bytes", "cut-in-half", "empty"])
def test_a_bad_archive_is_one_line_and_leaves_nothing(damage, serve, tmp_path):
    """A mirror serving random bytes, a tarball cut in half or an empty file: one FairmtError naming the archive
    and the mirror (not tarfile's ReadError / EOFError), and no half-unpacked folder."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    tar_path = _flores_tarball(mirror)
    data = tar_path.read_bytes()
    tar_path.write_bytes(
        {"random-bytes": os.urandom(len(data)), "cut-in-half": data[: len(data) // 2], "empty": b""}[damage]
    )
    base = serve(mirror)
    dest = tmp_path / "cache"
    with (
        pytest.warns(UserWarning, match="no pinned sha256"),
        pytest.raises(
            FairmtError,
            match=r"flores200_dataset.tar.gz: not a readable tar archive .*"
            + re.escape(base)
            + r".*Nothing was unpacked",
        ) as caught,
    ):
        dl.download("flores200", dest=dest, base_url=base, progress=False)
    assert "\n" not in str(caught.value)
    assert not any(p.is_file() for p in dest.rglob("*"))


def test_a_file_size_limit_during_a_download_says_so(shared_data, serve, tmp_path):
    """`ulimit -f` hit in the middle of a download: one line about the file size, not 'check the network'."""
    import resource

    dest = tmp_path / "cache"
    dest.mkdir()
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, hard))  # Python ignores SIGXFSZ: writes fail with EFBIG
    try:
        with pytest.raises(FairmtError) as caught:
            dl.download("winomt", dest=dest, base_url=serve(shared_data), progress=False)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    msg = str(caught.value)
    assert f"file too large for {dest} " in msg and "check the network" not in msg and "\n" not in msg
    assert not any(p.is_file() for p in dest.rglob("*"))


def test_a_full_disk_names_the_folder_and_the_space(tmp_path):
    import errno

    out = tmp_path / ".fairmt-staging-flores200-abc" / "flores200" / "y.tar.gz"  # the staging folder is not named
    msg = dl._write_failure(OSError(errno.ENOSPC, "No space left on device"), out, "http://mirror/y.tar.gz", 50_000_000)
    assert msg.startswith(f"download of http://mirror/y.tar.gz stopped: no space left on {tmp_path} (needs ~50 MB")
    assert "MB free there" in msg


def test_a_plain_folder_as_base_url(shared_data, tmp_path, capsys):
    """`--base-url /path/to/mirror` (no file://) works; a missing folder or an unknown scheme is one line (was
    urllib's `unknown url type` traceback)."""
    from fairmt.cli import main

    dest = tmp_path / "cache"
    rep = dl.download("winomt", dest=dest, base_url=str(shared_data), progress=False)
    assert rep.downloaded and (dest / "winomt/aggregates/en.txt").is_file()
    for bad, why in ((str(tmp_path / "nope"), "no such folder"), ("gopher://x/y", "unsupported scheme 'gopher'")):
        rc = main(
            ["data", "download", "winomt", "--output-dir", str(tmp_path / "c2"), "--base-url", bad, "--no-progress"]
        )
        err = capsys.readouterr().err
        assert rc == 2 and why in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


BIOS_COMMIT = "https://raw.githubusercontent.com/Shilpi261985/P2_BiasMitigation_SyntheticData/6d3a4607af4164aa60975af604d8acf32d6191d8/"


def test_bios_manifest_matches_shared_data_and_its_parts(shared_data):
    """The Bias-in-Bios sample's pins are the real files'; the 280-row file is its 28 per-profession upstream files
    joined, each pinned (regenerated by scripts/make_data_manifest.py, which checks the join)."""
    import importlib.util

    rep = dl.verify("bios", shared_data)
    assert rep.passed and len(rep.ok) == 2, str(rep)
    files, _ = dl.dataset_files("bias_in_bios")  # alias
    sample, accountants = files
    assert sample.path == "bios/bios_28prof_x10.csv" and sample.url is None and sample.header_lines == 1
    assert len(sample.parts) == 28 and all(p.url.startswith(BIOS_COMMIT + "csvs/Bios_samples/") for p in sample.parts)
    assert accountants.url == BIOS_COMMIT + "csvs/Bios_samples/accountant_complete.csv"
    spec = importlib.util.spec_from_file_location(
        "mdm", Path(__file__).parents[2] / "scripts" / "make_data_manifest.py"
    )
    mdm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mdm)
    parts = mdm.bios_parts((shared_data / sample.path).read_bytes())
    assert [(hashlib.sha256(b).hexdigest(), len(b)) for _, b in parts] == [(p.sha256, p.size) for p in sample.parts]


def _bios_upstream_site(shared_data, tmp_path, serve, monkeypatch):
    """A 127.0.0.1 server holding what the upstream repository publishes (28 per-profession files and the
    accountants' file) at its paths; the manifest's URLs pointed at it."""
    import importlib.util
    import shutil

    spec = importlib.util.spec_from_file_location(
        "mdm", Path(__file__).parents[2] / "scripts" / "make_data_manifest.py"
    )
    mdm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mdm)
    site = tmp_path / "site"
    (site / "csvs/Bios_samples").mkdir(parents=True)
    for prof, data in mdm.bios_parts((shared_data / "bios/bios_28prof_x10.csv").read_bytes()):
        (site / f"csvs/Bios_samples/{prof}.csv").write_bytes(data)
    shutil.copy(shared_data / "bios/bios_accountant_1000.csv", site / "csvs/Bios_samples/accountant_complete.csv")
    base = serve(site)
    files, archives = dl.dataset_files("bios")
    moved = [
        dl.RemoteFile(
            f.path,
            f.url and f.url.replace(BIOS_COMMIT, base + "/"),
            f.sha256,
            f.size,
            tuple(dl.RemotePart(p.url.replace(BIOS_COMMIT, base + "/"), p.sha256, p.size) for p in f.parts),
            f.header_lines,
        )
        for f in files
    ]
    monkeypatch.setattr(dl, "dataset_files", lambda name: (moved, archives))
    return site


def test_bios_download_joins_the_upstream_files_and_the_recipe_reads_them(
    shared_data, serve, tmp_path, monkeypatch, capsys
):
    """`fairmt data download bios` with no mirror: the upstream files fetched (from 127.0.0.1), checked, joined into
    the sample the offline classification recipes read, byte for byte the verified copy."""
    _bios_upstream_site(shared_data, tmp_path, serve, monkeypatch)
    monkeypatch.setenv("FAIRMT_CACHE", str(tmp_path / "fc"))
    monkeypatch.delenv("FAIRMT_DATA", raising=False)
    from fairmt.cli import main

    assert main(["data", "download", "bios", "--no-progress"]) == 0
    assert "bios: 2 downloaded" in capsys.readouterr().out
    data = tmp_path / "fc" / "data"
    for name in ("bios_28prof_x10.csv", "bios_accountant_1000.csv"):
        assert (data / "bios" / name).read_bytes() == (shared_data / "bios" / name).read_bytes()
    assert not [p for p in data.rglob("*") if ".fairmt-staging" in str(p)]
    from fairmt.data.classification import read_bios

    d = read_bios()  # the default path under the cache: what `classification/fcl` and the CSCL variants read
    assert sum(len(s.labels) for s in d.splits.values()) == 280 and len(d.label_names) == 28


def test_bios_a_tampered_part_leaves_nothing(shared_data, serve, tmp_path, monkeypatch):
    site = _bios_upstream_site(shared_data, tmp_path, serve, monkeypatch)
    nurse = site / "csvs/Bios_samples/nurse.csv"
    nurse.write_bytes(nurse.read_bytes().replace(b"She", b"He", 1))
    dest = tmp_path / "data"
    with pytest.raises(
        FairmtError,
        match=r"checksum mismatch for bios/bios_28prof_x10.csv \(part 14 of 28\) from "
        r"http://127.0.0.1:\d+/csvs/Bios_samples/nurse.csv",
    ):
        dl.download("bios", dest=dest, progress=False)
    assert [p for p in dest.rglob("*")] == []


def test_bios_from_a_mirror_laid_out_like_the_data_folder(shared_data, serve, tmp_path):
    dest = tmp_path / "data"
    rep = dl.download("bios", dest=dest, base_url=serve(shared_data), progress=False)
    assert sorted(rep.downloaded) == ["bios/bios_28prof_x10.csv", "bios/bios_accountant_1000.csv"]
    assert dl.verify("bios", dest).passed
