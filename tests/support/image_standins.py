"""Tiny stand-ins of CelebA and CheXpert-v1.0-small in their official layouts (for tests; no real image)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

CELEBA_ATTRS = [
    "5_o_Clock_Shadow",
    "Arched_Eyebrows",
    "Attractive",
    "Bags_Under_Eyes",
    "Bald",
    "Bangs",
    "Big_Lips",
    "Big_Nose",
    "Black_Hair",
    "Blond_Hair",
    "Blurry",
    "Brown_Hair",
    "Bushy_Eyebrows",
    "Chubby",
    "Double_Chin",
    "Eyeglasses",
    "Goatee",
    "Gray_Hair",
    "Heavy_Makeup",
    "High_Cheekbones",
    "Male",
    "Mouth_Slightly_Open",
    "Mustache",
    "Narrow_Eyes",
    "No_Beard",
    "Oval_Face",
    "Pale_Skin",
    "Pointy_Nose",
    "Receding_Hairline",
    "Rosy_Cheeks",
    "Sideburns",
    "Smiling",
    "Straight_Hair",
    "Wavy_Hair",
    "Wearing_Earrings",
    "Wearing_Hat",
    "Wearing_Lipstick",
    "Wearing_Necklace",
    "Wearing_Necktie",
    "Young",
]


def _image(rng, size, grey=False):
    from PIL import Image

    h, w = size
    img = rng.integers(0, 255, (h, w, 3), dtype=np.uint8)
    img[: h // 2, :, 0] = rng.integers(0, 255)  # some structure
    return Image.fromarray(img[:, :, 0] if grey else img)


def make_celeba(root: Path, n: int = 40, seed: int = 0) -> Path:
    """``root`` with ``img_align_celeba/NNNNNN.jpg`` (small), ``list_attr_celeba.txt`` (count line, 40 names, rows of
    ±1 with the release's double spaces) and ``list_eval_partition.txt`` (first 60 % train, 20 % valid, 20 % test)."""
    rng = np.random.default_rng(seed)
    (root / "img_align_celeba").mkdir(parents=True, exist_ok=True)
    values = rng.choice([-1, 1], size=(n, len(CELEBA_ATTRS)))
    lines = [str(n), " ".join(CELEBA_ATTRS)]
    parts = []
    for i in range(n):
        name = f"{i + 1:06d}.jpg"
        _image(rng, (22, 18)).save(root / "img_align_celeba" / name, quality=90)
        lines.append(name + " " + " ".join(f"{v:2d}" for v in values[i]))  # " 1" / "-1": double spaces as released
        parts.append(f"{name} {0 if i < 0.6 * n else 1 if i < 0.8 * n else 2}")
    (root / "list_attr_celeba.txt").write_text("\n".join(lines) + "\n")
    (root / "list_eval_partition.txt").write_text("\n".join(parts) + "\n")
    return root


CHEXPERT_COLUMNS = [
    "Path",
    "Sex",
    "Age",
    "Frontal/Lateral",
    "AP/PA",
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
]


def make_chexpert(root: Path, n_train: int = 36, n_valid: int = 8, seed: int = 0) -> Path:
    """``root/CheXpert-v1.0-small/{train,valid}.csv`` and the grey JPEGs they list (``CheXpert-v1.0-small/train/
    patientNNNNN/study1/view1_frontal.jpg``); labels 1.0 / 0.0 / -1.0 / blank as in the release (no -1 in valid)."""
    rng = np.random.default_rng(seed)
    base = root / "CheXpert-v1.0-small"
    for split, n in (("train", n_train), ("valid", n_valid)):
        rows = [",".join(CHEXPERT_COLUMNS)]
        for i in range(n):
            view = "frontal" if i % 4 else "lateral"
            rel = f"CheXpert-v1.0-small/{split}/patient{i + 1:05d}/study1/view1_{view}.jpg"
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            _image(rng, (20, 24), grey=True).save(path, quality=90)
            choices = ["1.0", "0.0", "", "-1.0"] if split == "train" else ["1.0", "0.0"]
            findings = [str(rng.choice(choices)) for _ in CHEXPERT_COLUMNS[5:]]
            sex = ["Female", "Male", "Unknown"][i % 3] if i % 7 else "Male"
            rows.append(
                ",".join([rel, sex, str(20 + (i * 7) % 70), view.capitalize(), "AP" if i % 2 else "PA", *findings])
            )
        (base / f"{split}.csv").write_text("\n".join(rows) + "\n")
    return root
