"""Whether an adapter's N/As are what its declaration says (tests/conformance/capabilities/test_capabilities.py): for
every scenario, the adapter runs it exactly when its client has every capability the scenario
needs (or something stands in) and no exception of its adapter applies; an N/A names the missing
capability, or is a declared exception; and the settings whose contracts it makes N/A
(``Adapter.lacks``) are lacks of its declaration, with the same reason."""

from __future__ import annotations

from collections.abc import Iterable

from conformance.adapters.base import Adapter
from conformance.client_capabilities import declaration, needs
from conformance.model import Scenario
from conformance.runner import applicable


def disagreements(adapter: Adapter, scenarios: Iterable[Scenario]) -> list[str]:
    declared = declaration(adapter)
    if declared is None:
        return [f"{adapter.name}: no capabilities declared (Adapter.capabilities)"]
    found = [f"{adapter.name}: declared as {declared.client!r}"] if declared.client != adapter.name else []
    for setting, reason in adapter.lacks.items():
        lack = declared.lacks.get(setting)
        if lack is None or lack.reason != reason:
            found.append(f"{adapter.name}: Adapter.lacks[{setting!r}] is not the declaration's lack of it")
    for scenario in scenarios:
        ok, why = applicable(scenario, adapter)
        missing, exception = declared.missing(scenario), declared.exception(scenario)
        if ok and not declared.runs(scenario):
            found.append(f"{adapter.name} runs {scenario.id}, which its declaration says it cannot: "
                         f"{'lacks ' + ', '.join(missing) if missing else 'exception ' + repr(exception)}")
        elif not ok and declared.runs(scenario):
            found.append(f"{adapter.name} is N/A for {scenario.id} though its client has every capability it needs "
                         f"({', '.join(needs(scenario)) or 'none'}) and no exception applies: {why}")
        elif not ok and missing and not any(name in why for name in missing):
            found.append(f"{adapter.name}'s N/A for {scenario.id} does not name {missing[0]}: {why}")
        elif not ok and not missing and exception is not None and exception[0] not in why:
            found.append(f"{adapter.name}'s N/A for {scenario.id} does not name its exception {exception[0]}: {why}")
    return found
