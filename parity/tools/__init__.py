"""Tools around the parity harness: the core (``parity/``) never imports them.

- ``plants`` and ``selfcheck_runner``: mutation testing of the suite (``python -m parity selfcheck``);
- ``localise``: replays a failing end-to-end pair in lockstep to name its first divergence
  (``python -m parity bisect``, and the localiser of the e2e pairs);
- ``html_report``: one HTML page of the failing reports (``python -m parity report --html``;
  needs the ``report`` extra, matplotlib).

They depend on the core; the core reaches them only through the command line's dispatch and the
localiser reference a case carries (a ``"module:function"`` string resolved when a case fails).
"""
