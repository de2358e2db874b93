"""``ignite-tf``'s one grammar, checked on every parser ``cli.main.build_parser`` builds.

The rules (README, "Command line"): every command that connects to a cluster takes the same
connection options; a short flag means one thing; every command that reports a result takes
``--json``; no two options differ only by a unit suffix; every option has help text; the
servers the CLI starts bind with ``--bind``; renamed options keep their old spelling as hidden
aliases that warn.
"""

from __future__ import annotations

import argparse
import inspect
import re
import warnings

import pytest

from tensorflow_ignite.cli import validate
from tensorflow_ignite.cli.credentials import CONNECTION_OPTIONS, client_settings
from tensorflow_ignite.cli.main import build_parser
from tensorflow_ignite.errors import ConfigurationError

#: The commands that talk to a cluster (``demo``: when --host is given).
CONNECTING = {"load", "predict", "demo", "tensorboard", "start", "ps", "describe", "logs", "attach", "stop", "rm",
              "module check"}
#: Commands that print something other than a result: a stream of a job's output, a server's
#: lifetime, a walkthrough, or the artifact asked for (a path, an XML fragment).
NOT_A_RESULT = {"logs", "attach", "tensorboard", "demo", "module path", "module config"}
#: Commands with progress bars.
PROGRESS = {"load", "predict", "demo"}
_UNIT = re.compile(r"-(mb|mib|kb|gb|bytes|ms|s|sec|secs|seconds|minutes)$")


def _leaves(parser: argparse.ArgumentParser, path: str = "") -> dict[str, argparse.ArgumentParser]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {path: parser}
    out: dict[str, argparse.ArgumentParser] = {}
    for sub in subs:
        for name, child in sub.choices.items():
            out.update(_leaves(child, f"{path} {name}".strip()))
    return out


LEAVES = _leaves(build_parser())


def _options(parser: argparse.ArgumentParser, *, hidden: bool = False) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)
            and (hidden or a.help is not argparse.SUPPRESS)]


def _names(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in _options(parser) for s in a.option_strings}


def test_the_walk_finds_every_command() -> None:
    assert CONNECTING | NOT_A_RESULT | PROGRESS <= set(LEAVES)
    assert {"node start", "node stop", "node status", "module check", "rm"} <= set(LEAVES)


@pytest.mark.parametrize("command", sorted(LEAVES))
def test_connection_options_are_all_or_nothing(command: str) -> None:
    names = _names(LEAVES[command])
    if command in CONNECTING:
        assert set(CONNECTION_OPTIONS) <= names, f"{command} lacks {set(CONNECTION_OPTIONS) - names}"
    else:
        assert not set(CONNECTION_OPTIONS) & names, (
            f"{command} does not connect to a cluster but spells options as the connection ones: "
            f"{set(CONNECTION_OPTIONS) & names} (servers bind with --bind)")


def test_connection_options_mean_the_same_everywhere() -> None:
    def shape(command: str) -> list[tuple[str, object, object]]:
        acts = {a.option_strings[-1]: a for a in _options(LEAVES[command])}
        return [(name, acts[name].type, acts[name].metavar) for name in CONNECTION_OPTIONS]

    first = shape("load")
    for command in CONNECTING:
        assert shape(command) == first, command


def test_a_short_flag_means_one_thing() -> None:
    meaning: dict[str, set[str]] = {}
    for parser in LEAVES.values():
        for action in _options(parser, hidden=True):
            longs = [s for s in action.option_strings if s.startswith("--")]
            for short in (s for s in action.option_strings if not s.startswith("--")):
                meaning.setdefault(short, set()).update(longs)
    assert {short: longs for short, longs in meaning.items() if len(longs) != 1} == {}


@pytest.mark.parametrize("command", sorted(set(LEAVES) - NOT_A_RESULT))
def test_every_command_reporting_a_result_has_json(command: str) -> None:
    assert "--json" in _names(LEAVES[command])


@pytest.mark.parametrize("command", sorted(PROGRESS))
def test_progress_is_one_boolean_option(command: str) -> None:
    (action,) = [a for a in _options(LEAVES[command]) if "--progress" in a.option_strings]
    assert isinstance(action, argparse.BooleanOptionalAction)
    assert action.option_strings == ["--progress", "--no-progress"]
    assert action.default is None


def test_no_two_options_differ_only_by_a_unit_suffix() -> None:
    by_base: dict[str, set[str]] = {}
    for parser in LEAVES.values():
        for name in _names(parser):
            if name.startswith("--"):
                by_base.setdefault(_UNIT.sub("", name), set()).add(name)
    assert {base: names for base, names in by_base.items() if len(names) > 1} == {}


@pytest.mark.parametrize("command", sorted(LEAVES))
def test_every_option_has_help(command: str) -> None:
    parser = LEAVES[command]
    missing = [a.option_strings or a.dest for a in parser._actions
               if a.help is not argparse.SUPPRESS and not (a.help or "").strip()]
    assert missing == []


