"""The budget meter's words and numbers, shared by every face (CLI, server, clients follow it)."""

from __future__ import annotations

from ctx_lsp.core.items import ContextPlan


def format_tokens(n: int) -> str:
    """12345 → ``12.3k``; 120000 → ``120k``; 1048576 → ``1.05M``."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        k = n / 1000
        return f"{k:.0f}k" if k >= 100 or k == int(k) else f"{k:.1f}k"
    return f"{n / 1_000_000:.2f}M"


def encoding_label(encoding: str, exact: bool) -> str:
    short = encoding.removesuffix("_base")
    return short if exact else f"{short} (est.)"


def meter_line(plan: ContextPlan) -> str:
    """``ctx 12.3k / 120k · gpt-4o · cl100k (est.)``"""
    est = plan.estimator
    label = encoding_label(est.encoding, est.exact)
    if est.calibration != 1.0:
        label += f" ×{est.calibration:g}"
    used = format_tokens(plan.totals.tokens)
    return f"ctx {used} / {format_tokens(plan.prompt_budget)} · {plan.model} · {label}"


def bar(used: int, budget: int, width: int = 10) -> str:
    frac = 0.0 if budget <= 0 else min(1.0, used / budget)
    filled = round(frac * width)
    return "▰" * filled + "▱" * (width - filled)
