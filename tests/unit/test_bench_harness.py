"""The benchmark harness's repetition rules (bench/harness.py), without Ignite."""

from __future__ import annotations

from bench.harness import Contender, Run, Scenario, run_scenario


def _contender(key: str, calls: list[str], max_reps: int | None = None) -> Contender:
    def run() -> Run:
        calls.append(key)
        return Run(0.01, 10, 100)

    return Contender(key, key, run, memory="none", max_reps=max_reps)


def test_rounds_rotate_and_a_capped_contender_sits_out_later_rounds() -> None:
    calls: list[str] = []
    sc = Scenario("t", "t", "", "rows/s", [_contender("a", calls), _contender("slow", calls, max_reps=2),
                                           _contender("b", calls)], reference="a", min_reps=4)
    res = run_scenario(sc, reps=3, log=lambda _: None)
    assert len(res.results["a"].runs) == 4 and len(res.results["b"].runs) == 4  # raised to min_reps
    assert len(res.results["slow"].runs) == 2
    rounds = [calls[0:3], calls[3:6]]
    assert rounds == [["a", "slow", "b"], ["slow", "b", "a"]]  # the starting contender rotates
    assert calls[6:] == ["b", "a", "a", "b"]
    assert res.ratio("b") == 1.0


def test_one_repetition_stays_one() -> None:
    calls: list[str] = []
    sc = Scenario("t", "t", "", "rows/s", [_contender("a", calls), _contender("b", calls)], min_reps=9)
    run_scenario(sc, reps=1, log=lambda _: None)
    assert calls == ["a", "b"]