def test_every_command_has_help() -> None:
    root = build_parser()

    def walk(parser: argparse.ArgumentParser, path: str) -> list[str]:
        out = []
        for sub in (a for a in parser._actions if isinstance(a, argparse._SubParsersAction)):
            helps = {c.dest: c.help for c in sub._choices_actions}
            for name, child in sub.choices.items():
                if not (helps.get(name) or "").strip():
                    out.append(f"{path} {name}".strip())
                out += walk(child, f"{path} {name}")
        return out

    assert walk(root, "") == []


def test_servers_bind_with_bind() -> None:
    assert "--bind" in _names(LEAVES["node start"])
    assert {"--bind", "--http-port"} <= _names(LEAVES["tensorboard"])
    assert "--client-port" in _names(LEAVES["node start"]) and "--client-port" in _names(LEAVES["demo"])


@pytest.mark.parametrize("command,argv,dest,value,old", [
    ("node start", ["node", "start", "--host", "0.0.0.0"], "bind", "0.0.0.0", "--host"),
    ("demo", ["demo", "--node-port", "0"], "client_port", 0, "--node-port"),
    ("load", ["load", "C", "f.npz", "--batch-mb", "2"], "batch_bytes", 2 << 20, "--batch-mb"),
])
def test_old_spellings_work_hidden_with_a_warning(command: str, argv: list[str], dest: str, value: object, old: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(argv)
    assert getattr(args, dest) == value
    err = capsys.readouterr().err
    assert f"{old} is deprecated" in err and err.count("\n") == 1
    assert old not in _names(LEAVES[command])  # hidden from --help


def test_rm_has_no_short_force() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["rm", "job", "-f"])
    assert build_parser().parse_args(["rm", "job", "--force"]).force is True
    assert build_parser().parse_args(["logs", "job", "-f"]).follow is True


def test_host_lists_parse_for_every_connecting_command() -> None:
    argv = {"load": ["load", "C", "f.npz"], "predict": ["predict", "m.keras", "S", "--out", "O"],
            "demo": ["demo"], "tensorboard": ["tensorboard", "--logdir", "ignite:///runs"],
            "start": ["start", "C", "dir", "--", "python", "t.py"], "ps": ["ps"], "rm": ["rm", "j"],
            "describe": ["describe", "j"], "logs": ["logs", "j"], "attach": ["attach", "j"], "stop": ["stop", "j"],
            "module check": ["module", "check"]}
    assert set(argv) == CONNECTING
    for command, words in argv.items():
        at = len(command.split())  # the options right after the command's name
        args = build_parser().parse_args([*words[:at], "--host", "a:1,b", "--port", "2", *words[at:]])
        assert (args.host, args.port) == ("a:1,b", 2), command


def test_server_hostname_reaches_the_options(monkeypatch: pytest.MonkeyPatch) -> None:
    from tensorflow_ignite.cli.credentials import connection_options

    monkeypatch.setenv("IGNITE_PASSWORD", "pw")
    args = build_parser().parse_args(["ps", "--host", "n1:1,n2", "--port", "7", "--username", "u",
                                      "--cafile", "ca.pem", "--server-hostname", "ignite.example"])
    opts = connection_options(args)
    assert (opts.host, opts.port, opts.fallbacks) == ("n1", 1, ("n2:7",))
    assert (opts.username, opts.password, opts.server_hostname, opts.uses_tls) == ("u", "pw", "ignite.example", True)


def test_password_env_names_the_variable_and_no_terminal_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_PW", "secret")
    monkeypatch.delenv("IGNITE_PASSWORD", raising=False)
    args = build_parser().parse_args(["demo", "--host", "h", "--username", "u", "--password-env", "MY_PW"])
    assert client_settings(args)["password"] == "secret"
    args = build_parser().parse_args(["demo", "--host", "h", "--username", "u"])
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    with pytest.raises(ConfigurationError, match=r"\$IGNITE_PASSWORD"):
        client_settings(args)


def test_write_and_predict_take_the_endpoint_and_every_connection_keyword() -> None:
    import tensorflow_ignite as ti

    for fn in (ti.write, ti.predict):
        params = inspect.signature(fn).parameters
        assert {"host", "port"} <= set(params), fn.__name__
        assert "ConnectionKeywords" in str(params["connection"].annotation), fn.__name__  # server_hostname among them


@pytest.mark.parametrize("text,value", [("4194304", 4 << 20), ("4M", 4 << 20), ("4MiB", 4 << 20), ("4mb", 4 << 20),
                                        ("512K", 512 << 10), ("1.5G", 3 << 29), ("1b", 1)])
def test_sizes(text: str, value: int) -> None:
    assert validate.size(text) == value


@pytest.mark.parametrize("text", ["0", "-1M", "M", "4X", "inf", "nan", ""])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        validate.size(text)


