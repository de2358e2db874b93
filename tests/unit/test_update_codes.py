"""scripts/update_codes.py: the generated block of protocol/codes.py is what the script writes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tensorflow_ignite.protocol.codes import ClientStatus, Op, TypeCode

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "update_codes.py"


@pytest.fixture(scope="module")
def update_codes():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("update_codes", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _java(cls: str, kind: str, pairs: list[tuple[str, int]]) -> str:
    """A Java class with these constants, and one of another type that is not a code."""
    body = "\n".join(f"    /** */\n    public static final {kind} {n} = {'(byte)' if v > 127 else ''}{v};" for n, v in pairs)
    other = "long" if kind == "int" else "int"
    return f"package x;\n\npublic class {cls} {{\n{body}\n\n    private static final {other} OTHER = 7;\n}}\n"


def _sources_of_current_codes(update_codes) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Java sources that hold exactly the codes protocol/codes.py holds, spelled the Java way."""
    java_name = {ours: java for java, ours in update_codes.TYPE_CODE_NAMES.items()}
    types = [(java_name.get(t.name, t.name), t.value) for t in TypeCode]
    types.append(("HASH_MAP", 1))  # a map kind: not a type code
    ops = [(f"OP_{o.name}", o.value) for o in Op]
    statuses = [(s.name, s.value) for s in ClientStatus]
    return {
        "GridBinaryMarshaller": _java("GridBinaryMarshaller", "byte", types),
        "ClientMessageParser": _java("ClientMessageParser", "short", ops),
        "ClientStatus": _java("ClientStatus", "int", statuses),
    }


def test_constants_reads_names_values_and_casts(update_codes) -> None:  # type: ignore[no-untyped-def]
    java = ("private static final byte A = -2;\npublic static final byte NULL = (byte)101;\n"
            "public static final short OP_X = 1000;\nstatic final int S = 3;\n")
    assert update_codes.constants(java, ["byte"]) == [("A", -2), ("NULL", 101)]
    assert update_codes.constants(java, ["short", "int"]) == [("OP_X", 1000), ("S", 3)]


def test_the_generated_block_is_untouched(update_codes) -> None:  # type: ignore[no-untyped-def]
    """Regenerating from sources with today's codes reproduces codes.py byte for byte
    (the origin line aside): nobody edited the block by hand."""
    text = update_codes.CODES.read_text(encoding="utf-8")
    again = update_codes.splice(text, update_codes.generate(_sources_of_current_codes(update_codes), "a test"))
    assert update_codes.without_header(again) == update_codes.without_header(text)
    assert again != text  # the origin line differs, so the comparison above is not vacuous


def test_generate_maps_java_names_and_skips_other_constants(update_codes) -> None:  # type: ignore[no-untyped-def]
    block = update_codes.generate({
        "GridBinaryMarshaller": _java("G", "byte", [("BOOLEAN", 8), ("COL", 24), ("HASH_SET", 3), ("OBJ", 103)]),
        "ClientMessageParser": _java("P", "short", [("OP_CACHE_GET", 1000), ("OP_TX_END", 4001)]),
        "ClientStatus": _java("S", "int", [("SUCCESS", 0)]),
    }, "test sources")
    assert "    BOOL = 8\n" in block and "    COLLECTION = 24  # COL\n" in block and "    OBJ = 103\n" in block
    assert "HASH_SET" not in block and "OTHER" not in block
    assert "    # Key-value.\n    CACHE_GET = 1000\n" in block and "    # Transactions.\n    TX_END = 4001\n" in block
    assert block.startswith(update_codes.START + "\n") and block.endswith(update_codes.END + "\n")


def test_splice_replaces_only_the_marked_lines(update_codes) -> None:  # type: ignore[no-untyped-def]
    text = f'"""doc mentions {update_codes.START}"""\nA = 1\n{update_codes.START}\nOLD = 2\n{update_codes.END}\nB = 3\n'
    new = update_codes.splice(text, f"{update_codes.START}\nNEW = 4\n{update_codes.END}\n")
    assert new == f'"""doc mentions {update_codes.START}"""\nA = 1\n{update_codes.START}\nNEW = 4\n{update_codes.END}\nB = 3\n'
    with pytest.raises(SystemExit, match="no"):
        update_codes.splice("A = 1\n", "x")
