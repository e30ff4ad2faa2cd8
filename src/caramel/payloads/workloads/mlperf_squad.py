"""The default model of the MLPerf inference benchmark: a small BERT-like encoder on a synthetic
span-extraction task, trained here in seconds, and the F1 that MLPerf's BERT accuracy script gives.

The task is SQuAD's shape without a download: a sequence starts with a question token (which of two
marker pairs holds the answer), and its context holds two spans, each between an opening and a
closing marker of its pair. The model answers with a start and an end logit per position, as the
reference BERT does (its output is `(seq_len, 2)` float32 per sample), and the answer's words are
scored as MLCommons' `language/bert/accuracy-squad.py` scores them: the best span among the 20 best
starts and ends (end not before start, at most 30 tokens, in the context), its text compared with
the truth by `evaluate_v1.1.py`'s `f1_score`, averaged over the questions and given in percent.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch is imported where a model is built
    import torch

# accuracy-squad.py's defaults (its --max_answer_length 30 and write_predictions' n_best_size 20)
N_BEST = 20
MAX_ANSWER_LENGTH = 30

QUESTIONS = 2  # tokens 0, 1: which marker pair holds the answer
OPEN, CLOSE = (2, 3), (4, 5)  # the opening and closing marker of each pair
FIRST_WORD = 6  # tokens from here on are words ("w6", "w7", ...)


@dataclass(frozen=True)
class Task:
    """A synthetic span-extraction dataset: token ids and the answer span of each sample."""

    tokens: np.ndarray  # (samples, seq_len) int64
    starts: np.ndarray  # (samples,) the answer's first token
    ends: np.ndarray  # (samples,) its last token

    def answer(self, index: int) -> str:
        return words(self.tokens[index], int(self.starts[index]), int(self.ends[index]))


def words(tokens: np.ndarray, start: int, end: int) -> str:
    """The text of tokens start..end (inclusive): what a span's answer reads as."""
    return " ".join(f"w{int(t)}" for t in tokens[start : end + 1])


def make_task(samples: int, seq_len: int = 32, vocab: int = 64, seed: int = 0) -> Task:
    """`samples` sequences: the question token, then context words with two marked spans."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(FIRST_WORD, vocab, size=(samples, seq_len))
    starts, ends = np.zeros(samples, np.int64), np.zeros(samples, np.int64)
    half = (seq_len - 1) // 2
    for i in range(samples):
        which = int(rng.integers(QUESTIONS))
        tokens[i, 0] = which
        for pair, lo in ((0, 1), (1, 1 + half)):
            length = int(rng.integers(1, max(2, half - 3)))
            begin = lo + int(rng.integers(0, half - length - 1))
            tokens[i, begin], tokens[i, begin + length + 1] = OPEN[pair], CLOSE[pair]
            if pair == which:
                starts[i], ends[i] = begin + 1, begin + length
    return Task(tokens.astype(np.int64), starts, ends)


def best_span(start_logits: np.ndarray, end_logits: np.ndarray) -> tuple[int, int]:
    """accuracy-squad.py's write_predictions for one feature: among the N_BEST best starts and
    ends, the valid pair (in the context, end >= start, at most MAX_ANSWER_LENGTH) with the highest
    start + end logit; (0, 0) when no pair is valid."""
    order_start = np.argsort(-start_logits, kind="stable")[:N_BEST]
    order_end = np.argsort(-end_logits, kind="stable")[:N_BEST]
    best, score = (0, 0), -np.inf
    for s in order_start:
        for e in order_end:
            valid = 1 <= s <= e < len(start_logits) and e - s + 1 <= MAX_ANSWER_LENGTH
            if valid and start_logits[s] + end_logits[e] > score:
                best, score = (int(s), int(e)), start_logits[s] + end_logits[e]
    return best


def normalize_answer(text: str) -> str:
    """evaluate_v1.1.py's normalize_answer: lower case, no punctuation, articles or extra spaces."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def f1_score(prediction: str, truth: str) -> float:
    """evaluate_v1.1.py's f1_score: the harmonic mean of token precision and recall."""
    predicted, true = normalize_answer(prediction).split(), normalize_answer(truth).split()
    same = sum((Counter(predicted) & Counter(true)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(true)
    return 2 * precision * recall / (precision + recall)


def score(task: Task, logits: dict[int, np.ndarray]) -> float:
    """The F1 in percent over all of the task's questions (evaluate_v1.1.py's evaluate: a question
    without a prediction scores 0) from each answered sample's `(seq_len, 2)` logits."""
    total = 0.0
    for index, output in logits.items():
        start, end = best_span(output[:, 0], output[:, 1])
        total += f1_score(words(task.tokens[index], start, end), task.answer(index))
    return 100.0 * total / len(task.tokens)


def build_model(vocab: int, seq_len: int, hidden: int, layers: int, heads: int) -> torch.nn.Module:
    """The encoder: token and position embeddings, `layers` transformer encoder layers, and a
    linear head giving start and end logits: BERT for question answering in miniature."""
    import torch

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.token = torch.nn.Embedding(vocab, hidden)
            self.position = torch.nn.Parameter(torch.randn(seq_len, hidden) * 0.02)
            layer = torch.nn.TransformerEncoderLayer(
                hidden, heads, 4 * hidden, dropout=0.0, batch_first=True
            )
            self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = torch.nn.Linear(hidden, 2)

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.head(self.encoder(self.token(tokens) + self.position))
            return out

    return Encoder()


@dataclass(frozen=True)
class Trained:
    model: object  # the torch module, in eval mode, on the CPU, float32
    reference_f1: float  # its F1 on the evaluation task: the FP32 reference


def train(
    task: Task, evaluation: Task, steps: int, hidden: int = 32, layers: int = 1, seed: int = 0
) -> Trained:
    """Train the encoder on `task` (cross-entropy on start and end, Adam) for `steps` batches of
    64; the model and its FP32 F1 on `evaluation`."""
    import torch

    torch.manual_seed(seed)
    vocab, seq_len = int(task.tokens.max()) + 1, task.tokens.shape[1]
    model = build_model(max(vocab, int(evaluation.tokens.max()) + 1), seq_len, hidden, layers, 2)
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    tokens, starts, ends = (torch.from_numpy(a) for a in (task.tokens, task.starts, task.ends))
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        batch = torch.randint(0, len(tokens), (64,), generator=generator)
        logits = model(tokens[batch])
        loss = torch.nn.functional.cross_entropy(
            logits[..., 0], starts[batch]
        ) + torch.nn.functional.cross_entropy(logits[..., 1], ends[batch])
        optimiser.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]  # torch's backward is not annotated
        optimiser.step()
    model.eval()
    with torch.no_grad():
        outputs = model(torch.from_numpy(evaluation.tokens)).numpy()
    return Trained(model, score(evaluation, dict(enumerate(outputs))))
