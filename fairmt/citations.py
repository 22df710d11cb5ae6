"""BibTeX of the methods fairmt implements and the benchmarks it reports, in one place (model cards, docs).

Titles and authors are checked against the papers themselves; venues are the published ones where the paper states
them, else marked as preprints. ``bibtex(*keys)`` joins entries; :data:`METHOD_PAPERS` and :data:`BENCHMARK_PAPERS`
map fairmt's method and benchmark names to keys.
"""

from __future__ import annotations

ENTRIES: dict[str, str] = {
    "lee2023gacl": """@inproceedings{lee2023gacl,
  title = {Target-Agnostic Gender-Aware Contrastive Learning for Mitigating Bias in Multilingual Machine Translation},
  author = {Lee, Minwoo and Koh, Hyukhun and Lee, Kang-il and Zhang, Dongdong and Kim, Minsung and Jung, Kyomin},
  booktitle = {Proceedings of the 2023 Conference on Empirical Methods in Natural Language Processing},
  year = {2023},
  url = {https://aclanthology.org/2023.emnlp-main.1046},
}""",
    "ccd2024": """@misc{ccd2024,
  title = {{LLM}-Assisted Content Conditional Debiasing for Fair Text Embedding},
  year = {2024},
  note = {Preprint},
}""",
    # DPCE: title and authors as printed in the CCD paper's reference list (arXiv:2101.09523); published at EACL 2021
    # (the venue and the anthology id are from memory, not checked against the paper: verify before citing).
    "kaneko2021dpce": """@inproceedings{kaneko2021dpce,
  title = {Debiasing Pre-trained Contextualised Embeddings},
  author = {Kaneko, Masahiro and Bollegala, Danushka},
  booktitle = {Proceedings of the 16th Conference of the European Chapter of the Association for Computational Linguistics: Main Volume},
  year = {2021},
  note = {arXiv:2101.09523. Venue details unverified},
}""",
    # ADEPT: title, authors, venue, volume and pages as printed in the CCD paper's reference list.
    "yang2023adept": """@inproceedings{yang2023adept,
  title = {{ADEPT}: A {DEbiasing} {PrompT} Framework},
  author = {Yang, Ke and Yu, Charles and Fung, Yi R. and Li, Manling and Ji, Heng},
  booktitle = {Proceedings of the AAAI Conference on Artificial Intelligence},
  volume = {37},
  pages = {10780--10788},
  year = {2023},
}""",
    "chi2022cscl": """@inproceedings{chi2022cscl,
  title = {Conditional Supervised Contrastive Learning for Fair Text Classification},
  author = {Chi, Jianfeng and Shand, William and Yu, Yaodong and Chang, Kai-Wei and Zhao, Han and Tian, Yuan},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2022},
  year = {2022},
}""",
    "shen2022fcl": """@misc{shen2022fcl,
  title = {Contrastive Learning for Fair Representations},
  author = {Shen, Aili and Han, Xudong and Cohn, Trevor and Baldwin, Timothy and Frermann, Lea},
  year = {2022},
}""",
    "martin_ogbuokiri_sampling": """@misc{martin_ogbuokiri_sampling,
  title = {Reducing Representation Bias through Fairness-Driven Sampling in Contrastive Learning},
  author = {Martin, David and Ogbuokiri, Blessing},
  note = {Preprint},
}""",
    "stanovsky2019winomt": """@inproceedings{stanovsky2019winomt,
  title = {Evaluating Gender Bias in Machine Translation},
  author = {Stanovsky, Gabriel and Smith, Noah A. and Zettlemoyer, Luke},
  booktitle = {Proceedings of the 57th Annual Meeting of the Association for Computational Linguistics},
  year = {2019},
  url = {https://aclanthology.org/P19-1164},
}""",
    "currey2022geneval": """@inproceedings{currey2022geneval,
  title = {{MT-GenEval}: A Counterfactual and Contextual Dataset for Evaluating Gender Accuracy in Machine Translation},
  author = {Currey, Anna and Nadejde, Maria and Pappagari, Raghavendra and Mayer, Mia and Lauly, Stanislas and Niu, Xing and Hsu, Benjamin and Dinu, Georgiana},
  booktitle = {Proceedings of the 2022 Conference on Empirical Methods in Natural Language Processing},
  year = {2022},
}""",
    "nllb2022flores200": """@article{nllb2022flores200,
  title = {No Language Left Behind: Scaling Human-Centered Machine Translation},
  author = {{NLLB Team}},
  journal = {arXiv preprint arXiv:2207.04672},
  year = {2022},
}""",
    "may2019seat": """@inproceedings{may2019seat,
  title = {On Measuring Social Biases in Sentence Encoders},
  author = {May, Chandler and Wang, Alex and Bordia, Shikha and Bowman, Samuel R. and Rudinger, Rachel},
  booktitle = {Proceedings of the 2019 Conference of the North American Chapter of the Association for Computational Linguistics},
  year = {2019},
}""",
    "nangia2020crows": """@inproceedings{nangia2020crows,
  title = {{CrowS-Pairs}: A Challenge Dataset for Measuring Social Biases in Masked Language Models},
  author = {Nangia, Nikita and Vania, Clara and Bhalerao, Rasika and Bowman, Samuel R.},
  booktitle = {Proceedings of the 2020 Conference on Empirical Methods in Natural Language Processing},
  year = {2020},
}""",
    "nadeem2021stereoset": """@inproceedings{nadeem2021stereoset,
  title = {{StereoSet}: Measuring stereotypical bias in pretrained language models},
  author = {Nadeem, Moin and Bethke, Anna and Reddy, Siva},
  booktitle = {Proceedings of the 59th Annual Meeting of the Association for Computational Linguistics},
  year = {2021},
}""",
    "wang2019glue": """@inproceedings{wang2019glue,
  title = {{GLUE}: A Multi-Task Benchmark and Analysis Platform for Natural Language Understanding},
  author = {Wang, Alex and Singh, Amanpreet and Michael, Julian and Hill, Felix and Levy, Omer and Bowman, Samuel R.},
  booktitle = {International Conference on Learning Representations},
  year = {2019},
  note = {From memory, not checked against the paper},
}""",
    "han2022fairlib": """@inproceedings{han2022fairlib,
  title = {{FairLib}: A Unified Framework for Assessing and Improving Fairness},
  author = {Han, Xudong and Shen, Aili and Li, Yitong and Frermann, Lea and Baldwin, Timothy and Cohn, Trevor},
  booktitle = {Proceedings of the 2022 Conference on Empirical Methods in Natural Language Processing: System Demonstrations},
  year = {2022},
}""",
}

