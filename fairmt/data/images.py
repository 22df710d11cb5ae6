"""Image data for self-supervised fairness-driven sampling (Martin & Ogbuokiri): CelebA and CheXpert readers, a
synthetic set with a planted minority, the collator that decodes images, and SimCLR's augmentations on the GPU.

Readers return an :class:`ImageData`: a dataset of rows with ``path`` (a file), ``image`` (a PIL image, as the Hub's
``datasets`` copies give) or ``pixels`` (an ``H × W × 3`` uint8 array), plus per-row arrays kept apart from training:
``targets`` (the linear-probe labels, 0/1, ``-1`` = not usable for that target) and ``groups`` (protected attributes,
for evaluation only, ``-1`` = unknown). Self-supervised training never reads a label.

* :func:`read_celeba` — CelebA (Liu et al., 2015): a local folder of the official release (``img_align_celeba/``,
  ``list_attr_celeba.txt``, ``list_eval_partition.txt``; also the ``Img/ Anno/ Eval/`` layout of the Drive folder)
  or the Hub copy ``flwrlabs/celeba`` through ``datasets``. Attributes are ±1 in the file and 1/0 here.
* :func:`read_chexpert` — CheXpert-v1.0-small (Irvin et al., 2019; registration only): ``train.csv`` /
  ``valid.csv`` and the image paths they list. Labels: 1 positive, 0 negative, −1 uncertain, blank = not mentioned
  (taken as negative). ``uncertain`` maps −1 by the policies of Irvin et al.: ``zeros`` (U-Zeros, default: the
  paper's Table 2 accuracies equal the U-Zeros negative rates, e.g. Cardiomegaly 0.879), ``ones`` (U-Ones) or
  ``ignore`` (U-Ignore: the row is left out of that finding's probe).
* :func:`synthetic_shapes` — coloured squares and discs on noise, a majority colour family and a minority one
  (the planted attribute), the shape as the probe target: for tests and benchmarks.
* :class:`ImageCollator` — decodes rows (Pillow) and runs the backbone's ``AutoImageProcessor`` without its
  normalisation: ``pixel_values`` in ``[0, 1]``.
* :class:`SimCLRAugmentation` — SimCLR's view generator with kornia, batched on the tensors' device: random resized
  crop (scale 0.08–1), horizontal flip, colour jitter (0.8, 0.8, 0.8, 0.2; p 0.8), grayscale (p 0.2), Gaussian blur
  (kernel ≈ 10 % of the side, σ 0.1–2, p 0.5), then the processor's mean/std normalisation (Chen et al., 2020,
  App. A; the paper names jitter, crop and grayscale). ``clean`` only normalises (embedding passes, probes).
"""

from __future__ import annotations

import io
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fairmt.errors import FairmtError

CELEBA_HUB_ID = "flwrlabs/celeba"
CELEBA_HUB_CONFIG = "img_align+identity+attr"
CELEBA_SPLITS = {"train": 0, "valid": 1, "test": 2}
CHEXPERT_FINDINGS = (
    "No Finding",
    "Enlarged Cardiomediastinum",
    "Cardiomegaly",
    "Lung Opacity",
    "Lung Lesion",
    "Edema",
    "Consolidation",
    "Pneumonia",
    "Atelectasis",
    "Pneumothorax",
    "Pleural Effusion",
    "Pleural Other",
    "Fracture",
    "Support Devices",
)
#: the five findings of the paper's Tables 2 and 4 (the CheXpert competition tasks)
CHEXPERT_FIVE = ("Cardiomegaly", "Edema", "Consolidation", "Atelectasis", "Pleural Effusion")
UNCERTAIN_POLICIES = ("zeros", "ones", "ignore")

CELEBA_HOW = (
    "CelebA: download the official release (img_align_celeba.zip, list_attr_celeba.txt, "
    "list_eval_partition.txt) from https://mmlab.ie.cuhk.edu.hk/projects/CelebA.html and give its folder "
    "as data.root, or set data.source=hub where the Hugging Face Hub is reachable (flwrlabs/celeba)"
)
CHEXPERT_HOW = (
    "CheXpert: register and download CheXpert-v1.0-small at "
    "https://stanfordmlgroup.github.io/competitions/chexpert/ (Stanford AIMI), unpack it and give the folder "
    "holding CheXpert-v1.0-small/ (or that folder itself) as data.root"
)


