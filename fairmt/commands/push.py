"""``fairmt push MODEL_DIR REPO_ID``: upload a trained model (or adapter) folder to the Hugging Face Hub.

With ``--results`` files (the JSON that ``fairmt eval winomt|geneval|flores --json`` write: one result, a list, or
``per_language``; a recipe's or a sweep's results, a tiny recipe's held-out scores included) their results are put
into the model card's ``model-index`` first (:mod:`fairmt.eval.modelcard`), with the benchmarks' limitations and
citations, and into ``.eval_results/*.yaml`` for the benchmarks whose data set is on the Hub. Only the model is
uploaded: the weights, config, tokenizer/adapter files and the card — not the training state a Trainer leaves in its
output folder (``checkpoint-*``, optimizer, scheduler, RNG states, ``trainer_state.json``, ``training_args.bin``, the
GACL projection head) unless ``--all-files``. A KD teacher is never saved there by fairmt's trainers, and the command
refuses folders holding files named like one.
"""

from __future__ import annotations

from pathlib import Path

from fairmt.errors import FairmtError

MODEL_FILES = ("config.json", "adapter_config.json")
# what a Trainer's output folder holds besides the model: never part of a published model unless asked
TRAINING_STATE = [
    "checkpoint-*",
    "checkpoint-*/*",
    "optimizer.pt",
    "scheduler.pt",
    "rng_state*.pth",
    "trainer_state.json",
    "training_args.bin",
    "runs/*",
    "*.lock",
    "gacl_projection_head.*",
    "adversary.*",
    "scaler.pt",
    "global_step*",
    "global_step*/*",
]


_EVAL_FORMATS = (
    "fairmt-winomt/",
    "fairmt-geneval/",
    "fairmt-translation/",
    "fairmt-embeddings/",
    "fairmt-stereoset/",
    "fairmt-classification/1",
)


def _selected_run_results(sweep_file: Path, data: dict) -> Path | None:
    """The results file of the run a sweep selected, where the sweep folder still holds it."""
    run = (data.get("selected") or {}).get("run")
    folder = sweep_file.parent / str(run) / "run" if run else None
    found = sorted(folder.glob("*results.json")) if folder is not None and folder.is_dir() else []
    return found[0] if found else None


def resolve_results(path: str | Path) -> tuple[Path, dict]:
    """The result file a ``--results`` argument names and its JSON (a sweep folder: its ``sweep.json``)."""
    from fairmt.data.inputs import read_json

    p = Path(path)
    if p.is_dir() and (p / "sweep.json").is_file():
        p = p / "sweep.json"
    return p, read_json(p, "result JSON")


def load_results(path: str | Path) -> list:
    """The results in a fairmt result JSON, as a list of dicts (one per language/pair) or model-index entries. A
    ``fairmt sweep`` folder or its ``sweep.json`` gives the test results of the run the sweep selected on dev; a
    recipe's results (classification, CCD/DPCE/ADEPT, sampling, GACL) or a linear probe the measures ``fairmt
    report`` shows for the trained model (:func:`fairmt.eval.modelcard.report_eval_results`)."""
    from fairmt.eval.modelcard import report_eval_results
    from fairmt.eval.reporting import formats

    p, data = resolve_results(path)
    fmt = data.get("format") if isinstance(data, dict) else None
    if isinstance(data, dict) and str(fmt or "").startswith("fairmt-sweep"):
        selected = _selected_run_results(p, data)
        if selected is not None:
            return load_results(selected)
        card = (data.get("selected") or {}).get("card_results")
        if not card:
            raise FairmtError(
                f"{p}: the sweep selected no run with test results for a model card "
                f"(selection: {data.get('selection', {}).get('by_rule', {})})"
            )
        return card
    if isinstance(data, dict) and "format" in data and any(k in data for k in ("winomt", "geneval", "flores")):
        from fairmt.eval.mtbias import model_card_results  # a `fairmt eval mt-bias --json` run

        return model_card_results(data)
    if isinstance(data, dict) and isinstance(data.get("held_out_gender"), dict):
        return _held_out_results(p, data)
    if isinstance(fmt, str) and fmt in formats.ALL and not fmt.startswith(_EVAL_FORMATS):
        return report_eval_results(p)
    if isinstance(data, dict) and isinstance(data.get("per_language"), list):
        data = data["per_language"]
    items = data if isinstance(data, list) else [data]
    if not all(isinstance(x, dict) for x in items):
        raise FairmtError(f"{p}: expected a result object, a list of them or {{'per_language': [...]}}")
    return [{k: v for k, v in x.items() if k != "format"} for x in items]


