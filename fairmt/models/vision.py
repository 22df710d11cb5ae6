"""Image encoders for SimCLR-style contrastive training: any Hugging Face vision backbone plus SimCLR's projection head.

:class:`SimCLRModel` (a ``transformers.PreTrainedModel``, ``model_type = "fairmt_simclr"``) holds a backbone built
with ``AutoModel`` — ResNet-50 (``microsoft/resnet-50``'s architecture) in Martin & Ogbuokiri, any vision model
that returns ``pooler_output`` or ``last_hidden_state`` otherwise — and the projection head of Chen et al. (2020):
``Linear(d, d) → ReLU → Linear(d, 128)``. Its forward takes normalised ``pixel_values`` (the backbone's
``AutoImageProcessor`` output, or :class:`fairmt.data.images.SimCLRAugmentation`'s) and returns

* ``pooler_output`` — ``h``, the backbone's pooled ``(N, d)`` features (what a linear probe is trained on), and
* ``projection`` — ``z = g(h)``, ``(N, 128)``: the space of the contrastive loss, of the latent subgroups and of
  Algorithm 1's pairs.

``save_pretrained`` / ``from_pretrained`` / ``push_to_hub`` work as for any transformers model (the backbone config
is nested in the config); :func:`build_simclr_model` starts one from a backbone name or folder, randomly initialised
(SimCLR pre-trains from scratch) or with the backbone's weights (``pretrained=True``). :func:`tiny_resnet` saves a
small random ResNet with a processor, for tests and benchmarks without the Hub.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn
from transformers import AutoConfig, AutoModel, PretrainedConfig, PreTrainedModel
from transformers.utils import ModelOutput

from fairmt.errors import COUNT, FairmtError, Range, check_ranges


class SimCLRConfig(PretrainedConfig):
    """Config of :class:`SimCLRModel`: the backbone's config (nested) and the projection head's sizes.

    Args:
        backbone_config: the backbone's config (a ``PretrainedConfig`` or its dict with ``model_type``).
        projection_dim: output size of the head (128 in SimCLR and in the paper).
        projection_hidden_dim: hidden size of the head (default: the backbone's feature size, as SimCLR).
    """

    model_type = "fairmt_simclr"
    sub_configs = {"backbone_config": AutoConfig}
    RANGES: ClassVar[dict[str, Range]] = {"projection_dim": COUNT, "projection_hidden_dim": COUNT}
    """Each numeric field's range (:func:`fairmt.errors.check_ranges`; the sampling recipe's ``model`` keys use the
    same declarations)."""

    def __init__(
        self,
        backbone_config: Any = None,
        projection_dim: int = 128,
        projection_hidden_dim: int | None = None,
        **kwargs: Any,
    ):
        if isinstance(backbone_config, dict):
            backbone_config = dict(backbone_config)
            backbone_config = AutoConfig.for_model(backbone_config.pop("model_type"), **backbone_config)
        self.backbone_config = backbone_config
        self.projection_dim = projection_dim
        self.projection_hidden_dim = projection_hidden_dim
        check_ranges(self)  # SimCLRConfig(projection_dim=0) is one line naming the field, not a shape error later
        super().__init__(**kwargs)


@dataclass
class SimCLROutput(ModelOutput):
    """``pooler_output`` = backbone features ``h`` (N, d); ``projection`` = ``z = g(h)`` (N, projection_dim)."""

    pooler_output: torch.Tensor | None = None
    projection: torch.Tensor | None = None


def backbone_feature_dim(config: PretrainedConfig) -> int:
    """Size of a vision backbone's pooled features (ResNet: the last stage's width; ViT-like: ``hidden_size``)."""
    sizes = getattr(config, "hidden_sizes", None)
    if sizes:
        return int(sizes[-1])
    for key in ("hidden_size", "hidden_dim", "embed_dim"):
        if getattr(config, key, None):
            return int(getattr(config, key))
    raise FairmtError(
        f"cannot tell the feature size of a {type(config).__name__} backbone (no hidden_sizes or "
        "hidden_size): give model.projection_hidden_dim and use a backbone with a pooled output"
    )


def pooled_features(outputs: Any) -> torch.Tensor:
    """``(N, d)`` pooled features of a vision backbone's output: ``pooler_output`` flattened (ResNet's is
    ``(N, d, 1, 1)``), else the mean of ``last_hidden_state`` over tokens or spatial positions."""
    pooled = getattr(outputs, "pooler_output", None)
    if pooled is not None:
        return pooled.flatten(1)
    h = outputs.last_hidden_state
    if h.dim() == 4:  # (N, C, H, W)
        return h.mean(dim=(2, 3))
    return h.mean(dim=1)


class SimCLRModel(PreTrainedModel):
    """Backbone + SimCLR projection head; see the module docstring."""

    config_class = SimCLRConfig
    base_model_prefix = "simclr"
    main_input_name = "pixel_values"

    def __init__(self, config: SimCLRConfig, backbone: nn.Module | None = None):
        super().__init__(config)
        if config.backbone_config is None:
            raise FairmtError("SimCLRConfig needs a backbone_config")
        self.backbone = backbone if backbone is not None else AutoModel.from_config(config.backbone_config)
        d = backbone_feature_dim(config.backbone_config)
        hidden = config.projection_hidden_dim or d
        self.projection = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, config.projection_dim))
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        if module in set(self.projection.modules()) and isinstance(module, nn.Linear):
            module.reset_parameters()  # PyTorch's default Linear initialisation, as SimCLR's head

    def forward(self, pixel_values: torch.Tensor, **_: Any) -> SimCLROutput:
        h = pooled_features(self.backbone(pixel_values=pixel_values))
        return SimCLROutput(pooler_output=h, projection=self.projection(h))


AutoConfig.register(SimCLRConfig.model_type, SimCLRConfig, exist_ok=True)
AutoModel.register(SimCLRConfig, SimCLRModel, exist_ok=True)


def _resolve(name: str) -> str:
    from fairmt.hub import require_model, resolve_model_ref

    return require_model(resolve_model_ref(name), "image backbone")


def build_simclr_model(
    backbone: str, pretrained: bool = False, projection_dim: int = 128, projection_hidden_dim: int | None = None
) -> SimCLRModel:
    """A :class:`SimCLRModel` on the backbone ``backbone`` (Hub id or folder, e.g. ``microsoft/resnet-50``): its
    architecture randomly initialised (``pretrained=False``, SimCLR from scratch) or its weights
    (``pretrained=True``)."""
    path = _resolve(backbone)
    if pretrained:
        net = AutoModel.from_pretrained(path)
        cfg = net.config
    else:
        cfg = AutoConfig.from_pretrained(path)
        net = AutoModel.from_config(cfg)
    config = SimCLRConfig(
        backbone_config=cfg, projection_dim=projection_dim, projection_hidden_dim=projection_hidden_dim
    )
    return SimCLRModel(config, backbone=net)


def load_image_processor(backbone: str):
    """The backbone's ``AutoImageProcessor`` (a slow, Pillow-based one when torchvision is missing)."""
    from transformers import AutoImageProcessor

    path = _resolve(backbone)
    try:
        return AutoImageProcessor.from_pretrained(path)
    except (OSError, ValueError) as err:
        raise FairmtError(
            f"image backbone {backbone}: no image processor ({str(err).splitlines()[0][:160]}); give a "
            "backbone folder with a preprocessor_config.json"
        ) from None


