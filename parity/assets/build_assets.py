"""Build the small local test assets: a byte-level BPE tokenizer and seven tiny text datasets.

Run ``python -m parity.assets.build_assets [--output-dir DIR]`` (default: this package's folder).
Everything is generated from the built-in corpus below with fixed seeds, so two runs write
byte-identical files; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "VOCAB_SIZE",
    "EOS_TOKEN",
    "SPECIAL_TOKENS",
    "CORPUS",
    "text_rows",
    "alpaca_rows",
    "build_tokenizer",
    "write_text_jsonl",
    "write_alpaca_json",
    "write_text_disk",
    "short_text_rows",
    "short_alpaca_rows",
    "write_short_text_jsonl",
    "write_short_alpaca_json",
    "ALPACA_GRIDS",
    "alpaca_grid_cells",
    "alpaca_grid_rows",
    "write_alpaca_grid_json",
    "build_all",
    "main",
]

VOCAB_SIZE = 512
EOS_TOKEN = "<|endoftext|>"
SPECIAL_TOKENS = (EOS_TOKEN, "<|im_start|>", "<|im_end|>")
TEXT_ROWS = 200
ALPACA_ROWS = 64
TEXT_DISK_ROWS = 64
# Short-row sets for padding and uneven splits: after the empty rows are dropped they keep 35 and 31
# rows, which divide by neither 2 nor 3 ranks.
SHORT_TEXT_ROWS = 39
SHORT_ALPACA_ROWS = 32

# Built-in multilingual corpus (tokenizer training data and sentence pool for the datasets).
CORPUS: tuple[str, ...] = (
    "The quick brown fox jumps over the lazy dog.",
    "A tokenizer turns text into a sequence of integer ids.",
    "Parallel training splits the model and the data across many devices.",
    "Gradient accumulation sums gradients over several micro batches before one optimizer step.",
    "The learning rate warms up linearly and then decays along a cosine curve.",
    "Checkpoints store the model, the optimizer, the scheduler and the random number state.",
    "Every rank reads a different shard of the dataset through the distributed sampler.",
    "Labels equal the input ids; the model shifts them by one position inside the loss.",
    "Padding tokens are ignored by the cross entropy loss through the ignore index.",
    "Small models train quickly on a laptop, which makes them ideal for tests.",
    "She sells sea shells by the sea shore, and the shells she sells are sea shells.",
    "How much wood would a woodchuck chuck if a woodchuck could chuck wood?",
    "Numbers like 3.14159, 2718 and 42 appear in text as well.",
    "Email me at someone@example.com or visit https://example.com/docs?page=2.",
    "def add(a, b):\n    return a + b\n",
    "for i in range(10):\n    print(i * i)\n",
    "Le renard brun rapide saute par-dessus le chien paresseux.",
    "L'apprentissage automatique transforme la façon dont nous écrivons des logiciels.",
    "Où est la bibliothèque ? Elle est à côté de l'école.",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "Die Straße ist heute sehr ruhig, und die Bäume sind grün.",
    "El rápido zorro marrón salta sobre el perro perezoso.",
    "¿Dónde está la estación de tren? Está cerca del río.",
    "Быстрая коричневая лиса прыгает через ленивую собаку.",
    "Машинное обучение помогает решать сложные задачи.",
    "敏捷的棕色狐狸跳过了懒狗。",
    "机器学习正在改变我们编写软件的方式。",
    "今天天气很好，我们去公园散步吧。",
    "素早い茶色の狐がのろまな犬を飛び越える。",
    "機械学習はソフトウェアの書き方を変えています。",
    "빠른 갈색 여우가 게으른 개를 뛰어넘는다.",
    "الثعلب البني السريع يقفز فوق الكلب الكسول.",
    "Ο γρήγορος καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.",
    "तेज़ भूरी लोमड़ी आलसी कुत्ते के ऊपर कूदती है।",
    "Emoji also count: 🚀 🦊 🐶 ✨ and accents like naïve café résumé.",
)

_INSTRUCTIONS: tuple[str, ...] = (
    "Translate the sentence into French.",
    "Summarize the text in one sentence.",
    "Count the words in the input.",
    "Explain what a tokenizer does.",
    "Write a short poem about foxes.",
    "Give the opposite of the word.",
    "Rewrite the sentence in the passive voice.",
    "Name three programming languages.",
    "Describe the weather in the park.",
    "What is gradient accumulation?",
)
_OPPOSITES: tuple[str, ...] = ("quick", "lazy", "brown", "small", "large", "quiet", "green", "happy")
# Words of the short rows (most are one or two tokens of the asset tokenizer).
_SHORT_WORDS: tuple[str, ...] = (
    "the", "a", "in", "of", "data", "model", "loss", "text", "token", "train", "quick", "sea",
    "shells", "wood", "over", "like", "one", "and", "are", "by", "fox", "dog", "rank", "batch",
)  # fmt: skip


def text_rows(n: int = TEXT_ROWS, seed: int = 0) -> list[str]:
    """``n`` texts of varied length built from the corpus; rows 7 and 123 are empty strings."""
    rng = random.Random(seed)
    rows: list[str] = []
    for i in range(n):
        if i in (7, 123):
            rows.append("")
            continue
        # Mostly short rows, some long enough to be truncated at small max_seq_len.
        k = rng.choice((1, 1, 1, 2, 2, 3, 5, 8))
        rows.append(" ".join(rng.choice(CORPUS) for _ in range(k)))
    return rows


def alpaca_rows(n: int = ALPACA_ROWS, seed: int = 1) -> list[dict[str, str]]:
    """``n`` alpaca records (instruction/input/output); roughly a third have an empty input."""
    rng = random.Random(seed)
    rows: list[dict[str, str]] = []
    for i in range(n):
        instruction = _INSTRUCTIONS[i % len(_INSTRUCTIONS)]
        if i % 3 == 0:
            inp = ""
        elif "opposite" in instruction:
            inp = rng.choice(_OPPOSITES)
        else:
            inp = rng.choice(CORPUS)
        output = " ".join(rng.choice(CORPUS) for _ in range(rng.choice((1, 1, 2, 4))))
        rows.append({"instruction": instruction, "input": inp, "output": output})
    return rows


def _short_phrase(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_SHORT_WORDS) for _ in range(words))


def short_text_rows(n: int = SHORT_TEXT_ROWS, seed: int = 2) -> list[str]:
    """``n`` texts of 1 to 20 words (about 1 to 30 tokens), rows ``i % 10 == 4`` empty.

    Most rows are shorter than a 16-token window, so batches pad; some are longer and truncate.
    With the default ``n`` the four empty rows are dropped and 35 rows remain.
    """
    rng = random.Random(seed)
    rows: list[str] = []
    for i in range(n):
        if i % 10 == 4:
            rows.append("")
            continue
        rows.append(_short_phrase(rng, rng.choice((1, 1, 2, 3, 4, 5, 6, 8, 12, 20))))
    return rows


def short_alpaca_rows(n: int = SHORT_ALPACA_ROWS, seed: int = 3) -> list[dict[str, str]]:
    """``n`` short alpaca records: 1-4 word instructions, an empty input every third row, 0-10 word
    outputs (some empty: rows whose labels are all masked); row 5 is empty in every field and is
    dropped, so 31 rows remain with the default ``n``."""
    rng = random.Random(seed)
    rows: list[dict[str, str]] = []
    for i in range(n):
        if i == 5:
            rows.append({"instruction": "", "input": "", "output": ""})
            continue
        instruction = _short_phrase(rng, rng.choice((1, 2, 3, 4)))
        inp = "" if i % 3 == 0 else _short_phrase(rng, rng.choice((1, 2, 5)))
        output = _short_phrase(rng, rng.choice((0, 1, 2, 3, 6, 10)))
        rows.append({"instruction": instruction, "input": inp, "output": output})
    return rows


# Alpaca length grids: name -> (prompt lengths, response lengths, prompt lengths also written as
# instruction + "\n" + input), in tokens of the asset tokenizer.
ALPACA_GRIDS: dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {
    "full": (
        (0, 1, 3, 4, 5, 8, 9, 14, 15, 16, 17, 30),
        (0, 1, 3, 4, 5, 8, 9, 15, 16, 17, 18, 30),
        (3, 9, 17),
    ),
    "small": ((0, 1, 4, 14, 30), (0, 1, 4, 18, 30), (14,)),
}
# Words whose space-prefixed form is one token of the asset tokenizer ("a" and "b" alone are one too).
_GRID_WORDS: tuple[str, ...] = (
    "the", "a", "in", "of", "data", "model", "loss", "text", "token", "train", "quick", "sea",
    "shells", "wood", "over", "like", "one", "and", "are", "by", "ignore", "optimizer", "through",
    "them",
)  # fmt: skip


def alpaca_grid_cells(grid: str) -> list[tuple[int, int, bool]]:
    """``(prompt_len, response_len, split_prompt)`` per record, in file order; the all-empty cell
    (if any) is last, so every row the transform keeps names its cell."""
    prompts, responses, split = ALPACA_GRIDS[grid]
    cells = [(p, r, False) for p in prompts for r in responses]
    cells += [(p, r, True) for p in split for r in responses]
    empty = (0, 0, False)
    return [c for c in cells if c != empty] + ([empty] if empty in cells else [])


def _grid_words(n: int, offset: int) -> str:
    return "".join(" " + _GRID_WORDS[(offset + i) % len(_GRID_WORDS)] for i in range(n))


def alpaca_grid_rows(grid: str) -> list[dict[str, str]]:
    """One alpaca record per grid cell whose prompt (``instruction`` [+ "\n" + ``input``]) and
    ``output`` tokenise to the cell's lengths with the asset tokenizer (words vary by row)."""
    rows = []
    for row, (p, r, split) in enumerate(alpaca_grid_cells(grid)):
        if split:  # instruction (k tokens) + "\n" (one token) + input (p - k - 1 tokens)
            k = p // 2
            instruction, inp = "a" + _grid_words(k - 1, row), "b" + _grid_words(p - k - 2, row + 7)
        else:
            instruction, inp = ("a" + _grid_words(p - 1, row)) if p else "", ""
        rows.append({"instruction": instruction, "input": inp, "output": _grid_words(r, row + 3)})
    return rows


