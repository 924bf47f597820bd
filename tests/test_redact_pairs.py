"""The ``key=value`` scan: the anchored pattern finds exactly the pairs a plain search finds.

``engine.tracing.redact`` tries its pair pattern only where a run of key characters starts and never
backtracks into the key (long tool output cost hundreds of microseconds per string). The
reference below is the plain pattern it replaced, searched the old way; both run over
generated texts made of the characters and words that decide a match, and must agree.
"""

from __future__ import annotations

import random
import re

from engine.tracing.redact import MASK, Redactor, _mask_pair, _mask_pairs

REFERENCE = re.compile(
    r"""(?ix)
    (?P<key>[A-Za-z_][A-Za-z0-9_.\-]*)
    (?P<sep>\s*[=:]\s*|["']\s*:\s*)
    (?P<quote>["']?)
    (?P<value>(?!\[REDACTED\])[^\s"'&,;}\]]+)
    """)

PIECES = ("a", "Z", "_", "3", ".", "-", "=", ":", " ", "\t", "\n", '"', "'", "&", ",", ";",
          "}", "]", "api_key", "password", "token", "3.api_key", "x.y", "[REDACTED]",
          "[redacted]", "bearer", "Basic", "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF",
          "0123456789abcdef0123456789abcdef", "sha256", "item 0", "SIGNING_SALT", "!", ")")


def reference_mask_pairs(text: str) -> str:
    out: list[str] = []
    pos = last = 0
    while (m := REFERENCE.search(text, pos)) is not None:
        masked = _mask_pair(m)
        if masked is None:
            pos = m.start("value")
            continue
        out += (text[last:m.start()], masked)
        pos = last = m.end()
    out.append(text[last:])
    return "".join(out)


def test_the_anchored_scan_masks_the_same_pairs_as_a_plain_search() -> None:
    rng = random.Random(19)
    masked = 0
    for _ in range(20_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 14)))
        want = reference_mask_pairs(text)
        assert _mask_pairs(text) == want, text
        masked += MASK in want and MASK not in text
    assert masked > 200  # the generated texts do exercise masking


def test_a_key_after_digits_in_the_same_run_is_still_found() -> None:
    assert _mask_pairs("see 3.api_key=abcdef1234 now") == f"see 3.api_key={MASK} now"
    assert _mask_pairs("v1-password: hunter22.") == f"v1-password: {MASK}."


def test_the_redactor_judges_keys_and_values_by_type_not_by_shape() -> None:
    red = Redactor(["s3cr3t-value"])
    tree = {"password": "hunter22", "n": 3, "ok": True, "none": None, "x": 1.5,
            "list": ("say s3cr3t-value", {"token": "abcd"}), 7: "api_key=abcdefgh"}
    assert red.value(tree) == {"password": MASK, "n": 3, "ok": True, "none": None, "x": 1.5,
                               "list": [f"say {MASK}", {"token": MASK}], 7: f"api_key={MASK}"}
