"""The bundled sample runs: small, made by the project, never copies of the corpus."""

from __future__ import annotations

import hashlib

from desktop.services import SAMPLES

SIZE_LIMIT = 400 * 1024


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_samples_are_small_logs_without_weights():
    files = [p for p in SAMPLES.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < SIZE_LIMIT
    weights = {".bin", ".pt", ".pth", ".safetensors", ".ckpt", ".pkl"}
    assert not [p for p in files if p.suffix in weights]


def test_no_sample_is_a_copy_of_a_corpus_file(corpus):
    corpus_digests = {_digest(p) for p in corpus.rglob("*") if p.is_file()}
    assert not [p for p in SAMPLES.rglob("*") if p.is_file() and _digest(p) in corpus_digests]


def test_synthetic_samples_say_so_in_their_header_and_the_readme():
    readme = (SAMPLES / "README.md").read_text()
    synthetic = sorted(SAMPLES.glob("synthetic-*"))
    assert len(synthetic) == 2
    for path in synthetic:
        header = path.read_text().split("\n", 1)[0]
        assert f"`{path.name}`" in readme and "synthetic sample" in header
