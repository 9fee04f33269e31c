"""Terminal output for the CLI: the plan tree and the indexing progress bar (rich).

Colour only when stdout is a terminal; plain text otherwise, so output pipes and diffs cleanly.
"""

from __future__ import annotations

import sys

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ctx_lsp.core.items import ContextPlan, PlanItem
from ctx_lsp.core.meter import bar, format_tokens, meter_line
from ctx_lsp.engine import Engine, PlanOutcome

EXCLUDED_SHOWN = 8
INCLUDED_SHOWN = 15
DETAIL_CHARS = 90
REASON_STYLE = {
    "required": "bold cyan",
    "latest_user": "bold cyan",
    "pinned": "magenta",
    "recent": "blue",
    "relevant": "green",
    "scaffold": "cyan",
    "summary": "blue",
}


def _console() -> Console:
    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 120)


def _where(item: PlanItem) -> str:
    if item.path and item.range:
        return f"  {item.path}:{item.range.start.line + 1}-{item.range.end.line + 1}"
    if item.path:
        return f"  {item.path}"
    return ""


def _line(item: PlanItem, included: bool) -> str:
    mark = "[green]✓[/]" if included else "[red]✗[/]"
    style = REASON_STYLE.get(item.reason, "yellow") if included else "red"
    text = item.detail or ""
    if len(text) > DETAIL_CHARS:
        text = text[: DETAIL_CHARS - 1] + "…"
    detail = f" [dim]· {escape(text)}[/]" if text else ""
    return (
        f"  {mark} {escape(item.title)}[dim]{escape(_where(item))}[/]  "
        f"[bold]{item.tokens:,}[/] tok  [{style}]{item.reason}[/]{detail}"
    )


def print_tree(outcome: PlanOutcome, *, show_all: bool = False) -> None:
    print_plan(outcome.result.plan, show_all=show_all)
    t = outcome.timings_ms
    # a question retrieval answered from memory has no split
    split = " · ".join(f"{k} {t[k]:.1f}" for k in ("search", "rank", "items") if k in t)
    _console().print(
        f"\n[dim]framing {outcome.result.plan.totals.framing} tok · retrieval {t.get('retrieval', 0):.1f} ms"
        f"{f' ({split})' if split else ''} · plan {t.get('plan', 0):.1f} ms[/]"
    )


def print_plan(plan: ContextPlan, *, show_all: bool = False) -> None:
    con = _console()
    pct = 100 * plan.totals.tokens / plan.prompt_budget
    colour = "red" if pct >= 95 else "yellow" if pct >= 80 else "green"
    meter = bar(plan.totals.tokens, plan.prompt_budget)
    con.print(f"[bold]{escape(meter_line(plan))}[/]  [{colour}]{meter} {pct:.0f}%[/]")
    con.print(
        f"[dim]plan {plan.plan_id} · mode {plan.mode} · context {format_tokens(plan.context_length)} − "
        f"reply {format_tokens(plan.max_completion_tokens)} − buffer {format_tokens(plan.safety_buffer)} "
        f"= budget {format_tokens(plan.prompt_budget)} · {plan.totals.items} in, {plan.totals.excluded} out[/]"
    )
    for note in plan.notes:
        con.print(f"[yellow]note:[/] {escape(note)}")
    for section in plan.sections:
        con.print(
            f"\n[bold]{section.name}[/]  {format_tokens(section.used)} / {format_tokens(section.budget)}"
            f"  [dim]{section.count} included, {section.excluded} excluded[/]"
        )
        included = [i for i in plan.included if i.section == section.name]
        for item in included if show_all else included[:INCLUDED_SHOWN]:
            con.print(_line(item, True))
        if not show_all and len(included) > INCLUDED_SHOWN:
            rest = included[INCLUDED_SHOWN:]
            con.print(
                f"  [dim]… {len(rest)} more included ({format_tokens(sum(i.tokens for i in rest))} tok); "
                "--all lists them[/]"
            )
        excluded = [i for i in plan.excluded if i.section == section.name]
        shown = excluded if show_all else excluded[:EXCLUDED_SHOWN]
        for item in shown:
            con.print(_line(item, False))
        if len(excluded) > len(shown):
            reasons: dict[str, int] = {}
            for item in excluded[len(shown) :]:
                reasons[item.reason] = reasons.get(item.reason, 0) + 1
            summary = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
            con.print(f"  [dim]… {len(excluded) - len(shown)} more excluded ({summary}); --all lists them[/]")


SHOWN_SKIPPED = 20
SHOWN_PACKAGES = 8  # packages named in the summary; the rest are counted


def index_with_progress(engine: Engine, *, quiet: bool = False) -> None:
    con = Console(stderr=True, highlight=False)
    if quiet or not con.is_terminal:
        stats = engine.refresh_index()
    else:
        with Progress(
            TextColumn("indexing"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=con,
            transient=True,
        ) as progress:
            task = progress.add_task("", total=None)

            def report(done: int, total: int, rel: str) -> None:
                progress.update(task, completed=done, total=total, description=rel[-50:])

            stats = engine.refresh_index(report)
    totals = engine.index.stats()
    print(
        f"indexed {engine.root}: {totals.files} files, {totals.symbols} symbols, {totals.edges} edges, "
        f"{totals.tokens:,} tokens in {stats.seconds:.2f} s "
        f"({stats.files_indexed} parsed, {stats.files_unchanged} unchanged, {stats.files_removed} removed, "
        f"{stats.files_skipped} skipped)"
    )
    if len(totals.languages) > 1:
        print("  " + ", ".join(f"{lang} {n:,}" for lang, n in totals.languages.items()) + " files")
    packages = engine.index.packages()
    if packages:  # what an import by a package's name reaches in the workspace
        shown = [f"{name} ({folder or '.'})" for name, folder in list(packages.items())[:SHOWN_PACKAGES]]
        more = f" and {len(packages) - SHOWN_PACKAGES} more" if len(packages) > SHOWN_PACKAGES else ""
        print(f"  packages: {', '.join(shown)}{more}")
    # what was left out, and why: files the walk refused (too large, binary, not UTF-8), then
    # files their grammar could not read (minified, over the parse time cap)
    left_out = [*stats.skipped, *stats.errors]
    for line in left_out[:SHOWN_SKIPPED]:
        print(f"  skipped {line}", file=sys.stderr)
    if len(left_out) > SHOWN_SKIPPED:
        print(f"  … and {len(left_out) - SHOWN_SKIPPED} more skipped", file=sys.stderr)
