"""Writes reference.json: the token ids Hugging Face's tokenizer gives all-MiniLM-L6-v2 for
curated and seeded random texts, which `locara-memory`'s own WordPiece tokenizer must match.

    python3 -m venv /tmp/tok && /tmp/tok/bin/pip install tokenizers==0.23.3
    /tmp/tok/bin/python make_reference.py <models>/all-minilm-l6-v2.tokenizer.json > reference.json

The tokenizer file is the one the memory tools pin (sha256 be50c362...). The settings are the
embedder's: truncation to 256 tokens, [CLS] and [SEP] added, no padding.
"""

import json
import random
import sys

import tokenizers

CURATED = [
    "",
    "   \t\n  ",
    "The beaver builds a dam across the stream.",
    "Hey friend!     How are you?!?",
    "Café naïve façade Ångström Straße résumé coöperate",
    "İstanbul ΣΊΣΥΦΟΣ σοφός Ǆemal ﬁnance Ⅻ",
    "野口里佳 Noguchi Rika 東京タワーとソウル서울 타워",
    "emoji 🙂 and newer 🫠 🧑‍🔬 with joiners",
    "soft\u00adhyphen zero\u200bwidth bom\ufeffhere rtl\u200fmark",
    "bell\u0007null\u0000replacement\ufffdend",
    "nbsp\u00a0ideographic\u3000space thin\u2009space line\u2028sep",
    "quotes “double” ‘single’ «guillemets» ¿qué? ‽ — – … ·",
    "ascii symbols $5 + 3 < 4 = x > y ^ z ` | ~ @ # % & * _",
    "[CLS] hello [SEP] world [MASK] [PAD] [UNK]",
    "[cls] lower-case is not special, x[SEP]y, [[SEP]], [SEP",
    "मनुष्य हिन्दी भाषा عربي مرحبا بالعالم עברית שלום",
    "ᚠᛇᚻ᛫ᛒᛦᚦ runes are not in the vocabulary",
    "a" * 100,
    "b" * 101,
    "antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    "https://example.org/path?q=1&r=two#frag user@example.com 192.168.0.1",
    "fn main() { println!(\"{}\", 6 * 7); } // comment",
    "3.14159 1,000,000 2026-12-03 10:15 -42 +7 1e-9",
    " ".join(["word"] * 300),
    " ".join(["tokenization"] * 200),
]

RANGES = [
    (0x20, 0x7E),
    (0x00, 0x1F),
    (0xA0, 0xFF),
    (0x100, 0x24F),
    (0x300, 0x36F),
    (0x370, 0x3FF),
    (0x400, 0x4FF),
    (0x590, 0x6FF),
    (0x900, 0x97F),
    (0x2000, 0x206F),
    (0x20A0, 0x20CF),
    (0x2E00, 0x2E7F),
    (0x3000, 0x30FF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7A3),
    (0xE000, 0xE0FF),
    (0xF900, 0xFAFF),
    (0xFE00, 0xFE6F),
    (0xFF00, 0xFFEF),
    (0x1F300, 0x1FAFF),
    (0x20000, 0x2A6DF),
    (0xE0000, 0xE007F),
]


def random_text(rng):
    words = []
    for _ in range(rng.randint(1, 24)):
        if rng.random() < 0.5:
            low, high = rng.choice(RANGES)
            word = "".join(chr(rng.randint(low, high)) for _ in range(rng.randint(1, 8)))
        else:
            word = rng.choice(["the", "Memory", "notes", "RÉSUMÉ", "tool", "[SEP]", "Ünïcödé", "x"])
        words.append(word)
    separators = [" ", "  ", "\t", "\n", "", "-", "\u3000"]
    return "".join(w + rng.choice(separators) for w in words)


def main():
    tokenizer = tokenizers.Tokenizer.from_file(sys.argv[1])
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=256)
    rng = random.Random(20261203)
    texts = CURATED + [random_text(rng) for _ in range(300)]
    cases = [{"text": t, "ids": tokenizer.encode(t).ids} for t in texts]
    # One case a line, so that a change to the reference reads as a diff of the cases changed.
    head = {"tokenizers": tokenizers.__version__, "max_tokens": 256}
    sys.stdout.write(json.dumps(head)[:-1] + ', "cases": [\n')
    sys.stdout.write(",\n".join(json.dumps(case, separators=(",", ":")) for case in cases))
    sys.stdout.write("\n]}\n")


main()
