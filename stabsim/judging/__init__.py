"""From measurements to verdicts: measures with confidence intervals, rate fits, the verdict
rules and record, where a bound applies, figures, errata ids."""
