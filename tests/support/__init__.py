"""Helper modules the tests share: models, references, allowlists and builders (docs/testing.md)."""
