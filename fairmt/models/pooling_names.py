"""The names of the ways a sentence encoder's embedding is made (no torch: the command line reads them for --help).

One set for ``fairmt eval embeddings --pooling`` and :attr:`fairmt.trainers.ccd.CCDConfig.pooling`:

* ``auto`` — a sentence-transformers model's own pipeline (its pooling and normalisation modules), else ``mean``;
* ``model`` — the sentence-transformers model's own pipeline, refused for a plain transformers encoder;
* ``mean`` — the mean of the last hidden states over the attention mask;
* ``cls`` / ``first`` — the first token's last hidden state ([CLS] / <s>); two names of one pooling (sent-bias says
  first, BERT users say cls);
* ``max`` — the element-wise maximum over the attention mask;
* ``pooler`` — the model's own ``pooler_output`` (a plain AutoModel with a pooler, e.g. BERT).
"""

SENTENCE_POOLINGS = ("auto", "model", "mean", "cls", "first", "max", "pooler")

__all__ = ["SENTENCE_POOLINGS"]
