"""Layer 5: evaluators over translations, embeddings and predictions. They never load a model themselves."""
