"""Task-independent scorers: precision, recall and F1 over sets of codes (``codes``)."""