@dataclass
class ImageData:
    """Rows to train on plus per-row probe targets and protected groups (see the module docstring)."""

    name: str
    dataset: Any
    targets: dict[str, np.ndarray]
    groups: dict[str, np.ndarray] = field(default_factory=dict)
    group_names: dict[str, list[str]] = field(default_factory=dict)
    partition: np.ndarray | None = None
    source: str = ""
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.dataset)


def _parts(splits: str | Sequence[str], known: dict[str, int], name: str) -> list[str]:
    if isinstance(splits, str):
        splits = list(known) if splits == "all" else [splits]
    bad = [s for s in splits if s not in known]
    if bad or not splits:
        raise FairmtError(f"{name}: unknown split(s) {bad or splits}; choose from {list(known)} or 'all'")
    return list(splits)


def _limit(n: int, max_samples: int | None) -> int:
    if max_samples is not None and max_samples < 1:
        raise FairmtError(f"max_samples must be >= 1, got {max_samples}")
    return n if max_samples is None else min(n, max_samples)


# ------------------------------------------------------------------------------------------------------- CelebA
def _find(root: Path, names: Sequence[str], what: str) -> Path:
    for sub in ("", "Anno", "Eval", "Img", "celeba"):
        for name in names:
            p = root / sub / name if sub else root / name
            if p.exists():
                return p
    raise FairmtError(
        f"CelebA: {what} not found under {root} (looked for {', '.join(names)} in it and in "
        f"Anno/, Eval/, Img/, celeba/). {CELEBA_HOW}"
    )


def _binary_attrs(names: Sequence[str], available: Sequence[str], what: str) -> list[str]:
    lookup = {a.lower(): a for a in available}
    out = []
    for n in names:
        key = str(n).lower().replace(" ", "_")
        if key not in lookup:
            raise FairmtError(f"CelebA: unknown {what} attribute {n!r}; the 40 attributes are {', '.join(available)}")
        out.append(lookup[key])
    return out


