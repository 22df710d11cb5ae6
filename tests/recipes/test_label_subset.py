"""``data.label_subset``: Shen et al.'s Table 2 (nurse vs surgeon of Bias-in-Bios) as a data option — only those task
labels in every split, re-indexed in the order given; a name the data set lacks is refused in one line."""

from __future__ import annotations

import pytest

from fairmt.data.classification import ClassificationData, ClassificationSplit
from fairmt.errors import FairmtError
from fairmt.recipes.classification.runner import keep_labels


def _data():
    names = ["accountant", "nurse", "surgeon", "teacher"]
    split = ClassificationSplit(
        labels=[0, 1, 2, 3, 2, 1, 0, 2], groups=[0, 1, 0, 1, 1, 1, 0, 0], texts=[f"bio {i}" for i in range(8)]
    )
    return ClassificationData(
        splits={"train": split, "dev": split.subset([1, 2, 3]), "test": split.subset([4, 5])},
        label_names=names,
        group_names=["m", "f"],
    )


def test_only_the_named_labels_remain_reindexed_in_order():
    data = keep_labels(_data(), ["nurse", "surgeon"])
    assert data.label_names == ["nurse", "surgeon"] and data.num_labels == 2
    train = data.splits["train"]
    assert train.texts == ["bio 1", "bio 2", "bio 4", "bio 5", "bio 7"]
    assert train.labels == [0, 1, 1, 0, 1] and train.groups == [1, 0, 1, 1, 0]
    assert data.splits["dev"].labels == [0, 1] and data.splits["test"].labels == [1, 0]
    assert "nurse, surgeon (data.label_subset)" in data.notes[-1]
    swapped = keep_labels(_data(), ["surgeon", "nurse"])
    assert swapped.splits["train"].labels == [1, 0, 0, 1, 0]


def test_unknown_or_repeated_labels_are_refused():
    with pytest.raises(FairmtError, match=r"\['doctor'\] not among the data set's labels \(accountant, nurse"):
        keep_labels(_data(), ["nurse", "doctor"])
    with pytest.raises(FairmtError, match="named twice"):
        keep_labels(_data(), ["nurse", "nurse"])


def test_the_nurse_surgeon_recipe_resolves_to_table_2():
    from fairmt.commands.train import load_recipe
    from fairmt.recipes.classification.runner import resolve_config

    cfg = resolve_config(load_recipe("classification/fcl_bios_nurse_surgeon"))
    assert cfg["data"]["label_subset"] == ["nurse", "surgeon"] and cfg["data"]["dataset"] == "bios_split"
    assert cfg["metrics"]["positive_class"] == 1
