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

# Every M2M-100/SMaLL-100 language code → its FLORES-200 (NLLB-200) code, so FLORES evaluations and NLLB models take
# the same codes as M2M-100 (the GACL paper's many-to-many table uses 20 of them). Breton (br) and Western Frisian (fy)
# have no FLORES-200 counterpart. Macro-languages map to the variety FLORES-200 uses (fa → pes, lv → lvs, mg → plt,
# mn → khk, ms → zsm, ne → npi, no → nob, ps → pbt, sq → als, sw → swh, uz → uzn, yi → ydd, az → azj, ff → fuv).
ISO_TO_NLLB = {
    "af": "afr_Latn",
    "am": "amh_Ethi",
    "ar": "arb_Arab",
    "ast": "ast_Latn",
    "az": "azj_Latn",
    "ba": "bak_Cyrl",
    "be": "bel_Cyrl",
    "bg": "bul_Cyrl",
    "bn": "ben_Beng",
    "bs": "bos_Latn",
    "ca": "cat_Latn",
    "ceb": "ceb_Latn",
    "cs": "ces_Latn",
    "cy": "cym_Latn",
    "da": "dan_Latn",
    "de": "deu_Latn",
    "el": "ell_Grek",
    "en": "eng_Latn",
    "es": "spa_Latn",
    "et": "est_Latn",
    "fa": "pes_Arab",
    "ff": "fuv_Latn",
    "fi": "fin_Latn",
    "fr": "fra_Latn",
    "ga": "gle_Latn",
    "gd": "gla_Latn",
    "gl": "glg_Latn",
    "gu": "guj_Gujr",
    "ha": "hau_Latn",
    "he": "heb_Hebr",
    "hi": "hin_Deva",
    "hr": "hrv_Latn",
    "ht": "hat_Latn",
    "hu": "hun_Latn",
    "hy": "hye_Armn",
    "id": "ind_Latn",
    "ig": "ibo_Latn",
    "ilo": "ilo_Latn",
    "is": "isl_Latn",
    "it": "ita_Latn",
    "ja": "jpn_Jpan",
    "jv": "jav_Latn",
    "ka": "kat_Geor",
    "kk": "kaz_Cyrl",
    "km": "khm_Khmr",
    "kn": "kan_Knda",
    "ko": "kor_Hang",
    "lb": "ltz_Latn",
    "lg": "lug_Latn",
    "ln": "lin_Latn",
    "lo": "lao_Laoo",
    "lt": "lit_Latn",
    "lv": "lvs_Latn",
    "mg": "plt_Latn",
    "mk": "mkd_Cyrl",
    "ml": "mal_Mlym",
    "mn": "khk_Cyrl",
    "mr": "mar_Deva",
    "ms": "zsm_Latn",
    "my": "mya_Mymr",
    "ne": "npi_Deva",
    "nl": "nld_Latn",
    "no": "nob_Latn",
    "ns": "nso_Latn",
    "oc": "oci_Latn",
    "or": "ory_Orya",
    "pa": "pan_Guru",
    "pl": "pol_Latn",
    "ps": "pbt_Arab",
    "pt": "por_Latn",
    "ro": "ron_Latn",
    "ru": "rus_Cyrl",
    "sd": "snd_Arab",
    "si": "sin_Sinh",
    "sk": "slk_Latn",
    "sl": "slv_Latn",
    "so": "som_Latn",
    "sq": "als_Latn",
    "sr": "srp_Cyrl",
    "ss": "ssw_Latn",
    "su": "sun_Latn",
    "sv": "swe_Latn",
    "sw": "swh_Latn",
    "ta": "tam_Taml",
    "th": "tha_Thai",
    "tl": "tgl_Latn",
    "tn": "tsn_Latn",
    "tr": "tur_Latn",
    "uk": "ukr_Cyrl",
    "ur": "urd_Arab",
    "uz": "uzn_Latn",
    "vi": "vie_Latn",
    "wo": "wol_Latn",
    "xh": "xho_Latn",
    "yi": "ydd_Hebr",
    "yo": "yor_Latn",
    "zh": "zho_Hans",
    "zu": "zul_Latn",
}
M2M_WITHOUT_FLORES = ("br", "fy")


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


# English names of the M2M-100/SMaLL-100 languages, for prompting LLM translators ("Translate ... into German.")
LANGUAGE_NAMES = {
    "af": "Afrikaans",
    "am": "Amharic",
    "ar": "Arabic",
    "ast": "Asturian",
    "az": "Azerbaijani",
    "ba": "Bashkir",
    "be": "Belarusian",
    "bg": "Bulgarian",
    "bn": "Bengali",
    "br": "Breton",
    "bs": "Bosnian",
    "ca": "Catalan",
    "ceb": "Cebuano",
    "cs": "Czech",
    "cy": "Welsh",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "es": "Spanish",
    "et": "Estonian",
    "fa": "Persian",
    "ff": "Fula",
    "fi": "Finnish",
    "fr": "French",
    "fy": "Western Frisian",
    "ga": "Irish",
    "gd": "Scottish Gaelic",
    "gl": "Galician",
    "gu": "Gujarati",
    "ha": "Hausa",
    "he": "Hebrew",
    "hi": "Hindi",
    "hr": "Croatian",
    "ht": "Haitian Creole",
    "hu": "Hungarian",
    "hy": "Armenian",
    "id": "Indonesian",
    "ig": "Igbo",
    "ilo": "Ilocano",
    "is": "Icelandic",
    "it": "Italian",
    "ja": "Japanese",
    "jv": "Javanese",
    "ka": "Georgian",
    "kk": "Kazakh",
    "km": "Khmer",
    "kn": "Kannada",
    "ko": "Korean",
    "lb": "Luxembourgish",
    "lg": "Ganda",
    "ln": "Lingala",
    "lo": "Lao",
    "lt": "Lithuanian",
    "lv": "Latvian",
    "mg": "Malagasy",
    "mk": "Macedonian",
    "ml": "Malayalam",
    "mn": "Mongolian",
    "mr": "Marathi",
    "ms": "Malay",
    "my": "Burmese",
    "ne": "Nepali",
    "nl": "Dutch",
    "no": "Norwegian",
    "ns": "Northern Sotho",
    "oc": "Occitan",
    "or": "Odia",
    "pa": "Punjabi",
    "pl": "Polish",
    "ps": "Pashto",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "sd": "Sindhi",
    "si": "Sinhala",
    "sk": "Slovak",
    "sl": "Slovenian",
    "so": "Somali",
    "sq": "Albanian",
    "sr": "Serbian",
    "ss": "Swati",
    "su": "Sundanese",
    "sv": "Swedish",
    "sw": "Swahili",
    "ta": "Tamil",
    "th": "Thai",
    "tl": "Tagalog",
    "tn": "Tswana",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "ur": "Urdu",
    "uz": "Uzbek",
    "vi": "Vietnamese",
    "wo": "Wolof",
    "xh": "Xhosa",
    "yi": "Yiddish",
    "yo": "Yoruba",
    "zh": "Chinese",
    "zu": "Zulu",
}


def language_name(code: str) -> str:
    """The English name of a language given by its ISO code (``de``) or FLORES-200 code (``deu_Latn``)."""
    if code in LANGUAGE_NAMES:
        return LANGUAGE_NAMES[code]
    for iso, flores in ISO_TO_NLLB.items():
        if flores == code:
            return LANGUAGE_NAMES[iso]
    raise FairmtError(
        f"no language name known for {code!r}: give an ISO code ({', '.join(sorted(LANGUAGE_NAMES))}) or the "
        "FLORES-200 code of one of them"
    )