def read_celeba(
    root: str | os.PathLike | None = None,
    *,
    source: str = "local",
    targets: Sequence[str] = ("Attractive", "Wavy_Hair"),
    protected: Sequence[str] = ("Male", "Young"),
    splits: str | Sequence[str] = "all",
    max_samples: int | None = None,
    hub_id: str = CELEBA_HUB_ID,
    hub_config: str = CELEBA_HUB_CONFIG,
) -> ImageData:
    """CelebA with probe ``targets`` and evaluation-only ``protected`` attributes (names as in
    ``list_attr_celeba.txt``, case-insensitive). ``splits``: ``all`` (202,599 images: the set the paper clusters, its
    Table 3 total) or some of ``train``/``valid``/``test`` (the official partition). ``max_samples`` keeps the first N
    rows (file order) of the chosen splits."""
    parts = _parts(splits, CELEBA_SPLITS, "CelebA")
    if source == "hub":
        return _read_celeba_hub(hub_id, hub_config, parts, targets, protected, max_samples)
    if source != "local":
        raise FairmtError(f"CelebA: data.source must be local or hub, got {source!r}")
    if root is None:
        raise FairmtError(f"CelebA: no data.root given. {CELEBA_HOW}")
    root = Path(root)
    if not root.is_dir():
        raise FairmtError(f"CelebA: folder {root} not found. {CELEBA_HOW}")
    from fairmt.data.inputs import read_lines

    attr_file = _find(root, ("list_attr_celeba.txt",), "list_attr_celeba.txt")
    part_file = _find(root, ("list_eval_partition.txt",), "list_eval_partition.txt")
    image_dir = _find(root, ("img_align_celeba",), "the image folder img_align_celeba/")
    if (image_dir / "img_align_celeba").is_dir():  # the zip unpacked into a folder of the same name
        image_dir = image_dir / "img_align_celeba"
    lines = read_lines(attr_file, "CelebA attribute")
    try:
        count = int(lines[0].strip())
    except (ValueError, IndexError):
        raise FairmtError(f"{attr_file}:1: expected the number of images, got {lines[0][:40]!r}") from None
    names = lines[1].split()
    rows = lines[2:]
    if len(rows) != count:
        raise FairmtError(f"{attr_file}: the header announces {count} images but {len(rows)} rows follow (a cut file?)")
    files, values = [], np.empty((count, len(names)), dtype=np.int8)
    for i, line in enumerate(rows):
        cells = line.split()
        if len(cells) != len(names) + 1 or any(c not in ("1", "-1") for c in cells[1:]):
            raise FairmtError(f"{attr_file}:{i + 3}: expected a file name and {len(names)} values of 1/-1")
        files.append(cells[0])
        values[i] = [1 if c == "1" else 0 for c in cells[1:]]
    part = {}
    for j, line in enumerate(read_lines(part_file, "CelebA partition")):
        cells = line.split()
        if len(cells) != 2 or cells[1] not in ("0", "1", "2"):
            raise FairmtError(f"{part_file}:{j + 1}: expected '<file> <0|1|2>'")
        part[cells[0]] = int(cells[1])
    missing = [f for f in files if f not in part]
    if missing:
        raise FairmtError(f"{part_file}: no partition for {len(missing)} image(s), e.g. {missing[0]}")
    wanted = {CELEBA_SPLITS[p] for p in parts}
    keep = [i for i, f in enumerate(files) if part[f] in wanted]
    keep = keep[: _limit(len(keep), max_samples)]
    if not keep:
        raise FairmtError(f"CelebA: no image in split(s) {parts}")
    first = image_dir / files[keep[0]]
    if not first.is_file():
        raise FairmtError(f"CelebA: image {first} not found (is img_align_celeba.zip unpacked?). {CELEBA_HOW}")
    from datasets import Dataset

    t_names = _binary_attrs(targets, names, "target")
    g_names = _binary_attrs(protected, names, "protected")
    col = {n: j for j, n in enumerate(names)}
    return ImageData(
        name="celeba",
        dataset=Dataset.from_dict({"path": [str(image_dir / files[i]) for i in keep]}),
        targets={n: values[keep, col[n]].astype(np.int64) for n in t_names},
        groups={n: values[keep, col[n]].astype(np.int64) for n in g_names},
        group_names={n: [f"not {n}", n] for n in g_names},
        partition=np.asarray([part[files[i]] for i in keep]),
        source=str(root),
    )


def _read_celeba_hub(hub_id, hub_config, parts, targets, protected, max_samples) -> ImageData:
    try:
        import datasets

        loaded = [datasets.load_dataset(hub_id, hub_config, split=p) for p in parts]
    except Exception as err:  # offline, gated, renamed...: one line naming the data set
        reason = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
        raise FairmtError(f"CelebA: cannot load the Hub copy {hub_id} ({reason}). {CELEBA_HOW}") from None
    ds = datasets.concatenate_datasets(loaded) if len(loaded) > 1 else loaded[0]
    if "image" not in ds.column_names:
        raise FairmtError(f"CelebA: the Hub copy {hub_id} has no 'image' column (columns: {ds.column_names})")
    partition = np.concatenate([np.full(len(d), CELEBA_SPLITS[p]) for d, p in zip(loaded, parts)])
    n = _limit(len(ds), max_samples)
    if n < len(ds):
        ds, partition = ds.select(range(n)), partition[:n]
    attrs = [c for c in ds.column_names if c not in ("image", "celeb_id")]
    t_names = _binary_attrs(targets, attrs, "target")
    g_names = _binary_attrs(protected, attrs, "protected")
    cols = {c: np.asarray(ds[c]) for c in t_names + g_names}

    def binary(v):
        return (v > 0).astype(np.int64)  # bool or ±1 or 0/1

    return ImageData(
        name="celeba",
        dataset=ds.select_columns(["image"]),
        targets={c: binary(cols[c]) for c in t_names},
        groups={c: binary(cols[c]) for c in g_names},
        group_names={c: [f"not {c}", c] for c in g_names},
        partition=partition,
        source=f"hub:{hub_id}/{hub_config}",
    )


