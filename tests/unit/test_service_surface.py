"""Every public method of every service the module deploys is classified: a checked call, or refused.

A thin client can invoke any public method of a deployed Ignite service by name, and
open-source Ignite 2 has no authorization.  So the module's service surface is read from
the compiled classes (``javap``: each class of the jar implementing Ignite's ``Service``,
its own public methods and the interface's default lifecycle methods) and compared with
:data:`SURFACE`: a service or method added later and not classified here fails this test.
What each kind must do for an authenticated user who is neither submitter nor admin is
tested on real nodes, method by method from the same enumeration:
``tests/integration/test_launcher_hostile.py`` (``TfJobService``, own and stock XML nodes)
and ``tests/integration/test_follow_hostile.py`` (``FollowLogService``).

* ``SETTING`` -- refused once deployed (the settings are the node configuration's);
* ``LIFECYCLE`` -- refused, or without effect, for anyone but Ignite's deployment;
* ``CHECKED`` -- decides from the caller the node authenticated and the sealed job spec;
* ``READ`` -- answers (or refuses), and changes nothing.
"""

from __future__ import annotations

from pathlib import Path

from tensorflow_ignite.local.java import module_jar
from tensorflow_ignite.testing.service_surface import public_methods, service_classes

SETTING, LIFECYCLE, CHECKED, READ = "setting", "lifecycle", "checked", "read"

LAUNCHER = "org.tensorflow.ignite.launcher.TfJobService"
FOLLOW_LOG = "org.tensorflow.ignite.follow.FollowLogService"

#: Every public method of every service of the module, and what it must do for an unprivileged caller.
SURFACE: dict[str, dict[str, str]] = {
    LAUNCHER: {
        "setAllowUnauthenticated": SETTING, "setSubmitters": SETTING, "setAdmins": SETTING,
        "setAllowedCommands": SETTING, "setMaxJobBytes": SETTING, "setWorkRoot": SETTING, "setPolicy": SETTING,
        "init": LIFECYCLE, "execute": LIFECYCLE, "cancel": LIFECYCLE,
        "submit": CHECKED, "stop": CHECKED, "remove": CHECKED, "output": CHECKED,
        "getPolicy": READ, "ping": READ, "securitySummary": READ, "regions": READ,
    },
    FOLLOW_LOG: {
        "setCaches": SETTING, "setRetentionSeconds": SETTING,
        "init": LIFECYCLE, "execute": LIFECYCLE, "cancel": LIFECYCLE,
        "getCaches": READ, "getRetentionSeconds": READ, "retention": READ, "head": READ, "verify": READ,
    },
}


def _jars() -> tuple[Path, Path]:
    jar = module_jar()
    return jar, next((jar.parent / "lib").glob("ignite-core-*.jar"))


def test_every_public_method_of_every_module_service_is_classified() -> None:
    jar, core = _jars()
    classes = service_classes(jar, core)
    assert classes == sorted(SURFACE), f"services in the module jar: {classes}; classify the new one in SURFACE"
    for cls in classes:
        found = {m.name for m in public_methods(jar, core, cls)}
        unknown, gone = found - set(SURFACE[cls]), set(SURFACE[cls]) - found
        assert not unknown, (f"{cls}: public methods {sorted(unknown)} are invocable by any thin client; make each "
                             "a checked call or refuse once deployed, then classify it in SURFACE")
        assert not gone, f"{cls}: {sorted(gone)} are no longer public; drop them from SURFACE"
