"""The report over an output folder: the verdict table, findings, verdicts.md, index.html,
and the docs' numbers synced from it."""