# ----------------------------------------------------------------------------------------------------- CheXpert
def _chexpert_folder(root: Path) -> Path:
    for cand in (root, root / "CheXpert-v1.0-small", root / "CheXpert-v1.0"):
        if (cand / "train.csv").is_file() or (cand / "valid.csv").is_file():
            return cand
    raise FairmtError(
        f"CheXpert: no train.csv or valid.csv in {root} or its CheXpert-v1.0-small/ folder. {CHEXPERT_HOW}"
    )


def read_chexpert(
    root: str | os.PathLike | None,
    *,
    findings: Sequence[str] = CHEXPERT_FIVE,
    uncertain: str = "zeros",
    protected: Sequence[str] = ("Sex", "Age"),
    splits: str | Sequence[str] = "all",
    frontal_only: bool = False,
    age_threshold: int = 60,
    max_samples: int | None = None,
) -> ImageData:
    """CheXpert-v1.0-small from a local folder (the official layout). ``splits``: ``all`` = ``train.csv`` +
    ``valid.csv`` (223,414 + 234 = 223,648 images: the paper's Table 3 total) or one of them. ``findings`` become
    probe targets with the ``uncertain`` policy; ``protected``: ``Sex`` (Female 0, Male 1, Unknown −1) and ``Age``
    (below ``age_threshold`` 0, at or above 1), evaluation only."""
    if root is None:
        raise FairmtError(f"CheXpert: no data.root given. {CHEXPERT_HOW}")
    root = Path(root)
    if not root.is_dir():
        raise FairmtError(f"CheXpert: folder {root} not found. {CHEXPERT_HOW}")
    if uncertain not in UNCERTAIN_POLICIES:
        raise FairmtError(f"CheXpert: uncertain must be one of {UNCERTAIN_POLICIES}, got {uncertain!r}")
    bad = [f for f in findings if f not in CHEXPERT_FINDINGS]
    if bad:
        raise FairmtError(f"CheXpert: unknown finding(s) {bad}; choose from {list(CHEXPERT_FINDINGS)}")
    bad = [p for p in protected if p not in ("Sex", "Age")]
    if bad:
        raise FairmtError(f"CheXpert: protected attributes are Sex and Age, got {bad}")
    from fairmt.data.inputs import csv_dict_rows

    folder = _chexpert_folder(root)
    parts = _parts(splits, {"train": 0, "valid": 1}, "CheXpert")
    paths, labels, sex, age, partition = [], {f: [] for f in findings}, [], [], []
    bad_age: list[tuple[int, str]] = []  # (line, value) of attribute values that cannot be read: counted, reported
    bad_sex: list[tuple[int, str]] = []
    n_frontal_dropped = 0
    for split in parts:
        csv_path = folder / f"{split}.csv"
        if not csv_path.is_file():
            raise FairmtError(f"CheXpert: {csv_path} not found. {CHEXPERT_HOW}")
        _, rows = csv_dict_rows(
            csv_path, "CheXpert label", required=("Path", "Sex", "Age", "Frontal/Lateral", *findings)
        )
        for line, row in rows:
            if frontal_only and row["Frontal/Lateral"] != "Frontal":
                n_frontal_dropped += 1
                continue
            rel = Path(row["Path"])
            # paths start with the data set's folder name (CheXpert-v1.0-small/train/...)
            paths.append(str(folder.parent / rel if rel.parts and rel.parts[0] == folder.name else folder / rel))
            for f in findings:
                labels[f].append(_chexpert_label(row[f], uncertain, csv_path, line, f))
            sex.append({"Female": 0, "Male": 1}.get(row["Sex"], -1))
            try:
                age.append(int(float(row["Age"])))
            except ValueError:
                age.append(-1)
                if row["Age"].strip():
                    bad_age.append((line, row["Age"]))
            if row["Sex"] not in ("Female", "Male", "Unknown", ""):
                bad_sex.append((line, row["Sex"]))
            partition.append(0 if split == "train" else 1)
    n = _limit(len(paths), max_samples)
    if n == 0:
        raise FairmtError(f"CheXpert: no image listed in {parts}")
    if not Path(paths[0]).is_file():
        raise FairmtError(f"CheXpert: image {paths[0]} (first row) not found. {CHEXPERT_HOW}")
    from datasets import Dataset

    groups, names = {}, {}
    if "Sex" in protected:
        groups["Sex"], names["Sex"] = np.asarray(sex[:n]), ["Female", "Male"]
    if "Age" in protected:
        a = np.asarray(age[:n])
        groups["Age"] = np.where(a < 0, -1, (a >= age_threshold).astype(np.int64))
        names["Age"] = [f"<{age_threshold}", f">={age_threshold}"]
    notes = [f"uncertain labels: U-{uncertain.capitalize()}"]
    for attr, bad in (("Age", bad_age), ("Sex", bad_sex)):
        if bad and attr in protected:
            note = (
                f"{len(bad)} rows have an unreadable {attr} (first: line {bad[0][0]}, {bad[0][1]!r}): their {attr} "
                "group is unknown (-1) and they are left out of its fairness numbers"
            )
            notes.append(note)
            warnings.warn(f"CheXpert {csv_path.name}: {note}", stacklevel=2)
    if n_frontal_dropped:
        notes.append(f"{n_frontal_dropped} lateral views dropped (frontal_only)")
    return ImageData(
        name="chexpert",
        dataset=Dataset.from_dict({"path": paths[:n]}),
        targets={f: np.asarray(v[:n], dtype=np.int64) for f, v in labels.items()},
        groups=groups,
        group_names=names,
        partition=np.asarray(partition[:n]),
        source=str(folder),
        notes=notes,
    )


