"""Every lint or type-check suppression in the package names what it silences and says why, on its line.

``# noqa: CODE - reason`` (or ``-- reason``, ``(reason)``) and ``# type: ignore[code]  # reason``: a bare
``# noqa`` or ``# type: ignore`` would silence whatever comes to that line later, and one without a
reason cannot be judged when the code around it changes. (ruff's RUF100 and mypy's
``warn_unused_ignores`` already fail the ones that silence nothing.)
"""

from __future__ import annotations

import re
from pathlib import Path

import tensorflow_ignite

PACKAGE = Path(tensorflow_ignite.__file__).parent

_NOQA = re.compile(r"#\s*noqa\b(?P<codes>:\s*[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)?(?P<rest>.*)$")
_IGNORE = re.compile(r"#\s*type:\s*ignore\b(?P<codes>\[[a-z0-9_, -]+\])?(?P<rest>.*)$")
_REASON = re.compile(r"^\s*(?:-{1,2}|\(|#)\s*\w+(?:\W+\w+){1,}")


def _bad_suppressions(text: str, where: str) -> list[str]:
    bad = []
    for n, line in enumerate(text.splitlines(), 1):
        for pattern, what in ((_NOQA, "noqa"), (_IGNORE, "type: ignore")):
            m = pattern.search(line)
            if m is None:
                continue
            if not m.group("codes"):
                bad.append(f"{where}:{n}: a bare {what} (name the codes it silences)")
            elif not _REASON.match(m.group("rest")):
                bad.append(f"{where}:{n}: {what} without a reason on its line")
    return bad


def test_every_suppression_names_its_codes_and_a_reason() -> None:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        bad += _bad_suppressions(path.read_text(), str(path.relative_to(PACKAGE)))
    assert not bad, "\n".join(bad)


def test_the_check_tells_good_from_bad() -> None:
    good = (
        "except Exception:  # noqa: BLE001 - best effort at exit\n"
        "import x  # noqa: F401  (the clear error when msgpack is missing)\n"
        "y = f()  # type: ignore[misc]  # the list holds only set values\n"
    )
    assert _bad_suppressions(good, "good.py") == []
    bad = "a = 1  # noqa\nb = 2  # noqa: E501\nc = 3  # type: ignore\nd = 4  # type: ignore[misc]\n"
    assert len(_bad_suppressions(bad, "bad.py")) == 4
