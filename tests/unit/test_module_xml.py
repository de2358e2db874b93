"""``ignite-tf module config --follow-log``: the follow log in the module's Spring XML fragment.

That Spring builds it and the nodes log is tested on stock nodes (``test_follow_log_stock.py``);
here: the fragment is well-formed XML with the attribute and the service the Java
``FollowLog.configure`` adds, and the command's arguments are checked.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from tensorflow_ignite.cli.main import main as cli
from tensorflow_ignite.launcher.module import FOLLOW_LOG_ATTRIBUTE, MODULE_ATTRIBUTE, xml_fragment


def _parse(fragment: str) -> ET.Element:
    return ET.fromstring(f"<bean>{fragment}</bean>")


def _follow_service(root: ET.Element) -> ET.Element | None:
    for bean in root.iter("bean"):
        if bean.get("class") == "org.tensorflow.ignite.follow.FollowLogService":
            return bean
    return None


def test_without_follow_log_the_fragment_has_no_follow_log() -> None:
    root = _parse(xml_fragment())
    keys = [e.get("key") for e in root.iter("entry")]
    assert keys == [MODULE_ATTRIBUTE] and _follow_service(root) is None


def test_the_follow_log_attribute_and_service() -> None:
    root = _parse(xml_fragment(follow_log=["a,b", " a", "c&d"], follow_log_retention_s=90))
    entries = {e.get("key"): e.get("value") for e in root.iter("entry")}
    assert entries[FOLLOW_LOG_ATTRIBUTE] == "a,b,c&d"  # each cache once, in order, escaped in the XML
    service = _follow_service(root)
    assert service is not None
    props = {p.get("name"): p for p in service.iter("property")}
    assert [v.text for v in props["caches"].iter("value")] == ["a", "b", "c&d"]
    assert props["retentionSeconds"].get("value") == "90"
    config = next(b for b in root.iter("bean") if b.get("class") == "org.apache.ignite.services.ServiceConfiguration"
                  and any(p.get("value") == "tf-ignite-follow-log" for p in b.findall("property")))
    values = {p.get("name"): p.get("value") for p in config.findall("property")}
    assert (values["maxPerNodeCount"], values["totalCount"]) == ("1", "0")  # one instance on every module node


def test_default_retention_is_one_hour() -> None:
    service = _follow_service(_parse(xml_fragment(follow_log=["a"])))
    assert service is not None
    assert next(p for p in service.iter("property") if p.get("name") == "retentionSeconds").get("value") == "3600"


def test_a_non_positive_retention_is_refused() -> None:
    with pytest.raises(ValueError, match="retention must be a positive"):
        xml_fragment(follow_log=["a"], follow_log_retention_s=0)


def test_cli_durations(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["module", "config", "--follow-log", "events", "--follow-log-retention", "1.5h"]) == 0
    out = capsys.readouterr().out
    assert '<property name="retentionSeconds" value="5400"/>' in out
    with pytest.raises(SystemExit):
        cli(["module", "config", "--follow-log", "events", "--follow-log-retention", "1x"])
    assert "is not a duration" in capsys.readouterr().err
    assert cli(["module", "config", "--follow-log-retention", "1h"]) == 2
    assert "needs --follow-log" in capsys.readouterr().err
