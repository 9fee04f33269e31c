"""The commands of `ctx-lsp` (listed in the package's docstring): a parser, and one function
per command that turns its options into the engine's requests and prints the answer."""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import sys
from pathlib import Path
from typing import NoReturn

import msgspec

from ctx_lsp import __version__, errors
from ctx_lsp.core.conversation import ConversationError, parse_messages
from ctx_lsp.engine import Engine, UserError

EXIT_USER_ERROR = 2
EXIT_OVERFLOW = 3
CLI_SESSION = "cli"  # plans made from the command line are kept under this session


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of tokens, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {value}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of tokens, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


class _Parser(argparse.ArgumentParser):
    """One clear line for a usage error, instead of the whole usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USER_ERROR, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ctx-lsp",
        description="Decide what goes into an AI assistant's prompt under a hard token budget, and explain why.",
    )
    parser.add_argument("--version", action="version", version=f"ctx-lsp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "plan",
        help="plan context for a question over a workspace",
        description="Plan the context for one model call and print the budget meter and the "
        "include/exclude tree (or the plan as JSON, or the assembled prompt).",
    )
    p.add_argument(
        "workspace", type=Path, help="a folder of code: Python, Rust, TypeScript, JavaScript, Go, Java, C, C++"
    )
    q = p.add_mutually_exclusive_group()
    q.add_argument("--query", "-q", help="the user's question")
    q.add_argument("--query-file", type=Path, help="read the question from a file")
    p.add_argument("--format", choices=["tree", "json", "prompt"], default="tree", help="output (default: tree)")
    p.add_argument(
        "--render", choices=["openai", "anthropic", "text"], default="text", help="prompt shape for --format prompt"
    )
    p.add_argument("--model", help="model name (see `ctx-lsp models`); default from config, else gpt-4o")
    p.add_argument("--context-length", type=_positive, help="override the model's context length")
    p.add_argument("--max-completion-tokens", type=_positive, help="tokens reserved for the reply")
    p.add_argument("--safety-buffer", type=_non_negative, help="tokens kept free as a margin (default 2048)")
    p.add_argument("--rag-budget", type=_non_negative, metavar="N", help="fix the retrieval section to N tokens")
    p.add_argument("--mode", choices=["off", "light", "heavy"], help="retrieval mode (default light)")
    p.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="QUALIFIED.NAME",
        help="pin a symbol (repeatable); FILE:NAME for one of several of a name (tools/server.c:usage)",
    )
    p.add_argument("--conversation", type=Path, help="JSON list of OpenAI-style chat messages")
    p.add_argument("--system-prompt", type=Path, help="file with the system prompt")
    p.add_argument("--all", action="store_true", help="tree: list every excluded item")
    p.add_argument("--no-index-refresh", action="store_true", help="use the stored index as it is")

    i = sub.add_parser("index", help="build or refresh the workspace index", description="Index a workspace.")
    i.add_argument("workspace", type=Path, help="the folder to index")
    i.add_argument("--quiet", action="store_true", help="print only the summary line")

    sub.add_parser("models", help="list the built-in models and their budgets")

    r = sub.add_parser(
        "report",
        help="estimator accuracy and plan statistics; --html: the gateway's savings as a page with charts",
        description="Estimate vs actual input tokens per model (from usage reports) and plan statistics. "
        "With --html: one self-contained HTML page (inline SVG, nothing loaded from the network, light and "
        "dark) of the requests through the gateway — per session, a chart of each request's input tokens "
        "(what the client sent vs what was forwarded vs the provider's count) and one of its cache share, "
        "each with its numbers in a table; and the totals per session and overall, the same as `ctx-lsp stats`: "
        "what each mechanism saved, and the cost through ctx_lsp vs sending direct. The running gateway "
        "serves the same page at GET /ctx/report. Example: ctx-lsp report --html . -o report.html",
    )
    r.add_argument("workspace", type=Path, nargs="?", default=Path("."), help="the workspace (default: .)")
    r.add_argument("--session", help="only this session (its plans; with --html, its gateway requests)")
    r.add_argument("--html", action="store_true", help="the gateway report as an HTML page (stdout, or -o FILE)")
    r.add_argument("-o", "--output", type=Path, metavar="FILE", help="with --html: write the page to FILE")
    r.add_argument(
        "--reset-calibration",
        nargs="?",
        const="",
        metavar="MODEL",
        help="forget what usage reports taught the estimator (of MODEL, or of every model); the reports stay "
        "for the cost figures. Example: ctx-lsp report . --reset-calibration claude-sonnet-4-5",
    )

    rp = sub.add_parser(
        "replay",
        help="rebuild a stored plan from its stored inputs and check it is identical",
        description="Rebuild a stored plan from its stored inputs; exit 0 when the plan id and bytes are identical.",
    )
    rp.add_argument("plan_id", metavar="PLAN_ID")
    rp.add_argument("--workspace", type=Path, default=Path("."))
    rp.add_argument("--format", choices=["tree", "json"], default="tree")

    g = sub.add_parser(
        "gateway",
        help="an OpenAI- and Anthropic-compatible proxy that puts the plan in your assistant's requests",
        description="Listen for an assistant's model requests (OpenAI Chat Completions and Responses, Anthropic "
        "Messages), plan each under the model's window over WORKSPACE, and forward it to the provider. Point "
        "the assistant at it: ANTHROPIC_BASE_URL=http://127.0.0.1:8787 claude; "
        "OPENAI_BASE_URL=http://127.0.0.1:8787/v1 for OpenAI clients. Settings: the [gateway] table of ctx.toml.",
    )
    g.add_argument("workspace", type=Path, nargs="?", default=Path("."), help="the workspace (default: .)")
    g.add_argument("--listen", metavar="HOST:PORT", help="address to listen on (default 127.0.0.1:8787)")
    g.add_argument(
        "--openai-upstream", metavar="URL", help="as OPENAI_BASE_URL takes it (default https://api.openai.com/v1)"
    )
    g.add_argument(
        "--anthropic-upstream",
        metavar="URL",
        help="as ANTHROPIC_BASE_URL takes it (default https://api.anthropic.com)",
    )
    g.add_argument("--mode", choices=["off", "light", "heavy"], help="retrieval mode (default: the workspace's)")
    g.add_argument("--token", help="a token clients must send as X-Ctx-Token (required off loopback)")
    g.add_argument("--json-log", action="store_true", help="one JSON object per request on stderr")

    st = sub.add_parser(
        "stats",
        help="what the gateway sent, saved and cost, per run and in total",
        description="Requests through the gateway, under a one-line verdict: each run (an assistant's conversation "
        "with its side requests, such as Claude Code's title request) labelled with its start, assistant, model and "
        "the user's first line, and what ctx_lsp added to it or why nothing; then input the client sent vs "
        "forwarded, what each mechanism saved (history shed, old tool results masked, tool outputs shrunk) and what "
        "ctx_lsp's own context cost, the provider's cache share, and the cost through ctx_lsp vs the same requests "
        "sent direct (cache-weighted).",
    )
    st.add_argument("workspace", type=Path, nargs="?", default=Path("."))
    st.add_argument("--session", help="only this session (its requests listed)")
    st.add_argument(
        "--requests", action="store_true", help="list each request: what ctx_lsp added (plan, items) or why not"
    )
    st.add_argument("--json", action="store_true", help="as JSON")

    w = sub.add_parser(
        "wrap",
        help="run an assistant through the gateway: ctx-lsp wrap claude | codex | aider | -- COMMAND",
        description="Run an assistant (claude, codex, aider, or -- any command on the openai / anthropic SDKs) "
        "through the gateway of the current workspace: started on a free loopback port, or joined when "
        "`[gateway] listen` already serves it. The gateway forwards where the assistant would have sent its "
        "requests: ANTHROPIC_BASE_URL, OPENAI_BASE_URL / OPENAI_API_BASE, aider's --openai-api-base, Codex's "
        "model provider (-c overrides, ~/.codex/config.toml), else the [gateway] configuration or the public API; "
        "an upstream it cannot reach is said at once. Codex and Claude Code get the workspace's MCP tools "
        "(expand, get_symbol, search_code …). Its arguments, input, terminal and exit status are its own; "
        "nothing in its configuration files changes. One summary line at exit.",
    )
    w.add_argument("--workspace", type=Path, default=Path("."), help="the workspace (default: .)")
    w.add_argument("--listen", metavar="HOST:PORT", help="where the gateway listens (default: a free loopback port)")
    w.add_argument("--print-env", action="store_true", help="print the settings instead of running the assistant")
    w.add_argument(
        "--openai-upstream",
        metavar="URL",
        help="where OpenAI-API requests go, as OPENAI_BASE_URL takes it (default: the assistant's own, "
        "else https://api.openai.com/v1)",
    )
    w.add_argument(
        "--anthropic-upstream",
        metavar="URL",
        help="where Anthropic-API requests go, as ANTHROPIC_BASE_URL takes it (default: the assistant's own, "
        "else https://api.anthropic.com)",
    )
    w.add_argument("assistant", metavar="ASSISTANT", help="claude, codex, aider, or -- followed by a command")
    w.add_argument("args", nargs=argparse.REMAINDER, help="the assistant's own arguments")

    sl = sub.add_parser(
        "statusline",
        help="one line for Claude Code's status line: budget, cache warm or cold, saved so far",
        description="Print one line for Claude Code's statusLine command (it passes its session as JSON on stdin): "
        "the conversation's input / budget, whether the provider's prompt cache is warm (time left) or cold, "
        "and what ctx_lsp saved so far, cache-weighted against sending direct. `ctx-lsp wrap claude` sets it up.",
    )
    sl.add_argument("--workspace", type=Path, help="the workspace (default: the cwd Claude Code passes)")

    e = sub.add_parser(
        "expand",
        help="a tool output the gateway shortened, whole or the lines you need",
        description="Print a tool output that the gateway shortened in a conversation (its marker names the id: "
        "[ctx_lsp shortened this … ctx-lsp expand g-…]): whole, or with --match only the lines that match, "
        "numbered, with --context lines around each, as grep -n -C prints them. For agents without the MCP tools: "
        "any shell tool can run it.",
    )
    e.add_argument("id", help="the id in the marker (g-…)")
    e.add_argument("workspace", type=Path, nargs="?", default=Path("."), help="the workspace (default: .)")
    e.add_argument("--match", metavar="REGEX", help="only the lines matching this (case-insensitive)")
    e.add_argument("--context", type=int, default=3, metavar="N", help="lines around each match (default 3)")
    e.add_argument("--start-line", type=int, metavar="N", help="first line (1-based)")
    e.add_argument("--max-lines", type=int, metavar="N", help="at most this many lines")

    m = sub.add_parser(
        "mcp",
        help="an MCP server (stdio) giving agents the workspace's symbols, search, plans and pins as tools",
        description="Serve the Model Context Protocol on stdin/stdout over WORKSPACE: get_symbol, search_code, "
        "plan_context, pin, unpin, list_pins, show_budget, list_capsules and references. Register it with your "
        "agent, e.g. `claude mcp add ctx -- ctx-lsp mcp .` (see README). Logs go to stderr.",
    )
    m.add_argument("workspace", type=Path, nargs="?", default=Path("."), help="the workspace (default: .)")
    m.add_argument(
        "--session",
        default=None,
        metavar="NAME",
        help="the session whose pins and plans the tools use (default: the editor's, so pins are shared)",
    )

    t = sub.add_parser(
        "trust",
        help="let this workspace's own settings send data off the machine or open a port ([llm], gateway listen)",
        description="A workspace's ctx.toml (or [tool.ctx-lsp]) may not, on its own, set [llm], summarizer = "
        '"llm", allow_encoding_download or the gateway\'s listen and token: a cloned repository would decide '
        "where your data and keys go. Trust the folder with its settings file as it is now; an edit to the "
        "file needs trusting again. Recorded in ~/.config/ctx-lsp/trusted.json ($XDG_CONFIG_HOME).",
    )
    t.add_argument("workspace", type=Path, nargs="?", default=Path("."), help="the workspace (default: .)")
    t.add_argument("--forget", action="store_true", help="trust it no more")

    s = sub.add_parser("serve", help="run the language server (stdio by default)")
    s.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    s.add_argument(
        "--max-message-bytes",
        type=_positive,
        metavar="N",
        help="refuse (and skip) protocol messages longer than N bytes (default 268435456, 256 MB)",
    )
    return parser


def _read_text(path: Path, what: str) -> str:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise UserError(f"cannot read {what} {path}: {err.strerror or err}") from None
    if b"\0" in data[:8192]:
        raise UserError(f"{what} {path} is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UserError(f"{what} {path} is not UTF-8 text (byte {err.start})") from None


def _load_conversation(path: Path):
    text = _read_text(path, "conversation file")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise UserError(f"conversation file {path} is not valid JSON: {err.msg} (line {err.lineno})") from None
    if isinstance(raw, dict) and isinstance(raw.get("messages"), list):
        raw = raw["messages"]
    try:
        return parse_messages(raw)
    except ConversationError as err:
        raise UserError(f"conversation file {path}: {err}") from None


def _cmd_plan(args: argparse.Namespace) -> int:
    from ctx_lsp.cli.render import print_tree
    from ctx_lsp.engine import BudgetOverrides, Engine, PlanRequest, SessionContext

    query = args.query
    if args.query_file is not None:
        query = _read_text(args.query_file, "query file")
    conversation = _load_conversation(args.conversation) if args.conversation else []
    system_prompt = _read_text(args.system_prompt, "system prompt file") if args.system_prompt else None
    if not (query or "").strip() and not conversation:
        raise UserError("give a question with --query or --query-file (or a --conversation ending with one)")
    engine = Engine(args.workspace)
    try:
        for message in engine.config_messages:
            print(f"ctx-lsp: {message}", file=sys.stderr)
        if not args.no_index_refresh:
            stats = engine.refresh_index()
            for err in stats.errors[:5]:
                print(f"ctx-lsp: skipped {err}", file=sys.stderr)
        recovered = engine.index.take_recovered()
        if recovered:
            print(f"ctx-lsp: {recovered}", file=sys.stderr)
        outcome = engine.plan(
            PlanRequest(
                query=query or "",
                model=args.model,
                budget=msgspec.convert(args, BudgetOverrides, from_attributes=True),
                mode=args.mode,
                pins=args.pin,
                system_prompt=system_prompt,
            ),
            SessionContext(conversation=conversation),  # a conversation given whole, as a session's
        )
        _record(engine, outcome, query or "")
    finally:
        engine.close()
    out = sys.stdout
    if args.format == "json":
        out.write(msgspec.json.encode(outcome.result.plan).decode() + "\n")
    elif args.format == "prompt":
        rendered = outcome.render(args.render)
        if args.render == "text":
            out.write(rendered.text or "")
        else:
            out.write(msgspec.json.encode(rendered).decode() + "\n")
    else:
        print_tree(outcome, show_all=args.all)
    return 0


def _record(engine, outcome, query: str) -> None:
    """Keep the plan (and its inputs) through the sessions engine, under the CLI's session, so
    `ctx-lsp replay` can rebuild it. The caller closes ``engine``."""
    from ctx_lsp.sessions import SessionEngine

    sessions = SessionEngine(engine)
    try:
        sessions.keep_plan(CLI_SESSION, query, outcome)
    except errors.Unavailable as err:  # the plan is still printed; only its record for replay is missing
        print(f"ctx-lsp: the plan is not kept for replay: {err}", file=sys.stderr)
    finally:
        sessions.store.close()


def _cmd_index(args: argparse.Namespace) -> int:
    from ctx_lsp.cli.render import index_with_progress
    from ctx_lsp.engine import Engine

    engine = Engine(args.workspace)
    try:
        index_with_progress(engine, quiet=args.quiet)
    finally:
        engine.close()
    return 0


def _cmd_models(_: argparse.Namespace) -> int:
    from ctx_lsp.core.models import BUILTIN_MODELS

    print(f"{'model':<22} {'provider':<10} {'context':>10} {'max out':>8}  encoding      calibration")
    for m in BUILTIN_MODELS:
        enc = m.encoding + ("" if m.native else " (approx.)")
        print(f"{m.name:<22} {m.provider:<10} {m.context_length:>10,} {m.max_output:>8,}  {enc:<22} ×{m.calibration}")
    return 0


def _session_engine(workspace: Path):
    from ctx_lsp.engine import Engine
    from ctx_lsp.sessions import SessionEngine

    return SessionEngine(Engine(workspace))


def _cmd_report(args: argparse.Namespace) -> int:
    from ctx_lsp.memory.telemetry import estimator_accuracy, plan_stats, session_feedback

    if args.html:
        from ctx_lsp.cli.stats import html_report

        return html_report(args.workspace, args.session, args.output)
    if args.output is not None:
        raise UserError("-o writes the HTML report: add --html")
    engine = _session_engine(args.workspace)
    try:
        engine.require_memory()
        if args.reset_calibration is not None:
            forgotten = engine.store.reset_calibration(args.reset_calibration or None)
            print(f"calibration reset: {forgotten} usage reports no longer calibrate the estimator")
        accuracy = estimator_accuracy(engine.store)
        calibrated = [(m, engine.store.usage_stats(m)) for m in engine.store.calibrated_models()]
        stats = plan_stats(engine.store, args.session)
        feedback = session_feedback(engine.store, args.session) if args.session else []
    finally:
        engine.close()
    print("estimator accuracy (estimate vs actual input tokens; + means the estimate was low)")
    if not accuracy:
        print("  no usage reports yet: clients send them with ctx/reportUsage after each model call")
    else:
        print(f"  {'model':<24} {'reports':>7} {'median error':>13} {'worst error':>12} {'actual/est':>11}")
        for a in accuracy:
            print(
                f"  {a.model:<24} {a.reports:>7} {a.median_error_pct:>+12.1f}% {a.worst_error_pct:>+11.1f}% "
                f"{a.median_ratio:>11.3f}"
            )
    print("calibration (factor = median of actual/estimate over the latest reports, clamped to 0.5-2.0)")
    if not calibrated:
        print("  none: the registry's factors are used")
    for model, usage in calibrated:
        print(f"  {model:<24} ×{usage.calibration} from the latest {usage.window} of {usage.reports} reports")
    print("plans" + (f" of session {args.session}" if args.session else ""))
    if stats is None:
        print("  no plans stored yet")
    else:
        print(
            f"  {stats.plans} plans in {stats.sessions} sessions · median {stats.median_tokens:,.0f} tokens "
            f"({stats.median_fill_pct:.1f}% of the budget) · plan {stats.median_plan_ms:.1f} ms median, "
            f"{stats.p90_plan_ms:.1f} ms p90 · retrieval {stats.median_retrieval_ms:.1f} ms median"
        )
        if stats.excluded_by_reason:
            reasons = ", ".join(f"{n} {r}" for r, n in stats.excluded_by_reason.items())
            print(f"  excluded: {reasons}")
    if args.session:
        print(f"feedback record of session {args.session}, turn by turn")
        if not feedback:
            print("  no plans in this session")
        for t in feedback:
            usage = "no usage report"
            if t.estimate is not None and t.actual is not None:
                usage = f"estimate {t.estimate:,} / actual {t.actual:,} ({t.actual - t.estimate:+,})"
            print(f"  turn {t.turn} · {t.plan_id} · task {t.cluster or '-'} · {usage}")
            print(f"    asked: {t.query[:100]}")
            print(f"    included {len(t.included)}: {'; '.join(t.included[:6])}{' …' if len(t.included) > 6 else ''}")
            if t.excluded_by_reason:
                print("    excluded: " + ", ".join(f"{n} {r}" for r, n in t.excluded_by_reason.items()))
            for line in t.excluded_rag[:3]:
                print(f"      left out: {line}")
            for line in t.tools:
                print(f"    tool {line}")
            for line in t.reflections:
                print(f"    {line}")
    return 0


def _cmd_replay(args: argparse.Namespace) -> int:
    from ctx_lsp.cli.render import print_plan

    engine = _session_engine(args.workspace)
    try:
        engine.require_memory()
        identical, result = engine.replay(args.plan_id)
    finally:
        engine.close()
    if args.format == "json":
        sys.stdout.write(msgspec.json.encode(result.plan).decode() + "\n")
    else:
        print_plan(result.plan)
        verdict = "identical: same plan id, same bytes" if identical else "DIFFERENT from the stored plan"
        print(f"replay of {args.plan_id}: {verdict}")
    return 0 if identical else 1


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        from ctx_lsp.server.app import serve
    except ImportError:
        raise UserError("the language server is not available in this build") from None
    return serve(tcp=args.tcp, max_message_bytes=args.max_message_bytes)


def _cmd_gateway(args: argparse.Namespace) -> int:
    from ctx_lsp.gateway.options import resolve
    from ctx_lsp.gateway.run import serve_gateway

    engine = Engine(args.workspace)
    options = resolve(
        engine.config.gateway,
        workspace=engine.file_config.gateway,
        listen=args.listen,
        openai_upstream=args.openai_upstream,
        anthropic_upstream=args.anthropic_upstream,
        mode=args.mode,
        token=args.token,
        json_log=args.json_log,
    )
    return serve_gateway(args.workspace, options, engine)


def _cmd_stats(args: argparse.Namespace) -> int:
    from ctx_lsp.cli.stats import stats

    return stats(args.workspace, args.session, args.json, requests=args.requests)


def _cmd_wrap(args: argparse.Namespace) -> int:
    from ctx_lsp.cli.wrap import run

    assistant, rest = args.assistant, list(args.args)
    raw = args.argv[args.argv.index("wrap") + 1 :] if "wrap" in args.argv else []
    before = raw[: raw.index(assistant)] if assistant in raw else raw
    if "--" in before:  # argparse took the "--" that starts the command
        assistant, rest = "--", [assistant, *rest]
    return run(
        assistant,
        rest,
        args.workspace,
        args.print_env,
        args.listen,
        openai_upstream=args.openai_upstream,
        anthropic_upstream=args.anthropic_upstream,
    )


def _cmd_statusline(args: argparse.Namespace) -> int:
    from ctx_lsp.cli.statusline import main as statusline

    return statusline(args.workspace)


def _cmd_expand(args: argparse.Namespace) -> int:
    from ctx_lsp.sessions import SessionEngine

    if args.context < 0:
        raise UserError("--context must be 0 or more")
    for flag, value in (("--start-line", args.start_line), ("--max-lines", args.max_lines)):
        if value is not None and value < 1:
            raise UserError(f"{flag} must be 1 or more")
    sessions = SessionEngine(Engine(args.workspace))
    try:
        _, part, _ = sessions.expand(
            args.id, start_line=args.start_line, max_lines=args.max_lines, match=args.match, context=args.context
        )
    finally:
        sessions.close()
    print(part.text)
    return 0


def _cmd_trust(args: argparse.Namespace) -> int:
    from ctx_lsp.config import NEEDS_TRUST
    from ctx_lsp.trust import record, trust_file
    from ctx_lsp.workspace.files import PathRefused, read_workspace_file

    root = args.workspace.resolve()
    if not root.is_dir():
        raise UserError(f"workspace {args.workspace} is not a directory")
    if args.forget:
        record(root, None)
        print(f"{root}: no longer trusted ({trust_file()})")
        return 0
    for name in ("ctx.toml", "pyproject.toml"):
        try:
            data = read_workspace_file(root, name, 1024 * 1024)
        except (OSError, PathRefused):
            continue
        record(root, data)
        settings = ", ".join(f"{t}.{k}" if t else k for t, k, _ in NEEDS_TRUST)
        print(f"{root}: trusted with its {name} as it is now ({trust_file()}); it may set {settings}")
        return 0
    raise UserError(f"{root} has no ctx.toml or pyproject.toml to trust")


def _cmd_mcp(args: argparse.Namespace) -> int:
    from ctx_lsp.mcp.run import serve_mcp
    from ctx_lsp.sessions import DEFAULT_SESSION

    if args.session is not None and not args.session.strip():
        raise UserError("--session needs a name")
    return serve_mcp(Engine(args.workspace), args.session or DEFAULT_SESSION)


def _report_crashes() -> None:
    """A crash in native code (SQLite, tiktoken, the file watcher) prints every thread's Python
    stack on stderr, for a bug report, instead of a silent exit code."""
    with contextlib.suppress(Exception):  # stderr may have no file descriptor (captured)
        if not faulthandler.is_enabled():
            faulthandler.enable()


def main(argv: list[str] | None = None) -> int:
    _report_crashes()
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USER_ERROR
    handler = {
        "plan": _cmd_plan,
        "index": _cmd_index,
        "models": _cmd_models,
        "report": _cmd_report,
        "replay": _cmd_replay,
        "serve": _cmd_serve,
        "gateway": _cmd_gateway,
        "wrap": _cmd_wrap,
        "stats": _cmd_stats,
        "mcp": _cmd_mcp,
        "trust": _cmd_trust,
        "expand": _cmd_expand,
        "statusline": _cmd_statusline,
    }[args.command]
    try:
        return handler(args)
    except errors.CtxError as err:  # every kind: one line that says what to do
        print(f"ctx-lsp: {err}", file=sys.stderr)
        return EXIT_OVERFLOW if isinstance(err, errors.Overflow) else EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
