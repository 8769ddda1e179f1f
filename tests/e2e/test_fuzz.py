"""Bounded, seeded fuzzing of a real server process (bench/fuzz.py runs the long
campaign): 2,000 malformed or mutated frames of every supported API and version, and
200 SASL sessions with mutated handshakes and tokens. The server never dies, answers
only with well-formed responses (every successful assignment is checked against the
request as the server must have read it), closes only the offending connection, answers
a well-formed request right after every close, and never authenticates a wrong password."""

from __future__ import annotations

from bench.fuzz import MUTATIONS, run_campaign


def test_fuzzed_frames_and_sasl_sessions_never_hurt_the_server():
    report, sasl, code, sasl_code = run_campaign(frames=2000, seed=20261122, concurrency=8, sasl_sessions=200)
    assert report.failures == [] and sasl.failures == []
    assert code == 0 and sasl_code == 0  # alive to the end, then a clean SIGTERM shutdown
    assert report.frames == 2000
    assert set(report.outcomes) == set(MUTATIONS)  # every kind of damage was tried
    totals = {}
    for counts in report.outcomes.values():
        for outcome, n in counts.items():
            kind = outcome.split(" (")[0].split(":")[0]
            totals[kind] = totals.get(kind, 0) + n
    assert sum(totals.values()) == 2000
    assert totals["answered"] > 200 and totals["closed"] > 500 and totals["closed at end of input"] > 50
    reasons = {o for counts in report.outcomes.values() for o in counts if o.startswith("closed: ")}
    assert {"closed: invalid frame size", "closed: malformed request header", "closed: malformed request",
            "closed: unknown api key", "closed: unsupported api version"} <= reasons
    assert report.recovery_checks >= totals["closed"] + totals["closed at end of input"]
    assert report.sentinel_checks >= 40
    assert report.outcomes["none"]["answered"] > 0
    # well-formed assignments were among the answers, and were checked
    assert report.outcomes["trailing_garbage"]["answered"] > 0
    assert sasl.sessions["authenticated"] > 0 and sasl.sessions["refused (error 58)"] > 0