def _held_out_results(path: Path, data: dict) -> list:
    """A tiny GACL recipe's results (``gacl/tiny_offline``): its held-out gender scores of the trained model, and its
    MT-GenEval test numbers where the run scored them."""
    from fairmt.eval.modelcard import held_out_eval_results, report_eval_results
    from fairmt.recipes.gacl.tiny import BEFORE_AFTER_ROWS

    try:
        entries = held_out_eval_results(data["held_out_gender"], BEFORE_AFTER_ROWS)
    except FairmtError as err:
        raise FairmtError(f"{path}: {err}") from None
    if any(str(k).startswith("geneval_") for k in (data.get("test") or {})):
        entries += report_eval_results(path)
    return entries


def results_source(path: str | Path) -> str:
    """Where a ``--results`` file's numbers come from, for the card: its file name and its run's name (as ``fairmt
    report`` names the run); escaped where the card shows it."""
    p, data = resolve_results(path)
    name = None
    try:
        from fairmt.eval.reporting import read_runs

        runs = read_runs(p)
        name = runs[-1].name if runs else None
    except (FairmtError, KeyError, TypeError, ValueError):  # an eval JSON without a format: the file name alone
        pass
    settings = data.get("settings") if isinstance(data, dict) else None
    if isinstance(settings, dict) and isinstance(settings.get("name"), str):
        name = settings["name"]
    return f"{p.name} (run {name})" if name and name != p.stem else p.name


_MT_FORMATS = (1, "fairmt-winomt/1", "fairmt-geneval/1", "fairmt-translation/1")
"""The translation evaluations' formats (a recipe's: its family's, where its report table is ``mt``)."""


def mt_method() -> str | None:
    """fairmt's translation method: the recipe family whose runs land in ``fairmt report``'s MT table (the card's
    method for translation results, and its default without results)."""
    from fairmt.recipes import families

    return next((m for m, fam in families().items() if fam.report_table == "mt"), None)


def results_method(paths: list[str]) -> str | None:
    """The training method the results say they come from (the first that says one; a sweep: its selected run);
    else ``gacl`` when every result is a translation one (fairmt's MT method, the card's old default), else None."""
    from fairmt.eval.reporting.runs import run_method
    from fairmt.recipes import families

    by_format: dict = {}  # a recipe's results format -> its family (ccd, dpce and adept share one: the same answers)
    for fam in families().values():
        by_format.setdefault(fam.results_format, fam)
    mt_formats = (*_MT_FORMATS, *(f.results_format for f in families().values() if f.report_table == "mt"))
    mt_only = True
    for path in paths:
        p, data = resolve_results(path)
        if isinstance(data, dict) and str(data.get("format", "")).startswith("fairmt-sweep"):
            selected = _selected_run_results(p, data)
            if selected is not None:
                p, data = resolve_results(selected)
            elif data.get("method") != mt_method():
                mt_only = False
        fmt = data.get("format") if isinstance(data, dict) else None
        fam = by_format.get(fmt) if isinstance(fmt, str) else None
        method = (fam.cited_method(data) if fam else run_method(data)) if isinstance(data, dict) else None
        if method:
            return method
        mt_only &= fmt in mt_formats or (fmt is None and isinstance(data, (dict, list)))
    return mt_method() if mt_only else None


def _check_repo_id(repo_id: str) -> None:
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise FairmtError(
            f"{repo_id!r} is not a valid Hub repository id ({str(err).splitlines()[0]}); give "
            "USER/NAME or NAME, e.g. me/small100-gacl-en-de"
        ) from None


def _hub_error(repo_id: str, err: Exception) -> FairmtError:
    first = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
    return FairmtError(
        f"cannot upload to {repo_id!r} on the Hub ({type(err).__name__}: {first}); check the network, "
        "your login (`hf auth login` or HF_TOKEN) and the repository name; nothing was changed locally"
    )


def _timed_out(err: BaseException) -> bool:
    """A timeout of the Hub's HTTP client (httpx's ``TimeoutException`` family) or of a socket, also as a cause."""
    seen = 0
    while err is not None and seen < 8:
        if isinstance(err, TimeoutError) or "Timeout" in type(err).__name__:
            return True
        err, seen = err.__cause__ or err.__context__, seen + 1
    return False


