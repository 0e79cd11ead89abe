"""`gbdesk probes`, `card`, `items` and `models`: what can be run, on what."""

from __future__ import annotations

from typing import Any

from gbdesk.cli._common import _emit, _open_store


def cmd_probes(args) -> int:
    from gbdesk.contract import get_probe, harnesses, probe_names, probe_table_markdown
    from gbdesk.contract.running import describe

    if args.markdown:
        print(probe_table_markdown())
        return 0
    probes = [describe(get_probe(n)) for n in probe_names()]
    text = "\n".join(
        f"{p['name']:<22} {p['items']:>6} items  {p['title']}  (licence: {p['card']['licence']})"
        for p in probes
    )
    sets = [
        {"name": h.name, "title": h.title, "probes": list(h.probes), "template": h.template,
         "description": h.description}
        for h in harnesses().values()
    ]  # fmt: skip
    if sets:
        text += "\n\nharnesses (gbdesk audit --harness NAME):\n" + "\n".join(
            f"{h['name']:<22} {h['title']}: {len(h['probes'])} probes" for h in sets
        )
    _emit(args, {"probes": probes, "harnesses": sets}, text)
    return 0


def cmd_card(args) -> int:
    from gbdesk.contract import get_probe

    probe = get_probe(args.probe)
    wordings = probe.capabilities.parameters.wordings()
    text = probe.card.to_text(probe.name)
    if len(wordings) > 1:
        text += "\n\nWordings (gbdesk run --wordings all|0,2,3; docs/wordings.md):\n" + "\n".join(
            f"  {w.id} {w.name} ({w.kind}): {w.note}" for w in wordings
        )
    payload = {
        "probe": probe.name,
        "card": probe.card.to_json(),
        "wordings": [
            {"id": w.id, "name": w.name, "kind": w.kind, "note": w.note} for w in wordings
        ],
    }
    _emit(args, payload, text)
    return 0


def cmd_items(args) -> int:
    from gbdesk.contract import get_probe
    from gbdesk.contract.running import (
        parse_wordings,
        refuse_template_with_wordings,
        wording_kwargs,
    )

    refuse_template_with_wordings(args.template, args.wordings)  # as `gbdesk run` does
    probe = get_probe(args.probe)
    chosen = parse_wordings(args.wordings, probe.capabilities.parameters.wordings())
    listed = []
    template = None
    for wording in chosen:
        params = probe.resolve_params(
            template=args.template,
            limit=args.limit,
            sample=args.sample,
            **wording_kwargs(wording),
        )
        template = template if template is not None else params["template"]
        listed += [(wording, i) for i in probe.items(params)]
    several = args.wordings is not None
    payload = {
        "probe": probe.name,
        "template": template,
        # `prompts`: every prompt of the item with its metadata (one for most probes);
        # `prompt`: the first one's text; `wording`: 0 = the study's own (with --wordings)
        "items": [
            {
                "item": i.key,
                **({"wording": wording} if several else {}),
                "prompt": i.prompt,
                **i.metadata,
                "prompts": i.prompts_json() or [{"text": i.prompt, "metadata": {}}],
            }
            for wording, i in listed
        ],
    }
    lines = []
    for wording, i in listed:
        lines.append(f"{i.key}\t{f'wording {wording}' + chr(9) if several else ''}{i.prompt}")
        lines += [f"  prompt {n + 1}\t{p.text}" for n, p in enumerate(i.prompts) if n]
    _emit(args, payload, "\n".join(lines))
    return 0


def cmd_models(args) -> int:
    from gbdesk.engine.http import with_endpoints
    from gbdesk.workflows.models import list_models

    with _open_store(args.db, writes=bool(args.add)) as store:
        for path in args.add or []:
            _add_model(store, path)
        models = with_endpoints(list_models(store), store)
    _emit(args, {"models": models}, "\n".join(_model_line(m) for m in models))
    return 0


def _add_model(store, spec: str) -> None:
    """`models --add`: a GGUF file (hashed), or an endpoint ``URL#MODEL`` (a preset name
    for the URL too), connected to and checked for what it can do."""
    from gbdesk.engine.http import (
        ENDPOINT_PRESETS,
        check_capabilities,
        parse_endpoint_spec,
    )
    from gbdesk.workflows.runs import resolve_model

    url, sep, model = spec.partition("#")
    if sep and url.strip().lower() in ENDPOINT_PRESETS:
        spec = f"{ENDPOINT_PRESETS[url.strip().lower()][1]}#{model}"
    if parse_endpoint_spec(spec) is None:
        resolve_model(store, spec)
        return
    row = resolve_model(store, spec)
    check_capabilities(store, row)


def _model_line(m: dict[str, Any]) -> str:
    if m.get("endpoint"):
        from gbdesk.engine.http import capability_words

        key = f"${m['api_key_env']}, " if m.get("api_key_env") else ""
        found = m.get("capabilities")
        marks = {True: "yes", False: "no", None: "could not tell"}
        can = (
            "".join(
                f"\n    {what}: {marks[ok]}" + (f" — {why}" if why else "")
                for what, ok, why in capability_words(found)
            )
            + f"\n    (checked {str(found.get('checked_at', '?'))[:16].replace('T', ' ')} UTC)"
            if found
            else f"\n    what it can do: not checked yet (gbdesk models --add {m['path']})"
        )
        return (
            f"{m['name']}\n    {m['url']}\n    OpenAI-compatible endpoint · model "
            f"{m['endpoint_model']} · {m['concurrency']} concurrent request(s) · API key from "
            f"{key}$GBDESK_API_KEY or the keyring (never stored){can}"
        )
    return (
        f"{m['name']}\n    {m['path']}\n    {m.get('architecture') or '?'} · "
        f"{m.get('parameters_label') or '?'} params · {m.get('quantization') or '?'} · "
        f"ctx {m.get('context_length') or '?'} · chat template: "
        f"{'yes' if m.get('has_chat_template') else 'no (completion mode)'} · "
        f"{m.get('size_label') or ''} · needs ≈{m.get('memory_label') or '?'}"
        + (f"\n    ! {m['error']}" if m.get("error") else "")
    )