def _chexpert_label(value: str, uncertain: str, path: Path, line: int, finding: str) -> int:
    v = value.strip()
    if v == "":
        return 0
    try:
        x = float(v)
    except ValueError:
        raise FairmtError(f"{path}:{line}: {finding} must be 1, 0, -1 or blank, got {value!r}") from None
    if x == 1.0:
        return 1
    if x == 0.0:
        return 0
    if x == -1.0:
        return {"zeros": 0, "ones": 1, "ignore": -1}[uncertain]
    raise FairmtError(f"{path}:{line}: {finding} must be 1, 0, -1 or blank, got {value!r}")


# ---------------------------------------------------------------------------------------------------- synthetic
def synthetic_shapes(n: int = 300, minority_fraction: float = 0.2, image_size: int = 32, seed: int = 0) -> ImageData:
    """``n`` images of a square or a disc (probe target ``shape``: 0 square, 1 disc, balanced) on grey noise. The
    planted attribute ``colour`` (group): a majority family of warm colours (``1 − minority_fraction`` of the images)
    and a minority of cool ones; position, size and shade vary."""
    if not 0 < minority_fraction < 1 or n < 4:
        raise FairmtError(f"synthetic_shapes needs n >= 4 and 0 < minority_fraction < 1, got {n}, {minority_fraction}")
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:image_size, 0:image_size]
    rows, shape, colour = [], np.arange(n) % 2, (rng.random(n) < minority_fraction).astype(np.int64)
    for i in range(n):
        img = rng.normal(128, 20, (image_size, image_size, 3))
        r = rng.uniform(0.18, 0.3) * image_size
        cy, cx = rng.uniform(r, image_size - r, 2)
        if shape[i]:
            mask = (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
        else:
            mask = (np.abs(yy - cy) <= r * 0.85) & (np.abs(xx - cx) <= r * 0.85)
        base = np.array([220, 60, 40]) if colour[i] == 0 else np.array([40, 80, 220])
        img[mask] = base + rng.normal(0, 15, 3)
        rows.append({"pixels": np.clip(img, 0, 255).astype(np.uint8)})
    return ImageData(
        name="synthetic_shapes",
        dataset=rows,
        targets={"shape": shape.astype(np.int64)},
        groups={"colour": colour},
        group_names={"colour": ["majority", "minority"]},
        source=f"synthetic_shapes(n={n}, minority_fraction={minority_fraction}, seed={seed})",
    )


# ---------------------------------------------------------------------------------------------- collation, views
MAX_IMAGE_PIXELS = 64_000_000
"""Largest image :func:`load_image` decodes (width × height, read from the header before decoding; a 14,000 ×
14,000 PNG of a few kilobytes would otherwise take gigabytes). ``$FAIRMT_MAX_IMAGE_PIXELS`` changes it."""


def max_image_pixels() -> int:
    """:data:`MAX_IMAGE_PIXELS`, or ``$FAIRMT_MAX_IMAGE_PIXELS`` checked like an option."""
    raw = os.environ.get("FAIRMT_MAX_IMAGE_PIXELS")
    if raw is None:
        return MAX_IMAGE_PIXELS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise FairmtError(f"FAIRMT_MAX_IMAGE_PIXELS={raw!r}: give a positive whole number of pixels")
    return value


def _to_rgb(img):
    """An RGB copy of a PIL image. 16- and 32-bit greyscale (``I;16``, ``I``, ``F``: radiograph exports) is scaled
    to 8 bits by its bit depth (by its maximum for float images) instead of being clipped at 255, which turned
    every pixel white."""
    from PIL import Image

    if img.mode in ("I;16", "I;16B", "I;16L", "I;16N", "I", "F"):
        arr = np.asarray(img, dtype=np.float64)
        if img.mode == "F":
            top = float(np.nanmax(arr)) if arr.size and np.nanmax(arr) > 0 else 1.0
        else:
            top = 255.0 if arr.size == 0 or arr.max() <= 255 else 65535.0 if arr.max() <= 65535 else float(arr.max())
        img = Image.fromarray(np.clip(np.nan_to_num(arr) / top * 255.0, 0, 255).round().astype(np.uint8))
    return img.convert("RGB")


def load_image(row: dict[str, Any]):
    """The row's image as an RGB PIL image (``image``, ``path`` or ``pixels``).

    A file whose header declares more than :data:`MAX_IMAGE_PIXELS` pixels is refused before decoding; 16-bit
    greyscale keeps its contrast (:func:`_to_rgb`)."""
    from PIL import Image, UnidentifiedImageError

    if "pixels" in row:
        return Image.fromarray(np.asarray(row["pixels"], dtype=np.uint8)).convert("RGB")
    img = row.get("image")
    if img is None and "path" in row:
        img = row["path"]
    if isinstance(img, dict):  # a datasets Image feature left undecoded
        img = img.get("path") if img.get("bytes") is None else io.BytesIO(img["bytes"])
    if isinstance(img, (str, os.PathLike)) or hasattr(img, "read"):
        limit = max_image_pixels()
        try:
            with Image.open(img) as opened:
                w, h = opened.size
                if w * h > limit:
                    raise FairmtError(
                        f"image {img} declares {w} × {h} = {w * h:,} pixels, over the limit of {limit:,} "
                        "(FAIRMT_MAX_IMAGE_PIXELS): a corrupt file or a decompression bomb; resize it or raise the limit"
                    )
                return _to_rgb(opened)
        except FileNotFoundError:
            raise FairmtError(f"image {img} not found") from None
        except Image.DecompressionBombError as err:
            raise FairmtError(f"image {img} refused by Pillow as a decompression bomb ({err})") from None
        except (UnidentifiedImageError, OSError) as err:
            raise FairmtError(f"image {img} cannot be decoded ({err})") from None
    if isinstance(img, Image.Image):
        return _to_rgb(img)
    raise FairmtError(f"an image row needs 'path', 'image' or 'pixels'; got keys {sorted(row)}")


class ImageCollator:
    """Decode rows with Pillow and run ``processor`` (an ``AutoImageProcessor``) without normalisation: the batch's
    ``pixel_values`` lie in ``[0, 1]`` (:class:`SimCLRAugmentation` normalises after augmenting)."""

    def __init__(self, processor: Any):
        self.processor = processor

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, Any]:
        images = [load_image(f) for f in features]
        out = self.processor(images, do_normalize=False, return_tensors="pt")
        return {"pixel_values": out["pixel_values"].float()}


