"""Language codes of the supported MT model families, with clear errors for unknown ones.

* M2M-100 and SMaLL-100 use fairseq's 100 ISO-style codes (``en``, ``de``, ...), tokens ``__de__``.
* NLLB-200 uses FLORES-200 codes (``eng_Latn``, ``deu_Latn``, ...); :func:`nllb_code` also accepts the ISO code of
  the languages used by fairmt's benchmarks (WinoMT, MT-GenEval, FLORES evaluations).
"""

from __future__ import annotations

from fairmt.errors import FairmtError


def m2m_codes() -> list[str]:
    from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES

    return list(FAIRSEQ_LANGUAGE_CODES["m2m100"])


def _nllb_codes() -> list[str]:
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

    return list(FAIRSEQ_LANGUAGE_CODES)


class _LazyCodes:
    def __iter__(self):
        return iter(_nllb_codes())

    def __contains__(self, item):
        return item in _nllb_codes()

    def __len__(self):
        return len(_nllb_codes())


NLLB_CODES = _LazyCodes()

# ISO 639-1 → FLORES-200 for the languages of WinoMT, MT-GenEval and the GACL paper's evaluations.
ISO_TO_NLLB = {
    "en": "eng_Latn", "de": "deu_Latn", "fr": "fra_Latn", "es": "spa_Latn", "it": "ita_Latn", "pt": "por_Latn",
    "ru": "rus_Cyrl", "uk": "ukr_Cyrl", "pl": "pol_Latn", "cs": "ces_Latn", "he": "heb_Hebr", "ar": "arb_Arab",
    "hi": "hin_Deva", "tr": "tur_Latn", "nl": "nld_Latn", "zh": "zho_Hans", "ja": "jpn_Jpan", "ko": "kor_Hang",
    "sv": "swe_Latn", "da": "dan_Latn", "fi": "fin_Latn", "el": "ell_Grek", "ro": "ron_Latn", "hu": "hun_Latn",
}


def _unknown(code: str, family: str, valid: list[str]) -> FairmtError:
    return FairmtError(f"unknown {family} language code {code!r}; valid codes are: {', '.join(valid)}")


_DISPLAY = {"m2m100": "M2M-100", "small100": "SMaLL-100"}


def check_m2m_code(code: str, family: str = "m2m100") -> str:
    valid = m2m_codes()
    if code not in valid:
        raise _unknown(code, _DISPLAY.get(family, family), valid)
    return code


def nllb_code(code: str) -> str:
    """The NLLB-200 code for ``code`` (an NLLB code, or an ISO code listed in :data:`ISO_TO_NLLB`)."""
    valid = _nllb_codes()
    if code in valid:
        return code
    if code in ISO_TO_NLLB:
        return ISO_TO_NLLB[code]
    raise _unknown(code, "NLLB-200", valid)