def tiny_resnet(
    folder: str | Path,
    image_size: int = 32,
    widths: tuple[int, ...] = (8, 16, 32, 64),
    depths: tuple[int, ...] = (1, 1, 1, 1),
) -> Path:
    """Save a small random ``ResNetModel`` (basic blocks) and a matching image processor in ``folder``: a stand-in
    for ``microsoft/resnet-50`` that builds in milliseconds. Returns the folder."""
    from transformers import ConvNextImageProcessorPil, ResNetConfig, ResNetModel

    folder = Path(folder)
    cfg = ResNetConfig(
        num_channels=3, embedding_size=widths[0], hidden_sizes=list(widths), depths=list(depths), layer_type="basic"
    )
    ResNetModel(cfg).save_pretrained(folder)
    # crop_pct 1: resize the short side to image_size, then a centre crop of image_size
    ConvNextImageProcessorPil(
        size={"shortest_edge": image_size},
        crop_pct=1.0,
        image_mean=[0.485, 0.456, 0.406],
        image_std=[0.229, 0.224, 0.225],
    ).save_pretrained(folder)
    return folder


def contrastive_features(model: nn.Module, inputs: dict[str, Any], pooling: str = "cls"):
    """``(h, z, logits)`` of one forward: a :class:`SimCLRModel` gives its backbone features, projection and no
    logits; a sequence classifier (``fairmt.models.text_classifiers`` or ``AutoModelForSequenceClassification``)
    gives its pooled representation as both ``h`` and ``z`` (no projection head) and its logits."""
    from fairmt.models.pooling import representation_and_logits

    if isinstance(getattr(model, "module", model), SimCLRModel):  # DDP wraps the model in .module
        out = model(**inputs)
        return out.pooler_output, out.projection, None
    rep, logits = representation_and_logits(model, inputs, pooling)
    return rep, rep, logits
