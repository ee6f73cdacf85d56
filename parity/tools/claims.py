"""The plants each registered case must catch (``python -m parity selfcheck --quick``).

Keys are a case name (every case of that name: a grid) or a full case id (one case, overriding
its name's entry); values are plants of ``parity.tools.plants`` that must turn the case red. Each
case keeps at least one, so each case proves in CI that it can still fail. The entries were
measured: each plant was applied and the listed cases went red under it.
"""

from __future__ import annotations

CLAIMS: dict[str, tuple[str, ...]] = {}
