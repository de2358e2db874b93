"""The public methods of the Ignite services in the module jar, read from the compiled classes.

A thin client can invoke any public method of a deployed Ignite service by name
(``OP_SERVICE_INVOKE``), so every such method is part of the module's attack surface:
the security tests enumerate them from the jar with ``javap`` -- the class's own
public methods and those of Ignite's ``Service`` interface (its default lifecycle
methods) -- so that a method added later cannot be left unchecked.  ``Object``'s
methods are left out: ``wait``/``notify`` throw without the monitor, the others only read.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ServiceMethod", "service_classes", "public_methods"]

SERVICE_INTERFACE = "org.apache.ignite.services.Service"

_METHOD = re.compile(
    r"^\s*public (?:default |static |final |synchronized |abstract )*(?P<ret>.+?) "
    r"(?P<name>\w+)\((?P<params>.*)\)(?: throws [\w.$, ]+)?;$"
)


@dataclass(frozen=True)
class ServiceMethod:
    """One public method: its name and Java parameter types (erased of generics)."""

    name: str
    params: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.name}({', '.join(self.params)})"


def _javap() -> str:
    javap = shutil.which("javap")
    if javap is None:
        raise RuntimeError("javap (the JDK's class file reader) is not on PATH: install a JDK 17 (make setup does)")
    return javap


def _split_params(text: str) -> tuple[str, ...]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        if depth == 0 and ch not in "<>":
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return tuple(out)


def _javap_methods(classpath: str, classes: list[str]) -> dict[str, set[ServiceMethod]]:
    proc = subprocess.run(
        [_javap(), "-public", "-cp", classpath, *classes], capture_output=True, text=True, check=True, timeout=120
    )
    out: dict[str, set[ServiceMethod]] = {}
    current = None
    for line in proc.stdout.splitlines():
        head = re.match(r"^public (?:abstract |final )*(?:class|interface) ([\w.$]+)", line)
        if head:
            current = head.group(1)
            out[current] = set()
            continue
        m = _METHOD.match(line)
        if current and m and "(" not in m.group("ret"):
            out[current].add(ServiceMethod(m.group("name"), _split_params(m.group("params"))))
    return out


def service_classes(module_jar: Path, ignite_core_jar: Path) -> list[str]:
    """The classes of ``module_jar`` that implement Ignite's ``Service`` (directly)."""
    with zipfile.ZipFile(module_jar) as zf:
        # Only classes whose constant pool names the interface can implement it (javap confirms).
        names = [
            n[:-6].replace("/", ".")
            for n in zf.namelist()
            if n.endswith(".class")
            and "$" not in n
            and n.startswith("org/tensorflow/")
            and SERVICE_INTERFACE.replace(".", "/").encode() in zf.read(n)
        ]
    proc = subprocess.run(
        [_javap(), "-public", "-cp", f"{module_jar}:{ignite_core_jar}", *names],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return sorted(
        m.group(1)
        for m in re.finditer(
            r"^public (?:abstract |final )*class ([\w.$]+)(?: extends [\w.$<>, ]+)? implements ([^{]*)\{",
            proc.stdout,
            re.MULTILINE,
        )
        if SERVICE_INTERFACE in m.group(2).replace(" ", "").split(",")
    )


def public_methods(module_jar: Path, ignite_core_jar: Path, cls: str) -> set[ServiceMethod]:
    """Every public method a thin client can invoke on a deployed ``cls`` (constructors and Object's aside)."""
    found = _javap_methods(f"{module_jar}:{ignite_core_jar}", [cls, SERVICE_INTERFACE])
    simple = cls.rsplit(".", 1)[1]
    own = {m for m in found[cls] if m.name != simple}
    return own | found[SERVICE_INTERFACE]
