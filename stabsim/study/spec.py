"""A study file -> a validated ``StudySpec`` (``load_study``, ``parse_study``): profiles
applied, every section and key checked against its ``Param`` (an unknown one is an error with
a "did you mean"), defaults filled in, the sweep normalised, real data read and checked, the
kind's own ``validate`` run.  The file format: docs/study-files.md."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path

from stabsim.registry import DATA_SOURCE, REQUIRED, BadValue, Param, StudyError, StudySpec, did_you_mean, get_kind
from stabsim.registry.spec import sanitize
from stabsim.study.data_sources import resolve_data_source
from stabsim.study.schema import BOUNDS_PARAMS, CHECK_PARAMS, RUN_PARAMS, STUDY_PARAMS


# ---- parsing ---------------------------------------------------------------------------

def _err(src, where, msg):
    return StudyError(f"{src}: {where} {msg}")


def _check_value(src, where, key, p: Param, value):
    if p.check is None:
        return value
    try:
        return p.check(value)
    except BadValue as e:
        raise _err(src, where, f"{key} = {repr(value)}: {e.text(key)}") from None


def _unknown_key(src, section, key, allowed, schema_all):
    msg = f"unknown key {key!r} in [{section}].{did_you_mean(key, allowed)}"
    owners = [s for s, t in schema_all.items() if key in t and s != section]
    if owners:
        msg += f" ({key!r} belongs in [{owners[0]}].)"
    msg += f" Allowed: {', '.join(allowed)}"
    return StudyError(f"{src}: {msg}")


def load_study(path, profile: str | None = None, *, seed: int | None = None, plugins=None,
               outside_assumptions=None) -> StudySpec:
    """Read and validate a study file.  ``profile``: a ``[profiles.NAME]`` (None: ``full``
    if present, else the base values).  ``seed`` overrides ``[study] seed``.
    ``outside_assumptions``: as ``parse_study``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StudyError(f"study file {str(path)!r} not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise StudyError(f"cannot read study file {str(path)!r}: {e}") from None
    return parse_study(text, path=path, profile=profile, seed=seed, plugins=plugins,
                       outside_assumptions=outside_assumptions)


def parse_study(text: str, *, path=None, profile: str | None = None, seed: int | None = None,
                plugins=None, outside_assumptions=None) -> StudySpec:
    """Validate a study given as TOML text (the format: docs/study-files.md).
    ``plugins``: module names imported first (``stabsim.registry.plugins``; ``stabsim run --plugins``).
    ``outside_assumptions``: True, or a list of bound keys, that may be compared with runs outside
    their theorems' assumptions (as the file's ``outside_assumptions``; without it such a bound
    is an error, ``stabsim.judging.applicability``)."""
    if plugins:
        from stabsim.registry.plugins import PluginError, load_plugins

        try:
            load_plugins(plugins)
        except PluginError as e:
            raise StudyError(str(e)) from None
    src = str(path) if path is not None else "<study>"
    raw = _read_toml(src, text)
    profiles, profile, merged, origin = apply_profile(src, raw, profile)
    study, kind = _parse_study_section(src, path, merged, origin, seed)
    schema = _kind_schema(kind)
    _check_section_names(src, kind, schema, merged, profiles)
    sections, bounds, check_cfg, run_cfg = _parse_sections(src, schema, merged, origin)
    if bounds.get("outside_assumptions") is False:  # the default: kept out of data.nc's bounds attr
        del bounds["outside_assumptions"]
    sweep, axes = _parse_sweep(src, schema, merged, origin)

    data_source = None
    if schema.get("data", {}).get("file") is DATA_SOURCE["file"]:  # kinds that take real data
        data_source = resolve_data_source(src, path, sections, sweep, merged, study["seed"])
    spec = StudySpec(id=study["id"], description=study["description"], kind=kind.name,
                     seed=study["seed"], replicates=study["replicates"], chunk=study["chunk"],
                     suite=study["suite"], sections=sections, sweep=sweep, bounds=bounds,
                     profile=profile, path=str(path) if path is not None else None, text=text, axes=axes,
                     check=check_cfg, plugins=tuple(dict.fromkeys(list(study["plugins"]) + list(plugins or []))),
                     backend=run_cfg["backend"])
    try:
        _finish_custom_and_check(spec)
    except StudyError as e:
        raise StudyError(f"{src}: {e}") from None
    spec.data_source = data_source
    if kind.validate is not None:
        try:
            kind.validate(spec)
        except StudyError as e:
            raise StudyError(f"{src}: {e}") from None
    spec.outside_assumptions = _check_assumptions(src, spec, study["check"], outside_assumptions)
    return spec


def _check_assumptions(src: str, spec: StudySpec, check, extra) -> dict:
    """Every bound the study names against its runs (``stabsim.judging.applicability``): a mismatch is an
    error unless the study opts in for that bound; returns ``{key: mismatches}`` of those opted in."""
    from stabsim.judging.applicability import outside_opt_in, study_mismatches

    opted = outside_opt_in(spec, extra)
    named = set(spec.bounds.get("keys", [])) | set((spec.check or {}).get("bounds") or [])
    stray = sorted(opted - named)
    if stray:
        raise StudyError(f"{src}: outside_assumptions names {stray[0]!r}, which is not among the study's bounds "
                         f"([bounds] keys, [check] bounds: {', '.join(sorted(named)) or '(none)'})")
    found = study_mismatches(spec, check)
    refused = {k: m for k, m in found.items() if k not in opted}
    if refused:
        lines = "\n".join(f"  - {m}" for ms in refused.values() for m in ms)
        keys = ", ".join(refused)
        raise StudyError(f"{src}: the run is outside the assumptions of {keys}:\n{lines}\nCompare with a bound whose "
                         f"theorem covers this run, or, to compare anyway, set outside_assumptions = "
                         f"{json.dumps(list(refused))} in [bounds] "
                         f"(every row of it is then marked \"outside the theorem's assumptions\")")
    return {k: m for k, m in found.items() if k in opted}


def _read_toml(src: str, text: str) -> dict:
    """The TOML document: not empty, every top-level key a section (a table)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise StudyError(f"{src}: not valid TOML: {e}") from None
    if not raw:
        raise StudyError(f"{src}: the study file is empty (no [study] section, no keys); a study needs at "
                         "least [study] with e.g. replicates = 100 (see 'stabsim list' for examples)")
    for key, val in raw.items():
        if not isinstance(val, dict):
            raise StudyError(f"{src}: top-level key {key!r} must be inside a section such as [study]")
    return raw


def apply_profile(src: str, raw: dict, profile: str | None):
    """Pop ``[profiles]`` off ``raw``, choose the profile (None: ``full`` if defined, else the
    base) and lay its tables over the base sections.  Returns ``(profiles, profile, merged,
    origin)``; ``origin[(section, key)]`` names the profile table a value came from."""
    profiles = raw.pop("profiles", {})
    for pname, ptable in profiles.items():
        if not isinstance(ptable, dict):
            raise StudyError(f"{src}: [profiles] {pname} must be a table ([profiles.{pname}])")
        for sec, stable in ptable.items():
            if not isinstance(stable, dict):
                raise StudyError(f"{src}: [profiles.{pname}] {sec} = {repr(stable)}: a profile overrides "
                                 f"keys of sections, e.g. study.replicates = 8 or [profiles.{pname}.sweep]")
    if profile is None:
        profile = "full" if "full" in profiles else None
    elif profile not in profiles:
        avail = ", ".join(profiles) or "none"
        raise StudyError(f"{src}: no profile {profile!r}.{did_you_mean(profile, profiles)} Profiles defined: {avail}")

    merged = copy.deepcopy(raw)
    origin = {}
    if profile is not None:
        for sec, stable in profiles[profile].items():
            merged.setdefault(sec, {})
            for key, val in stable.items():
                merged[sec][key] = val
                origin[(sec, key)] = f"profiles.{profile}.{sec}"
    return profiles, profile, merged, origin


def _where(origin: dict, sec, key=None) -> str:
    """``[section]`` or ``[profiles.NAME.section]``: where a value was given, for messages."""
    return f"[{origin.get((sec, key), sec)}]"


def _parse_study_section(src: str, path, merged: dict, origin: dict, seed: int | None):
    """``[study]``: checked values with defaults (``seed``: the ``--seed`` override), the id
    from the file name when not given, the chunk size; and the ``Kind`` it names."""
    study_raw = merged.get("study", {})
    for key in study_raw:
        if key not in STUDY_PARAMS:
            raise _unknown_key(src, origin.get(("study", key), "study"), key, list(STUDY_PARAMS),
                               {"study": STUDY_PARAMS})
    study = {}
    for key, p in STUDY_PARAMS.items():
        study[key] = (_check_value(src, _where(origin, "study", key), key, p, study_raw[key]) if key in study_raw
                      else p.default)
    if seed is not None:
        study["seed"] = _check_value(src, "--seed", "seed", STUDY_PARAMS["seed"], seed)
    if study["id"] is None:
        stem = Path(src).stem if path is not None else "study"
        study["id"] = sanitize(stem)
    try:
        kind = get_kind(study["kind"])
    except BadValue as e:
        raise _err(src, _where(origin, "study", "kind"),
                   f"kind = {repr(study['kind'])}: {e.text('kind')}") from None
    if study["chunk"] is None:
        study["chunk"] = min(study["replicates"], 64)
    return study, kind


def _kind_schema(kind) -> dict:
    """``{section: {key: Param}}`` of a study of ``kind``: ``[study]``, ``[bounds]`` (with the
    kind's additions), ``[check]``, ``[run]`` and the kind's own sections."""
    schema = {"study": STUDY_PARAMS, "bounds": {**BOUNDS_PARAMS, **kind.params.get("bounds", {})},
              "check": CHECK_PARAMS, "run": RUN_PARAMS}
    schema.update({s: t for s, t in kind.params.items() if s != "bounds"})
    return schema


def _check_section_names(src: str, kind, schema: dict, merged: dict, profiles: dict) -> None:
    """Unknown sections (base or any profile), and unknown keys of every profile, the ones not
    selected included (a typo in ``[profiles.full]`` is found by a quick run too)."""
    allowed_sections = list(schema) + ["sweep", "profiles"]
    for table in [merged] + [profiles[p] for p in profiles]:
        for sec in table:
            if sec not in allowed_sections:
                loc = "" if table is merged else " (in a profile)"
                raise StudyError(f"{src}: unknown section [{sec}]{loc}.{did_you_mean(sec, allowed_sections)} "
                                 f"Sections for kind {kind.name!r}: {', '.join('[' + s + ']' for s in allowed_sections)}")
    # typos in profiles that are not selected are errors too
    for pname, ptable in profiles.items():
        for sec, stable in ptable.items():
            if sec in schema:
                for key in stable:
                    if key not in schema[sec]:
                        raise _unknown_key(src, f"profiles.{pname}.{sec}", key, list(schema[sec]), schema)


def _parse_sections(src: str, schema: dict, merged: dict, origin: dict):
    """Every section but ``[study]``: keys checked, defaults filled in (``REQUIRED`` ones must
    be given).  Returns ``(sections, bounds, check_cfg, run_cfg)``: the kind's sections,
    ``[bounds]``, ``[check]`` (empty unless the file has that section) and ``[run]``."""
    sections, bounds, check_cfg, run_cfg = {}, {}, {}, {}
    for sec, table in schema.items():
        if sec == "study":
            continue
        given = merged.get(sec, {})
        for key in given:
            if key not in table:
                raise _unknown_key(src, origin.get((sec, key), sec), key, list(table), schema)
        vals = {}
        for key, p in table.items():
            if key in given:
                vals[key] = _check_value(src, _where(origin, sec, key), key, p, given[key])
            elif p.default is REQUIRED:
                raise StudyError(f"{src}: [{sec}] {key} is required ({p.doc})")
            else:
                vals[key] = copy.deepcopy(p.default)
        if sec == "bounds":
            bounds = vals
        elif sec == "check":
            check_cfg = vals if sec in merged else {}
        elif sec == "run":
            run_cfg = vals
        else:
            sections[sec] = vals
    return sections, bounds, check_cfg, run_cfg


def _parse_sweep(src: str, schema: dict, merged: dict, origin: dict):
    """``[sweep]``: each axis a sweepable key (named by ``Param.dim`` or the key), its values
    checked by the key's checker and distinct.  Returns ``(sweep, axes)``: ``{axis: [values]}``
    (file order) and ``{axis: (section, key)}``."""
    axes_all = {}
    for sec, table in schema.items():
        if sec in ("study", "bounds", "check", "run"):
            continue
        for key, p in table.items():
            if p.sweepable:
                axes_all[p.dim or key] = (sec, key)
    sweep, axes = {}, {}
    for axis, values in merged.get("sweep", {}).items():
        loc = _where(origin, "sweep", axis)
        if axis not in axes_all:
            fixed = [f"{s}.{k}" for s, t in schema.items() if s not in ("study",) for k, p in t.items()
                     if not p.sweepable and k == axis]
            why = f" ({fixed[0]} cannot be swept.)" if fixed else ""
            raise StudyError(f"{src}: {loc}: unknown sweep axis {axis!r}.{did_you_mean(axis, axes_all)}{why} "
                             f"Sweepable: {', '.join(axes_all)}")
        if not isinstance(values, list) or not values:
            raise _err(src, loc, f"{axis} = {repr(values)}: a sweep axis must be a non-empty list of values, "
                                 f"e.g. {axis} = [v1, v2]")
        sec, key = axes_all[axis]
        p = schema[sec][key]
        normed = []
        for i, v in enumerate(values):
            try:
                normed.append(p.check(v) if p.check else v)
            except BadValue as e:
                raise _err(src, loc, f"{axis} = {repr(values)}: element {i}, {repr(v)}: {e.text(key)}") from None
        keys = [json.dumps(v, sort_keys=True) for v in normed]
        if len(set(keys)) != len(keys):
            dup = next(values[i] for i, k in enumerate(keys) if keys.count(k) > 1)
            raise _err(src, loc, f"{axis} = {repr(values)}: the value {repr(dup)} appears twice; "
                                 "sweep values must be distinct")
        sweep[axis], axes[axis] = normed, (sec, key)
    return sweep, axes


def _check_measure_config(chk: dict) -> None:
    """``[check]`` and each of its ``variants``: exactly one of measure (a function of
    stabsim.engine.measures) and value (a formula); the keys of a formula measure only with value; the
    formulas parse and call only allowed functions (their names are resolved on the data)."""
    from stabsim.theory.custom_bounds import ExprError
    from stabsim.registry.formulas import compile_formula, with_variant

    for variant in chk.get("variants") or [{}]:
        cfg = with_variant(chk, variant)
        where = f"[check] variant {variant['label']!r}" if variant else "[check]"
        _check_one_measure(cfg, where)
    formulas = [(k, chk[k]) for k in ("value", "widen", "shift") if chk.get(k) is not None]
    formulas += [(f"variants.{v['label']}.value", v["value"]) for v in chk.get("variants") or [] if v.get("value")]
    formulas += [(f"constants.{k}", v) for k, v in (chk.get("constants") or {}).items() if isinstance(v, str)]
    for where, text in formulas:
        try:
            compile_formula(text, where)
        except ExprError as e:
            raise StudyError(str(e)) from None


def _check_one_measure(cfg: dict, where: str) -> None:
    from stabsim.engine import measures as _measures

    m = cfg.get("measure")
    if (m is None) == (cfg.get("value") is None):
        raise StudyError(f"{where} needs exactly one of measure (a function of stabsim.engine.measures, e.g. "
                         "\"uas_mean\") and value (a per-replicate formula, e.g. \"F_out - FS_out\")")
    if m is not None and (not callable(getattr(_measures, m, None)) or m.startswith("_")):
        names = [n for n in dir(_measures) if not n.startswith("_") and callable(getattr(_measures, n))]
        raise StudyError(f"{where} measure = {m!r}: not a function of stabsim.engine.measures.{did_you_mean(m, names)}")
    if m is not None:
        extra = [k for k in ("widen", "shift", "quantity", "quantile", "statistic") if cfg.get(k) is not None]
        if extra:
            raise StudyError(f"{where} {extra[0]} goes with value = ...; a named measure computes its own "
                             "statistic and CI")


def _finish_custom_and_check(spec) -> None:
    """Compile, dry-run and register the ``[bounds.custom.*]`` of ``spec``; check that every
    ``custom.*`` key and the ``[check]`` names exist (raise ``StudyError``)."""
    from stabsim.theory.custom_bounds import ExprError, prepare, register_custom

    custom = spec.bounds.get("custom") or {}
    cells = spec.cells()
    first = spec.cell_params(cells[0]) if cells else spec.sections
    for name, table in custom.items():
        try:
            f = prepare(name, table, first)
            register_custom(name, table, f)
        except (ExprError, ValueError) as e:
            raise StudyError(f"[bounds.custom.{name}] {e}" if not str(e).startswith("[bounds.custom.")
                             else str(e)) from None
    for k in spec.bounds.get("keys", []):
        if k.startswith("custom.") and k[len("custom."):] not in custom:
            raise StudyError(f"[bounds] keys: {k!r} is not defined in this file "
                             f"(define it in [bounds.custom.{k[len('custom.'):]}]){did_you_mean(k[7:], custom)}")
    chk = spec.check
    if not chk:
        return
    from stabsim.theory import get as get_bound

    _check_measure_config(chk)
    if (chk.get("value") and chk.get("statistic") == "quantile" and chk.get("quantile") is None
            and chk.get("gamma") is None and spec.bounds.get("gamma") is None and spec.bounds.get("delta") is None):
        raise StudyError("[check] statistic = \"quantile\" needs its level: quantile = p, or gamma / delta "
                         "([check] gamma, [bounds] gamma or delta) for p = 1 - gamma")
    if not chk.get("bounds"):
        raise StudyError("[check] bounds: name at least one bound (a registry key or custom.NAME)")
    for k in chk["bounds"]:
        if k.startswith("custom.") and k[7:] in custom:
            continue
        try:
            get_bound(k)
        except KeyError as e:
            raise StudyError(f"[check] bounds: {e.args[0]}") from None
    for key in ("by", "candidates"):
        for ax in chk.get(key) or []:
            if ax not in spec.sweep:
                raise StudyError(f"[check] {key}: {ax!r} is not a sweep axis of this study.{did_you_mean(ax, spec.sweep)} "
                                 f"Axes: {', '.join(spec.sweep) or '(none)'}")