def _endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def _card_text(folder: Path, results: list[str], repo_id: str, method: str | None) -> tuple[str, dict[str, str]]:
    """The model card with the results and its ``.eval_results/*.yaml`` files (path → text), built in memory (the
    local README is rewritten only after the upload)."""
    from huggingface_hub import ModelCard

    from fairmt.eval.modelcard import build_model_card

    readme = folder / "README.md"
    existing = None
    if readme.is_file():
        try:
            existing = ModelCard.load(readme)
        except Exception as err:  # noqa: BLE001 - yaml/ValueError/...: the user's file, named in one line
            raise FairmtError(
                f"{readme}: the existing model card's YAML front matter cannot be read "
                f"({type(err).__name__}: {' '.join(str(err).split())[:200]}); fix it or move the file "
                "away"
            ) from None
    from fairmt.eval.modelcard import eval_results_files

    loaded = [r for f in results for r in load_results(f)]
    card = build_model_card(
        loaded,
        model_name=repo_id.split("/")[-1],
        existing=existing,
        method=method,
        sources=[results_source(f) for f in results],
    )
    return str(card), eval_results_files(card.data.eval_results or [], repo_id)


def push(
    model_dir: str | Path,
    repo_id: str,
    private: bool = False,
    results: list[str] | None = None,
    commit_message: str = "Upload with fairmt",
    all_files: bool = False,
    method: str | None = "auto",
    dry_run: str | Path | None = None,
) -> str:
    """Upload the model in ``model_dir`` as one commit; with ``results`` the card (README.md) carries them. Every
    check (repository id, offline mode, the folder, the results, the existing card) runs before anything is sent, and
    the local README.md is rewritten only once the upload succeeded.

    ``method``: the training method the card cites; ``"auto"`` takes it from the results when they say it (a recipe's
    results, a sweep's selected run), else ``gacl`` for translation results and none for others; None cites none.
    ``dry_run``: a folder where the card (``README.md``) and the list of files that would be uploaded (``upload.txt``)
    are written instead — nothing is sent, the Hub is not contacted."""
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.utils import filter_repo_objects

    from fairmt.hub import _offline

    _check_repo_id(repo_id)
    folder = Path(model_dir)
    if (folder / "sweep.json").is_file():  # a sweep folder: the model of the run it selected
        from fairmt.data.inputs import read_json

        folder = Path((read_json(folder / "sweep.json", "sweep JSON").get("selected") or {}).get("model_dir") or folder)
    if not folder.is_dir() or not any((folder / f).is_file() for f in MODEL_FILES):
        raise FairmtError(f"{folder} is not a saved model or adapter folder (no {' or '.join(MODEL_FILES)})")
    if any("teacher" in p.name for p in folder.iterdir()):
        raise FairmtError(f"{folder} holds files named 'teacher': fairmt never publishes a KD teacher; remove them")
    if method == "auto":
        method = results_method(results) if results else mt_method()
    card, extra = _card_text(folder, results, repo_id, method) if results else (None, {})
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    files = [f for f in files if f not in extra]  # the eval-results files written now replace the folder's
    if dry_run is not None:
        from huggingface_hub.utils import filter_repo_objects

        from fairmt.eval.report import write_text_atomic

        out = Path(dry_run)
        kept = list(filter_repo_objects(files, ignore_patterns=None if all_files else TRAINING_STATE))
        from fairmt.eval.modelcard import EVAL_RESULTS_FOLDER
        from fairmt.outputs import record_made

        out.mkdir(parents=True, exist_ok=True)
        made = (["README.md"] if card is not None else []) + ([EVAL_RESULTS_FOLDER] if extra else [])
        record_made(out, *made, "upload.txt")  # an --overwrite may replace them
        if card is not None:
            write_text_atomic(out / "README.md", card)
        for rel, text in extra.items():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(out / rel, text)
        write_text_atomic(
            out / "upload.txt",
            "".join(f"{f}\n" for f in kept if not (card and f == "README.md"))
            + ("README.md (the card beside this file)\n" if card else "")
            + "".join(f"{rel} (beside this file)\n" for rel in extra),
        )
        record_made(out, *made, "upload.txt", written=True)  # with proofs
        shown = f"; evaluation results in {out / '.eval_results'}" if extra else ""
        return (
            (
                f"dry run: nothing uploaded; the card for {repo_id} is {out / 'README.md'}{shown}"
                if card
                else "dry run: nothing uploaded; no --results, so no card"
            )
            + f" and the {len(kept)} files are listed "
            f"in {out / 'upload.txt'}" + (f" (method cited: {method})" if method else "")
        )
    if _offline():
        raise FairmtError(
            f"cannot upload to {repo_id!r}: HF_HUB_OFFLINE is set (offline mode); unset it where the Hub is reachable"
        )
    files = list(filter_repo_objects(files, ignore_patterns=None if all_files else TRAINING_STATE))
    operations = [
        CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(folder / rel))
        for rel in files
        if not (card is not None and rel == "README.md")
    ]
    if card is not None:
        operations.append(CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=card.encode("utf-8")))
    operations += [
        CommitOperationAdd(path_in_repo=rel, path_or_fileobj=text.encode("utf-8")) for rel, text in extra.items()
    ]
    from fairmt.hub import hub_timeouts, timeout_hint

    timeout = hub_timeouts()  # connect and read: an endpoint that never answers fails in seconds, not never
    api = HfApi()
    try:
        api.create_repo(repo_id, private=private, exist_ok=True)
        info = api.create_commit(repo_id=repo_id, operations=operations, commit_message=commit_message)
    except Exception as err:  # noqa: BLE001 - HTTP, connection, offline, auth, quota: every failure of the Hub side
        if isinstance(err, (TypeError, AttributeError, NameError, AssertionError)):  # a bug: keep its traceback
            raise
        if _timed_out(err):
            raise FairmtError(
                f"cannot upload to {repo_id!r}: the Hub ({_endpoint()}) did not answer within "
                f"{timeout:g} s ({timeout_hint()}); nothing was changed locally"
            ) from None
        raise _hub_error(repo_id, err) from None
    if card is not None:  # the upload worked: the local card now says what the Hub's says
        from fairmt.eval.report import write_text_atomic

        write_text_atomic(folder / "README.md", card)
    return getattr(info, "commit_url", str(info))


