"""Images as users' folders hold them: a decompression bomb refused before decoding, 16-bit greyscale kept (not
flattened to white), a worker's decoding error as one line, unreadable CheXpert attributes counted and reported."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from fairmt.data.images import load_image, read_chexpert
from fairmt.errors import FairmtError


def _png_declaring(path, width: int, height: int) -> None:
    """A tiny valid 1 × 1 PNG whose header then claims width × height (CRC fixed): what a bomb's header says."""
    from PIL import Image

    Image.new("L", (1, 1)).save(path)
    data = bytearray(path.read_bytes())
    ihdr = data.index(b"IHDR")
    data[ihdr + 4 : ihdr + 12] = struct.pack(">II", width, height)
    data[ihdr + 17 : ihdr + 21] = struct.pack(">I", zlib.crc32(bytes(data[ihdr : ihdr + 17])))
    path.write_bytes(bytes(data))


def test_a_decompression_bomb_is_refused_from_its_header(tmp_path, monkeypatch):
    from PIL import Image

    bomb = tmp_path / "bomb.png"
    _png_declaring(bomb, 9_000, 9_000)  # over fairmt's limit, under Pillow's own
    assert bomb.stat().st_size < 200
    with pytest.raises(
        FairmtError,
        match=r"declares 9000 × 9000 = 81,000,000 pixels, over the limit of 64,000,000 "
        r"\(FAIRMT_MAX_IMAGE_PIXELS\)",
    ):
        load_image({"path": str(bomb)})
    _png_declaring(bomb, 14_000, 14_000)  # over Pillow's: its error, as one line
    with pytest.raises(FairmtError, match=r"bomb.png refused by Pillow as a decompression bomb"):
        load_image({"path": str(bomb)})
    small = tmp_path / "small.png"
    Image.new("L", (20, 20)).save(small)
    assert load_image({"path": str(small)}).size == (20, 20)
    monkeypatch.setenv("FAIRMT_MAX_IMAGE_PIXELS", "100")
    with pytest.raises(FairmtError, match="declares 20 × 20 = 400 pixels, over the limit of 100"):
        load_image({"path": str(small)})
    monkeypatch.setenv("FAIRMT_MAX_IMAGE_PIXELS", "lots")
    with pytest.raises(FairmtError, match="FAIRMT_MAX_IMAGE_PIXELS='lots': give a positive whole number"):
        load_image({"path": str(small)})


def test_16_bit_greyscale_keeps_its_contrast(tmp_path):
    from PIL import Image

    arr = np.tile(np.linspace(0, 4095, 32).astype(np.uint16), (8, 1))  # a 12-bit radiograph in a 16-bit PNG
    arr[:, -1] = 65535
    path = tmp_path / "xray16.png"
    Image.fromarray(arr).save(path)
    with Image.open(path) as im:
        assert im.mode.startswith("I")
    rgb = np.asarray(load_image({"path": str(path)}))
    assert rgb.shape == (8, 32, 3) and (rgb[..., 0] == rgb[..., 1]).all()
    assert rgb[0, 0, 0] == 0 and rgb[0, -1, 0] == 255
    expected = np.round(arr[0, :-1] / 65535 * 255)  # scaled by the bit depth, monotone, not clipped to white
    assert np.array_equal(rgb[0, :-1, 0], expected.astype(np.uint8))
    assert len(np.unique(rgb[0, :, 0])) > 10


class _Broken:
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return load_image({"path": "/nonexistent/zero.png"})


def test_a_workers_decoding_error_is_one_line():
    from torch.utils.data import DataLoader

    batches = iter(DataLoader(_Broken(), batch_size=2, num_workers=1))
    for _ in range(2):  # both batches of the 4 rows
        with pytest.raises(FairmtError) as caught:
            next(batches)
        assert str(caught.value) == "image /nonexistent/zero.png not found"
    # run to its end, the iterator stops its worker itself. Left to the collector (the re-raised error holds it in a
    # reference cycle), torch's clean-up found the worker's queue already finalised and waited 5 s for the worker.
    with pytest.raises(StopIteration):
        next(batches)


def test_unreadable_chexpert_attributes_are_counted_and_reported(tmp_path):
    from image_standins import make_chexpert

    make_chexpert(tmp_path)
    csv = tmp_path / "CheXpert-v1.0-small" / "train.csv"
    lines = csv.read_text().splitlines()
    header = lines[0].split(",")
    age_col = header.index("Age")
    rows = [line.split(",") for line in lines[1:]]
    for r in rows[:5]:
        r[age_col] = "sixty"
    csv.write_text("\n".join([lines[0], *(",".join(r) for r in rows)]) + "\n")
    with pytest.warns(UserWarning, match=r"5 rows have an unreadable Age \(first: line 2, 'sixty'\)"):
        data = read_chexpert(tmp_path, splits="train")
    assert any("unreadable Age" in n for n in data.notes)
    assert (data.groups["Age"][:5] == -1).all() and (data.groups["Age"][5:] >= 0).all()
