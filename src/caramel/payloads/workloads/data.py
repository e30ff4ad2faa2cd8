"""A small tokenized corpus in Megatron's indexed-dataset format (.bin/.idx, "MMIDIDX"), no
download.

The .idx file is Megatron's: magic, version, dtype code, sequence and document counts, then the
int32 sequence lengths, int64 byte offsets and int64 document index. Tokens come from a seeded
generator with a Zipf-like frequency, which is enough for a throughput benchmark.

    python -m caramel.payloads.workloads.data --output-prefix data/corpus_text_document
"""

from __future__ import annotations

import argparse
import os
import struct
from pathlib import Path

import numpy as np

MAGIC = b"MMIDIDX\x00\x00"
UINT16_CODE = 8  # Megatron's dtype code for numpy.uint16


def write_corpus(
    prefix: Path,
    documents: int = 256,
    vocab_size: int = 512,
    mean_length: int = 300,
    seed: int = 1234,
) -> tuple[Path, Path]:
    """Write `<prefix>.bin` and `<prefix>.idx`; returns both paths."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, vocab_size + 1)
    weights /= weights.sum()
    lengths = rng.integers(mean_length // 2, mean_length * 3 // 2, size=documents).astype(np.int32)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    bin_path, idx_path = Path(f"{prefix}.bin"), Path(f"{prefix}.idx")
    # written under temporary names and renamed, .idx last: a reader never sees half a corpus
    bin_tmp, idx_tmp = Path(f"{bin_path}.{os.getpid()}.tmp"), Path(f"{idx_path}.{os.getpid()}.tmp")
    with open(bin_tmp, "wb") as out:
        for length in lengths:
            out.write(
                rng.choice(vocab_size, size=int(length), p=weights).astype(np.uint16).tobytes()
            )
    pointers = np.zeros(documents, dtype=np.int64)
    pointers[1:] = np.cumsum(lengths[:-1].astype(np.int64) * 2)
    doc_idx = np.arange(documents + 1, dtype=np.int64)
    with open(idx_tmp, "wb") as out:
        out.write(MAGIC + struct.pack("<Q", 1) + struct.pack("<B", UINT16_CODE))
        out.write(struct.pack("<Q", documents) + struct.pack("<Q", len(doc_idx)))
        out.write(lengths.tobytes() + pointers.tobytes() + doc_idx.tobytes())
    os.replace(bin_tmp, bin_path)
    os.replace(idx_tmp, idx_path)
    return bin_path, idx_path


def read_tokens(prefix: Path) -> np.ndarray:
    """All tokens of a corpus written in this format, concatenated (checks the index header)."""
    raw = Path(f"{prefix}.idx").read_bytes()
    if raw[:9] != MAGIC:
        raise ValueError(f"{prefix}.idx: not a Megatron MMIDIDX index (magic {raw[:9]!r})")
    version, code = struct.unpack("<Q", raw[9:17])[0], raw[17]
    if version != 1 or code != UINT16_CODE:
        raise ValueError(
            f"{prefix}.idx: version {version}, dtype code {code}; expected 1 and {UINT16_CODE}"
        )
    count = struct.unpack("<Q", raw[18:26])[0]
    lengths = np.frombuffer(raw, dtype=np.int32, count=count, offset=34)
    tokens = np.fromfile(f"{prefix}.bin", dtype=np.uint16)
    if len(tokens) != int(lengths.sum()):
        raise ValueError(f"{prefix}.bin: {len(tokens)} tokens, the index says {int(lengths.sum())}")
    return tokens


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-prefix", type=Path, default=Path("data/corpus_text_document"))
    parser.add_argument("--documents", type=int, default=256)
    parser.add_argument("--vocab-size", type=int, default=512)
    args = parser.parse_args(argv)
    if Path(f"{args.output_prefix}.idx").exists():
        print(f"corpus {args.output_prefix} exists, kept")
        return
    bin_path, idx_path = write_corpus(args.output_prefix, args.documents, args.vocab_size)
    print(f"wrote {bin_path} and {idx_path}")


if __name__ == "__main__":
    main()
