"""``fairmt push MODEL_DIR REPO_ID``: upload a trained model (or adapter) folder to the Hugging Face Hub.

With ``--winomt-json`` files (written by ``fairmt eval winomt --json``) their results are put into the model card's
``model-index`` first (:mod:`fairmt.eval.modelcard`). Only the folder is uploaded: a KD teacher is never saved
there by fairmt's trainers, and the command refuses folders holding files named like one.
"""

from __future__ import annotations

from pathlib import Path

from fairmt.errors import FairmtError

MODEL_FILES = ("config.json", "adapter_config.json")


def push(model_dir: str | Path, repo_id: str, private: bool = False, winomt_json: list[str] | None = None,
         commit_message: str = "Upload with fairmt") -> str:
    import json

    from huggingface_hub import HfApi

    folder = Path(model_dir)
    if not folder.is_dir() or not any((folder / f).is_file() for f in MODEL_FILES):
        raise FairmtError(f"{folder} is not a saved model or adapter folder (no {' or '.join(MODEL_FILES)})")
    if any("teacher" in p.name for p in folder.iterdir()):
        raise FairmtError(f"{folder} holds files named 'teacher': fairmt never publishes a KD teacher; remove them")
    if winomt_json:
        from fairmt.eval.modelcard import write_model_card

        results = []
        for f in winomt_json:
            data = json.loads(Path(f).read_text(encoding="utf-8"))
            results += data if isinstance(data, list) else [data]
        write_model_card(folder, results, model_name=repo_id.split("/")[-1])
    api = HfApi()
    api.create_repo(repo_id, private=private, exist_ok=True)
    info = api.upload_folder(repo_id=repo_id, folder_path=str(folder), commit_message=commit_message)
    return getattr(info, "commit_url", str(info))


def register(groups) -> None:
    p = groups["top"].add_parser("push", help="upload a trained model/adapter folder (and its evaluation results) to the Hub")
    p.add_argument("model_dir")
    p.add_argument("repo_id", help="e.g. me/small100-gacl-en-de")
    p.add_argument("--private", action="store_true")
    p.add_argument("--winomt-json", nargs="*", default=[], help="`fairmt eval winomt --json` outputs for the model card")
    p.add_argument("--commit-message", default="Upload with fairmt")
    p.set_defaults(handler=lambda a: print(push(a.model_dir, a.repo_id, a.private, a.winomt_json, a.commit_message)))
