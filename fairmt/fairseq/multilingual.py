"""fairseq task ``gacl_multilingual_translation``: ``translation_multi_simple_epoch`` (M2M-100 / NLLB-style language
tokens) plus, per sentence, the gender label and the binarised counterfactual source (``sample["gacl"]``, as
``gacl_translation`` gives them to the ``gacl_kd`` criterion).

For every training direction ``src-tgt`` of ``--lang-pairs`` it reads, beside fairseq's
``{split}.{src}-{tgt}.{lang}.{bin,idx}``, the side files ``{split}.{src}-{tgt}.gender`` and
``{split}.{src}-{tgt}.cf.{bin,idx}`` (named for that exact direction; ``fairmt data fairseq-prep --lang-pairs``
writes them with the joined dictionary, ``dict.{lang}.txt`` and ``langs.txt`` for ``--lang-dict``). The
counterfactual source goes through the same source transformation as the real one: truncation
(``--truncate-source``), then the encoder language token of ``--encoder-langtok src|tgt`` prepended by
multi_simple_epoch's own function, so the encoder sees ``__en__ She is tired .`` beside ``__en__ He is tired .``;
the targets (with ``--decoder-langtok``) are fairseq's.

``--balanced-genders``: training batches of exactly ``--batch-size`` sentences, half male, half female, drawn over
all directions (fairmt's :class:`~fairmt.data.gacl.GenderBalancedSampler` on the sampled dataset's indices, redrawn
each epoch as multi_simple_epoch's sampling is); without it fairseq's batches are used and a one-gender batch stops
training with a message naming this option. Not supported (a clear error): ``--lang-tok-replacing-bos-eos`` and
``--extra-data`` (their batches carry no counterfactuals).
"""

import logging

from fairseq.data.multilingual.multilingual_data_manager import MultilingualDatasetManager
from fairseq.tasks import register_task
from fairseq.tasks.translation_multi_simple_epoch import TranslationMultiSimpleEpochTask

from fairmt.errors import FairmtError
from fairmt.fairseq.task import BalancedBatchesMixin, GACLPairDataset, load_side_files, model_dims

logger = logging.getLogger(__name__)

TASK = "gacl_multilingual_translation"


class GACLMultilingualDatasetManager(MultilingualDatasetManager):
    """multi_simple_epoch's data manager, wrapping each direction's ``LanguagePairDataset`` in a
    :class:`~fairmt.fairseq.task.GACLPairDataset` whose counterfactual sources carry the same language token."""

    def load_a_dataset(
        self,
        split,
        data_path,
        src,
        src_dict,
        tgt,
        tgt_dict,
        combine,
        prepend_bos=False,
        langpairs_sharing_datasets=None,
        data_category=None,
        **extra_kwargs,
    ):
        if self.args.lang_tok_replacing_bos_eos:
            raise FairmtError(
                f"{TASK} does not support --lang-tok-replacing-bos-eos: use --encoder-langtok src|tgt "
                "and --decoder-langtok (M2M-100 / NLLB style)"
            )
        if data_category != "main":
            raise FairmtError(
                f"{TASK}: --extra-data ({data_category}) has no gender labels or counterfactuals; "
                "train GACL on the main --lang-pairs data only"
            )
        ds = super().load_a_dataset(
            split,
            data_path,
            src,
            src_dict,
            tgt,
            tgt_dict,
            combine,
            prepend_bos=prepend_bos,
            langpairs_sharing_datasets=langpairs_sharing_datasets,
            data_category=data_category,
            **extra_kwargs,
        )
        genders, cf = load_side_files(
            data_path, split, src, tgt, len(ds), src_dict, self.args.dataset_impl, TASK, reversed_name=False
        )
        if prepend_bos:
            raise FairmtError(f"{TASK}: prepend_bos data are not supported")
        if self.args.truncate_source:  # as load_lang_dataset does to the sources, before the language token
            from fairseq.data import AppendTokenDataset, StripTokenDataset, TruncateDataset

            eos = src_dict.eos()
            cf = AppendTokenDataset(
                TruncateDataset(StripTokenDataset(cf, eos), self.args.max_source_positions - 1), eos
            )
        src_langtok_spec, _ = extra_kwargs["langtok_spec"]
        cf = self.src_dataset_tranform_func(src, tgt, cf, src_langtok_spec)  # the source's own language token
        logger.info(f"{TASK} {split} {src}-{tgt}: {int((genders == 0).sum())} male, {int((genders == 1).sum())} female")
        return GACLPairDataset(ds, genders, cf, split, self.args.left_pad_source)


@register_task(TASK)
class GACLMultilingualTranslationTask(BalancedBatchesMixin, TranslationMultiSimpleEpochTask):
    """``translation_multi_simple_epoch`` + gender labels and counterfactual sources for the ``gacl_kd``
    criterion (see the module docstring)."""

    @staticmethod
    def add_args(parser):
        TranslationMultiSimpleEpochTask.add_args(parser)
        parser.add_argument(
            "--balanced-genders",
            action="store_true",
            help="training batches of exactly --batch-size sentences (even), half male, half female "
            "(fairmt's GenderBalancedSampler); needed for in-batch negatives",
        )

    def __init__(self, args, langs, dicts, training):
        super().__init__(args, langs, dicts, training)
        # (MultilingualDatasetManager.setup_data_manager builds the base class whatever it is called on)
        self.data_manager = GACLMultilingualDatasetManager(args, self.lang_pairs, langs, dicts, self.sampling_method)

    def build_model(self, args, from_checkpoint=False):
        model = super().build_model(args, from_checkpoint)
        self.gacl_model_dims = model_dims(model)  # the criterion's projection head is sized from it
        return model

    def balanced(self, dataset) -> bool:
        split = next((s for s, d in self.datasets.items() if d is dataset), "")
        return bool(getattr(self.args, "balanced_genders", False) and split.startswith("train"))