def register(groups) -> None:
    from fairmt.commands._options import output_dir, timeout_option

    p = groups["top"].add_parser(
        "push", help="upload a trained model/adapter folder (and its evaluation results) to the Hub"
    )
    p.add_argument("model_dir", help="a saved model or adapter folder (or a fairmt sweep folder: its selected run)")
    p.add_argument("repo_id", help="e.g. me/small100-gacl-en-de")
    p.add_argument("--private", action="store_true")
    p.add_argument(
        "--results",
        "--winomt-json",
        nargs="*",
        default=[],
        metavar="JSON",
        help="result JSON files for the card's model-index and .eval_results: fairmt eval winomt/geneval/flores/mt-bias/"
        "embeddings/classification/linear-probe, a recipe's results (classification, CCD/DPCE/ADEPT, "
        "sampling, GACL: the trained model's measures; a tiny recipe's held-out scores) or a sweep's "
        "sweep.json (its selected run)",
    )
    p.add_argument(
        "--method",
        default="auto",
        help="the training method to cite in the card (gacl, ccd, dpce, adept, fcl, cscl, sampling; "
        "'none'); default: the one the results say, else gacl",
    )
    p.add_argument(
        "--all-files",
        action="store_true",
        help="upload the whole folder, checkpoints and training state included (default: the model only)",
    )
    p.add_argument("--commit-message", default="Upload with fairmt")
    output_dir(
        p,
        "--dry-run",
        what="dry-run folder",
        metavar="DIR",
        help="write the card it would upload (README.md), its evaluation results (.eval_results/*.yaml) and "
        "the list of files (upload.txt) to DIR and stop: nothing is sent, the Hub is not contacted",
    )
    timeout_option(p)

    def handler(a) -> None:
        from fairmt.hub import use_timeout

        use_timeout(a.timeout)
        try:
            print(
                push(
                    a.model_dir,
                    a.repo_id,
                    a.private,
                    a.results,
                    a.commit_message,
                    a.all_files,
                    None if a.method == "none" else a.method,
                    a.dry_run,
                )
            )
        finally:
            use_timeout(None)  # the command's option ends with it (a Python caller may run another command)

    p.set_defaults(handler=handler)
