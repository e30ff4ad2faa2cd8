"""MLPerf's reference BERT on a site that has MLCommons' files: `model_path` and `dataset_path`.

What MLCommons' language/bert downloads: the model (`model.onnx` or `model.pytorch`), its
`vocab.txt` beside it, and SQuAD v1.1's `dev-v1.1.json`. Its features come from
`create_squad_data.py` (read_squad_examples, convert_examples_to_features: 384 tokens, a stride
of 128, questions of at most 64) with transformers' BertTokenizer over that vocabulary; the F1 is
then the one mlperf_squad computes, over SQuAD's answers.

caramel checks the files and reads the dataset here; making the features needs transformers and
that script (on PYTHONPATH), which caramel does not ship: without them the run stops with an
error that says so, before LoadGen starts.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path

MODEL_SUFFIXES = (".onnx", ".pytorch", ".pt")


class ReferenceError(Exception):
    """A reference file missing or malformed, or the feature tooling absent: names which."""


@dataclass(frozen=True)
class ReferenceFiles:
    model: Path
    vocab: Path
    dataset: Path
    questions: int  # SQuAD's questions in the dataset


def questions_in(path: Path) -> int:
    """The number of questions in a SQuAD v1.1 JSON file (data / paragraphs / qas)."""
    try:
        squad = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ReferenceError(f"{path}:{error.lineno}: not JSON ({error.msg})") from None
    try:
        return sum(
            len(paragraph["qas"])
            for article in squad["data"]
            for paragraph in article["paragraphs"]
        )
    except (KeyError, TypeError):
        raise ReferenceError(
            f"{path}: expected SQuAD v1.1's layout (data / paragraphs / qas), as dev-v1.1.json"
        ) from None


def check_files(model_path: str, dataset_path: str) -> ReferenceFiles:
    """The reference's files, each checked: a missing one is named with what was expected."""
    model, dataset = Path(model_path), Path(dataset_path)
    if not model.is_file() or model.suffix not in MODEL_SUFFIXES:
        raise ReferenceError(
            f"model_path {model}: expected MLCommons' reference BERT file "
            f"({', '.join(MODEL_SUFFIXES)})"
        )
    vocab = model.parent / "vocab.txt"
    if not vocab.is_file():
        raise ReferenceError(f"{vocab}: the model's vocabulary is expected beside it")
    if not dataset.is_file():
        raise ReferenceError(f"dataset_path {dataset}: expected SQuAD v1.1's dev-v1.1.json")
    return ReferenceFiles(model, vocab, dataset, questions_in(dataset))


def load(model_path: str, dataset_path: str) -> ReferenceFiles:
    """The checked files, once the feature tooling is there (else a ReferenceError saying what
    is missing)."""
    files = check_files(model_path, dataset_path)
    try:  # MLCommons' language/bert script (on PYTHONPATH) and the tokenizer it uses
        for module in ("transformers", "create_squad_data"):
            importlib.import_module(module)
    except ImportError as error:
        raise ReferenceError(
            f"the reference BERT's features need transformers and MLCommons' "
            f"language/bert/create_squad_data.py on PYTHONPATH ({error.name} is missing); "
            f"{files.dataset} holds {files.questions} questions"
        ) from None
    raise ReferenceError(
        "the reference BERT's features are made by MLCommons' create_squad_data.py: "
        "run its SUT (language/bert/run.py) with this LoadGen; caramel's own SUT runs its encoder"
    )