def test_job_durations_are_seconds_and_the_ms_keywords_warn() -> None:
    from tensorflow_ignite.launcher.jobs import job_durations

    defaults = {"max_restarts": 3, "backoff_ms": 1000, "settle_ms": 1000, "grace_ms": 10_000}
    assert job_durations("f", {}) == defaults
    assert job_durations("f", dict(backoff=0.2, settle=0, grace=2.5, max_restarts=0)) == {
        "max_restarts": 0, "backoff_ms": 200, "settle_ms": 0, "grace_ms": 2500}
    with pytest.warns(DeprecationWarning, match=r"settle_ms= is deprecated: pass settle= in seconds \(settle=0.5\)"):
        assert job_durations("f", dict(settle_ms=500))["settle_ms"] == 500
    with pytest.raises(ConfigurationError, match="both given"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        job_durations("f", dict(settle=1.0, settle_ms=500))
    with pytest.raises(ConfigurationError, match="seconds"):
        job_durations("f", dict(backoff=-1))
    with pytest.raises(ConfigurationError, match="max_restarts=-1"):
        job_durations("f", dict(max_restarts=-1))
    with pytest.raises(TypeError, match=r"submit\(\) got an unexpected keyword argument 'retries'; the restart keywords"):
        job_durations("submit", dict(retries=2))


def test_submit_and_submit_predict_take_the_restart_keywords() -> None:
    from tensorflow_ignite.launcher.jobs import JobClient, RestartKeywords
    from tensorflow_ignite.scoring.cluster import submit_predict

    assert {"max_restarts", "backoff", "settle", "grace"} <= set(RestartKeywords.__annotations__)
    for fn in (JobClient.submit, submit_predict):
        params = inspect.signature(fn).parameters
        assert params["restart"].kind is inspect.Parameter.VAR_KEYWORD, fn.__name__
        assert not set(params) & set(RestartKeywords.__annotations__), fn.__name__


def test_tensorboard_host_names_the_cluster_of_an_ignite_logdir() -> None:
    from tensorflow_ignite.cli.tensorboard import child_env, cluster_logdir

    def parsed(*extra: str) -> argparse.Namespace:
        return build_parser().parse_args(["tensorboard", *extra])

    assert cluster_logdir(parsed("--logdir", "ignite:///runs", "--host", "a:1,b", "--port", "7")) == \
        "ignite://a:1,b:7/runs"
    assert cluster_logdir(parsed("--logdir", "ignite://h:5/runs")) == "ignite://h:5/runs"
    with pytest.raises(ConfigurationError, match="--bind and --http-port"):
        cluster_logdir(parsed("--logdir", "ignite://h:5/runs", "--host", "0.0.0.0"))
    with pytest.raises(ConfigurationError, match="HTTP port is --http-port"):
        cluster_logdir(parsed("--logdir", "ignite://h:5/runs", "--port", "6006"))
    env = child_env({"username": "u", "password": "pw", "server_hostname": "ignite.example"})
    assert (env["IGNITE_FS_USERNAME"], env["IGNITE_FS_PASSWORD"], env["IGNITE_FS_SERVER_HOSTNAME"]) == \
        ("u", "pw", "ignite.example")


def test_json_commands_refuse_json_while_following() -> None:
    from tensorflow_ignite.cli.main import main

    # start --json without --detach: refused before anything connects (exit 1, one line).
    assert main(["start", "--json", "--port", "1", "C", "dir", "--", "python", "t.py"]) == 1


@pytest.mark.parametrize("command", sorted(CONNECTING))
def test_a_password_on_the_command_line_is_refused(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    words = command.split()
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args([*words, "--password", "S3cr3tGrammar"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "never a command-line argument" in err and "S3cr3tGrammar" not in err


def test_every_flag_the_docs_name_exists() -> None:
    """Each ``ignite-tf COMMAND ... --flag`` in README.md and docs/ is an option of that command, in its
    current spelling (not a deprecated alias)."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    known = {command: _names(parser) | {"--help"}
             for command, parser in LEAVES.items()}
    known_top = {s for a in build_parser()._actions for s in a.option_strings}
    checked, unknown = 0, []
    for path in [repo / "README.md", *sorted((repo / "docs").rglob("*.md"))]:
        if not path.exists():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in re.finditer(r"ignite-tf((?: [^`|;&]*)?)", line):
                words = match.group(1).split(" -- ")[0].split()  # after ` -- `: the job's own command
                command = next((c for c in (" ".join(words[:2]), " ".join(words[:1])) if c in LEAVES), None)
                if command is None:
                    continue
                checked += 1
                for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", " ".join(words)):
                    if flag not in known[command] and flag not in known_top:
                        unknown.append(f"{path.relative_to(repo)}:{number}: ignite-tf {command} {flag}")
    assert checked > 10
    assert unknown == []
