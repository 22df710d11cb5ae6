"""Deprecated: the runner moved to :mod:`fairmt.translate` (translating), :mod:`fairmt.model_eval` (translating a
benchmark and scoring it) and :mod:`fairmt.distributed` (process helpers). Each old name still works, with a
``DeprecationWarning`` naming its new path, until fairmt 0.2."""

from fairmt._deprecated import moved_names

__getattr__ = moved_names(
    __name__,
    {
        "CACHE_FORMAT": "fairmt.translate.cache",
        "as_translator": "fairmt.translate",
        "flores_to_model_lang": "fairmt.translate",
        "generate_translations": "fairmt.translate",
        "model_fingerprint": "fairmt.translate.cache",
        "read_cache": "fairmt.translate.cache",
        "evaluate_flores": "fairmt.model_eval",
        "evaluate_geneval": "fairmt.model_eval",
        "translate_geneval": "fairmt.model_eval",
        "is_main_process": "fairmt.distributed",
        "world_size": "fairmt.distributed:launch_world_size",
    },
)