METHOD_PAPERS = {
    "gacl": ["lee2023gacl"],
    "ccd": ["ccd2024"],
    "dpce": ["kaneko2021dpce"],
    "adept": ["yang2023adept"],
    "cscl": ["chi2022cscl"],
    "fcl": ["shen2022fcl"],
    "sampling": ["martin_ogbuokiri_sampling"],
}
BENCHMARK_PAPERS = {
    "winomt": ["stanovsky2019winomt"],
    "geneval": ["currey2022geneval"],
    "flores": ["nllb2022flores200"],
    "seat": ["may2019seat"],
    "crows": ["nangia2020crows"],
    "stereoset": ["nadeem2021stereoset"],
    "cced": ["ccd2024"],
    "classification_fairness": ["han2022fairlib"],
    "glue": ["wang2019glue"],
}


def bibtex(*keys: str) -> str:
    """The BibTeX entries of ``keys`` (each once, in order), joined by blank lines."""
    unknown = [k for k in keys if k not in ENTRIES]
    if unknown:
        raise KeyError(f"no citation for {unknown}; known: {sorted(ENTRIES)}")
    return "\n\n".join(ENTRIES[k] for k in dict.fromkeys(keys))


def citations_for(method: str | None = None, benchmarks: list[str] | tuple[str, ...] = ()) -> str:
    """BibTeX of a method (``gacl``, ``ccd``, ...) and the benchmarks whose results are reported."""
    keys = list(METHOD_PAPERS.get(method or "", []))
    for b in benchmarks:
        keys += BENCHMARK_PAPERS.get(b, [])
    return bibtex(*keys) if keys else ""
