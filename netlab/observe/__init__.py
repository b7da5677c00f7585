"""Observability: where a step's time goes, read from a trace (``analysis``), the trace out to HTA
and Perfetto and back (``hta_export``), and the seeded find-the-bottleneck scenarios
(``scenarios``). Chapter 7."""
