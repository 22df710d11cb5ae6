"""`from fairmt import GACLConfig, GACLTrainer, ...` (TRL-style), lazily: `import fairmt` stays light."""

import sys

import pytest

import procs


def test_every_public_name_resolves_to_the_defining_object():
    import fairmt
    from fairmt.trainers.gacl import GACLTrainer

    assert fairmt.GACLTrainer is GACLTrainer
    for name in fairmt.__all__:
        assert getattr(fairmt, name) is not None, name
    assert set(fairmt.__all__) >= {
        "GACLConfig",
        "GACLTrainer",
        "CCDConfig",
        "CCDTrainer",
        "FairContrastiveConfig",
        "FairContrastiveTrainer",
        "FairnessSamplingConfig",
        "FairnessSamplingTrainer",
        "AdversarialConfig",
        "AdversarialTrainer",
        "inlp",
    }
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        fairmt.Nope  # noqa: B018


def test_import_fairmt_loads_neither_torch_nor_transformers():
    code = (  # one fresh process for both: before a lazy name is used, then after
        "import sys, fairmt; print(sorted(m for m in ('torch', 'transformers') if m in sys.modules)); "
        # the lightest lazy name that needs torch (GACLConfig would import transformers' Trainer: ~10 s of CPU)
        "from fairmt import GenderContrastiveCollator; print('torch' in sys.modules)"
    )
    out = procs.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "True"]