def processor_stats(processor: Any) -> tuple[list[float], list[float]]:
    """The processor's normalisation mean and std (ImageNet's when it has none)."""
    mean = getattr(processor, "image_mean", None) or [0.485, 0.456, 0.406]
    std = getattr(processor, "image_std", None) or [0.229, 0.224, 0.225]
    return [float(x) for x in mean], [float(x) for x in std]


class SimCLRAugmentation:
    """SimCLR's stochastic views (kornia, on the batch's device) followed by normalisation; see the module docstring.

    Args:
        mean, std: the backbone processor's normalisation.
        crop_scale: area range of the random resized crop (output size = input size).
        flip_p, jitter, jitter_p, grayscale_p, blur_p, blur_sigma, blur_kernel_fraction: the other transforms; a
        probability of 0 turns one off.
    """

    def __init__(
        self,
        mean: Sequence[float],
        std: Sequence[float],
        crop_scale: Sequence[float] = (0.08, 1.0),
        flip_p: float = 0.5,
        jitter: Sequence[float] = (0.8, 0.8, 0.8, 0.2),
        jitter_p: float = 0.8,
        grayscale_p: float = 0.2,
        blur_p: float = 0.5,
        blur_sigma: Sequence[float] = (0.1, 2.0),
        blur_kernel_fraction: float = 0.1,
    ):
        import kornia.augmentation as K

        self.settings = dict(
            crop_scale=list(crop_scale),
            flip_p=flip_p,
            jitter=list(jitter),
            jitter_p=jitter_p,
            grayscale_p=grayscale_p,
            blur_p=blur_p,
            blur_sigma=list(blur_sigma),
            blur_kernel_fraction=blur_kernel_fraction,
        )
        self.norm = K.Normalize(mean=list(mean), std=list(std))
        self._pipelines: dict[tuple[int, int], Any] = {}

    def _pipeline(self, h: int, w: int):
        import kornia.augmentation as K

        key = (h, w)
        if key not in self._pipelines:
            s = self.settings
            kernel = max(3, int(round(s["blur_kernel_fraction"] * min(h, w))) | 1)  # odd
            steps = [K.RandomResizedCrop((h, w), scale=tuple(s["crop_scale"]))]
            if s["flip_p"] > 0:
                steps.append(K.RandomHorizontalFlip(p=s["flip_p"]))
            if s["jitter_p"] > 0:
                steps.append(K.ColorJitter(*s["jitter"], p=s["jitter_p"]))
            if s["grayscale_p"] > 0:
                steps.append(K.RandomGrayscale(p=s["grayscale_p"]))
            if s["blur_p"] > 0:
                steps.append(K.RandomGaussianBlur((kernel, kernel), tuple(s["blur_sigma"]), p=s["blur_p"]))
            self._pipelines[key] = K.AugmentationSequential(*steps)
        return self._pipelines[key]

    def __call__(self, pixel_values):
        """One random view of every image of ``(N, 3, H, W)`` ``[0, 1]`` pixels, normalised."""
        x = pixel_values.float()
        return self.norm.to(x.device)(self._pipeline(x.shape[-2], x.shape[-1]).to(x.device)(x))

    def clean(self, pixel_values):
        """The image itself, normalised (no augmentation)."""
        x = pixel_values.float()
        return self.norm.to(x.device)(x)


__all__ = [
    "CELEBA_HUB_ID",
    "CHEXPERT_FIVE",
    "CHEXPERT_FINDINGS",
    "ImageCollator",
    "ImageData",
    "SimCLRAugmentation",
    "load_image",
    "processor_stats",
    "read_celeba",
    "read_chexpert",
    "synthetic_shapes",
]
