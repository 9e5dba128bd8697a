"""The parity suite (issue #13): RocketMQ's own unit tests, mirrored against this store.

Each test's docstring names the Java class, method and tag(s) it mirrors (apache/rocketmq at rocketmq-all-4.9.8
and rocketmq-all-5.3.3) and checks the same facts with this project's public classes. Conventions:
- a Java test deliberately not mirrored is a row of ``test_not_mirrored.NOT_MIRRORED``: the out-of-scope feature it
  needs (HA, batches, LMQ, POP, hooks, ...) and a tripwire that fails once that feature exists;
- ``xfail(strict=True, reason="#13 item N: ...")`` marks a known difference being fixed under issue 13; the lead
  removes the mark once the fix is merged (strict: the test then fails loudly until the mark goes);
- ``xfail(strict=True, reason="finding (not in #13): ...")`` marks a difference this suite found.
"""