def build_tokenizer(out_dir: str | os.PathLike) -> Path:
    """Train the byte-level BPE on the built-in texts and save an HF tokenizer folder.

    Like Qwen's tokenizer it adds no BOS/EOS by default (so empty texts tokenise to nothing and are
    dropped). EOS is ``<|endoftext|>``; there is no pad token, so the pad = eos rule is exercised.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=1,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(
        list(CORPUS) + text_rows() + [row["output"] for row in alpaca_rows()], trainer
    )
    out = Path(out_dir)
    if out.exists():
        shutil.rmtree(out)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token=EOS_TOKEN)
    fast.save_pretrained(str(out))
    return out


def _write_text(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(content)


def write_text_jsonl(path: str | os.PathLike, rows: Sequence[str] | None = None) -> Path:
    """One ``{"text": ...}`` object per line."""
    rows = text_rows() if rows is None else rows
    path = Path(path)
    _write_text(path, "".join(json.dumps({"text": text}, ensure_ascii=False) + "\n" for text in rows))
    return path


def write_alpaca_json(path: str | os.PathLike, rows: Sequence[dict[str, str]] | None = None) -> Path:
    """A JSON array of alpaca records."""
    rows = alpaca_rows() if rows is None else rows
    path = Path(path)
    _write_text(path, json.dumps(list(rows), ensure_ascii=False, indent=1) + "\n")
    return path


def write_short_text_jsonl(path: str | os.PathLike) -> Path:
    """``short_text_rows()`` as ``{"text": ...}`` lines."""
    return write_text_jsonl(path, short_text_rows())


def write_short_alpaca_json(path: str | os.PathLike) -> Path:
    """``short_alpaca_rows()`` as a JSON array."""
    return write_alpaca_json(path, short_alpaca_rows())


def write_alpaca_grid_json(path: str | os.PathLike, grid: str) -> Path:
    """``alpaca_grid_rows(grid)`` as a JSON array."""
    return write_alpaca_json(path, alpaca_grid_rows(grid))


def write_text_disk(path: str | os.PathLike, rows: Sequence[str] | None = None) -> Path:
    """A ``Dataset.save_to_disk`` folder with one ``text`` column (the first rows of the jsonl)."""
    import datasets

    rows = text_rows()[:TEXT_DISK_ROWS] if rows is None else rows
    path = Path(path)
    if path.exists():
        shutil.rmtree(path)
    ds = datasets.Dataset.from_dict({"text": list(rows)})
    ds.save_to_disk(str(path))
    return path


def build_all(output_dir: str | os.PathLike | None = None) -> dict[str, Path]:
    """Write every asset under ``output_dir`` (default: this package's folder)."""
    root = Path(output_dir) if output_dir is not None else Path(__file__).resolve().parent
    return {
        "tokenizer": build_tokenizer(root / "tokenizer"),
        "text_jsonl": write_text_jsonl(root / "data" / "text.jsonl"),
        "alpaca_json": write_alpaca_json(root / "data" / "alpaca.json"),
        "text_disk": write_text_disk(root / "data" / "text_disk"),
        "short_text_jsonl": write_short_text_jsonl(root / "data" / "short_text.jsonl"),
        "short_alpaca_json": write_short_alpaca_json(root / "data" / "short_alpaca.json"),
        **{
            f"alpaca_grid_{grid}": write_alpaca_grid_json(root / "data" / f"alpaca_grid_{grid}.json", grid)
            for grid in ALPACA_GRIDS
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", default=None, help="where to write (default: parity/assets/)")
    args = parser.parse_args(argv)
    for name, path in build_all(args.output_dir).items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
