"""A broker that dies (kill -9, power failure, rollback) or shuts down gives its timer wheel's in-memory copy back
at once (sim/broker_host.py's ``_let_go``): no full collection per restart is needed to bound memory, and nothing
reads a dead broker's wheel (a read of a released one raises, and the runs hold)."""

from __future__ import annotations

import pytest

from scenarios.catalogue import load_builtin
from sim.broker_host import BrokerHost
from sim.run import run_scenario


@pytest.mark.parametrize("name", ["timer-wheel-crash", "graceful-restart"])
def test_a_brokers_timer_wheel_is_released_when_it_goes(name, monkeypatch):
    gone = []
    for exit_name in ("crash", "stop"):
        original = getattr(BrokerHost, exit_name)

        def leaving(self, *args, _original=original, **kwargs):
            if self.broker is not None:
                gone.append(self.broker)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(BrokerHost, exit_name, leaving)
    result = run_scenario(load_builtin(name), 1)
    assert result.summary["verdict"] == "holds"
    wheels = [b.timer_message_store.timer_wheel for b in gone if b.timer_message_store is not None]
    assert wheels, f"{name}: no broker with a timer wheel went away"
    assert all(w.buf.closed for w in wheels)
    live = result.world.brokers.broker
    assert live is None or not live.timer_message_store.timer_wheel.buf.closed
    with pytest.raises(ValueError):
        wheels[0].get_slot(0)
