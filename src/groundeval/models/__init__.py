"""The model layer: what serves and calls models (being built here; the llama.cpp server first)."""
