"""Formation quality: how well a model forms memory, on our own labelled conversations.

Starts `jnh serve` (a fresh data directory, a free loopback port, the formation
model from --model, the embedder from --embedder), and for every case of
bench/formation_quality/ (see its README.md): commits the case's priors with
memory:commit into a fresh agent workspace, forms the conversation with
memory:form at its observedAt, and reads back what is valid afterwards with
memory:inspect (chunks, nodes and edges). Scores are described in
formation_quality_score.py and bench/README.md. Model calls per formation come from
the server's formation log lines; latency is the memory:form request's, end to end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _common import machine_line, percentile, table
from formation_quality_brief import (
    TOP_K,
    BriefScore,
    brief_report,
    misses,
    query_text,
    score_brief,
)
from formation_quality_cases import (
    CASES_DIR,
    COVERAGE_TAGS,
    SPLITS,
    Case,
    CaseError,
    load_cases,
)
from formation_quality_claims import claim_report, read_claims
from formation_quality_score import (
    CaseScore,
    Observed,
    Totals,
    by_decision,
    score_case,
    totals,
)

DEFAULT_JNH = Path(sys.executable).with_name("jnh")
READY_TIMEOUT_S = 180.0
FORM_TIMEOUT_S = 1900.0  # the API's 30-minute ceiling, and a little more
PAGE_SIZE = 1000


def main() -> None:
    args = _parse_args()
    try:
        cases = load_cases(args.cases_dir, args.cases, args.split)
    except CaseError as exc:
        raise SystemExit(f"formation_quality: {exc}") from None
    if not cases:
        raise SystemExit(f"no case matches --cases {args.cases!r} --split {args.split}")
    briefs: list[BriefScore] = []
    with serving(args) as server:
        observed = []
        for i, case in enumerate(cases):
            observed.append(_run_case(server, case, i, len(cases)))
            briefs.append(_brief_case(server, case, observed[-1]))
        calls = server.stop_and_read_model_calls()
        claims = read_claims(server.data_dir / "memory.db")
    for case, seen in zip(cases, observed, strict=True):
        seen.model_calls = calls.get(_workspace(case))
    scores = [score_case(case, seen) for case, seen in zip(cases, observed, strict=True)]
    if all(s.error for s in scores):
        raise SystemExit(f"every formation failed; the first: {scores[0].error}")
    report = _report(args, scores)
    report["claims"] = claim_report(cases, observed, claims)
    report["brief"] = {
        "all": brief_report(briefs),
        **{s: brief_report([b for b in briefs if b.split == s]) for s in SPLITS
           if any(b.split == s for b in briefs)},
    }  # fmt: skip
    report["brief"]["caseScores"] = [_camel(asdict(b)) for b in briefs]
    if args.output == "json":
        print(json.dumps(report, indent=1, ensure_ascii=False))
    else:
        _print(report, scores, args.verbose, briefs)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model",
        default="rules",
        help="JENNAH_FORMATION_MODEL for the server: rules (default), local or vertex "
        "(passed through; the server refuses what it does not know)",
    )
    parser.add_argument(
        "--embedder", default="minilm", help="JENNAH_EMBEDDER: minilm (default) or hashing"
    )
    parser.add_argument(
        "--cases",
        default="*",
        help="a glob over case file names, or several separated by commas (default *)",
    )
    parser.add_argument("--split", choices=[*SPLITS, "all"], default="all")
    parser.add_argument("--cases-dir", type=Path, default=CASES_DIR, help=argparse.SUPPRESS)
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    parser.add_argument("-v", "--verbose", action="store_true", help="also list each case's misses")
    parser.add_argument("--jnh", type=Path, default=DEFAULT_JNH, help="the jnh executable")
    return parser.parse_args()


# The server.


@dataclass
class Server:
    base: str
    token: str
    process: subprocess.Popen[bytes]
    log_path: Path
    data_dir: Path

    def stop_and_read_model_calls(self) -> dict[str, int]:
        """Stop the server, then read its formation log lines: model calls per workspace
        (a line is written as a formation finishes, so only a stopped server has all)."""
        _stop(self.process)
        calls: dict[str, int] = {}
        for line in self.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
            entry = _json_line(line)
            formation = entry.get("formation") if entry else None
            if isinstance(formation, dict) and "scope" in formation:
                calls[str(formation["scope"])] = int(formation.get("modelCalls", 0))
        return calls


@contextlib.contextmanager
def serving(args: argparse.Namespace) -> Iterator[Server]:
    """`jnh serve` on SQLite in a temporary data directory, until the block ends."""
    with tempfile.TemporaryDirectory(prefix="jennah-formation-quality-") as tmp:
        port = _free_port()
        env = _server_env(args)
        log_path = Path(tmp) / "serve.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [str(args.jnh), "serve", "--host", "127.0.0.1", "--port", str(port),
                 "--data-dir", str(Path(tmp) / "data")],
                env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
            )  # fmt: skip
            try:
                base = f"http://127.0.0.1:{port}"
                _wait_ready(process, base, log_path, args.model)
                token = _token(args.jnh, Path(tmp) / "data", env)
                yield Server(base, token, process, log_path, Path(tmp) / "data")
            finally:
                _stop(process)


def _server_env(args: argparse.Namespace) -> dict[str, str]:
    return {
        **os.environ,
        "JENNAH_FORMATION_MODEL": args.model,
        "JENNAH_EMBEDDER": args.embedder,
        "JENNAH_STORE": "sqlite",
        "JENNAH_CONTROL": "sqlite",
        "JENNAH_FORMATION_QUEUE": "local",
    }


def _wait_ready(process: subprocess.Popen[bytes], base: str, log: Path, model: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            said = log.read_text(encoding="utf-8", errors="replace").strip()
            raise SystemExit(
                f"jnh serve refused to start with JENNAH_FORMATION_MODEL={model!r} "
                f"(exit {process.returncode}):\n{said[-2000:]}"
            )
        try:
            with urllib.request.urlopen(f"{base}/openapi.json", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    raise SystemExit(f"jnh serve did not answer within {READY_TIMEOUT_S:g} s")


def _token(jnh: Path, data_dir: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [str(jnh), "auth", "print-token", "--data-dir", str(data_dir)],
        env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.strip()


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _json_line(line: str) -> dict[str, Any] | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


# One case over HTTP.


class RequestFailed(Exception):
    """An API call answered with an error status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _workspace(case: Case) -> str:
    return f"fq-{case.id}"


def _run_case(server: Server, case: Case, index: int, count: int) -> Observed:
    agent = f"{server.base}/v1/agents/{_workspace(case)}"
    prior_ids = _commit_priors(server, agent, case)
    body = {"turns": case.wire_turns, "observedAt": case.observed_at.isoformat()}
    started = time.perf_counter()
    try:
        receipt = _call(server, "POST", f"{agent}/memory:form", body, FORM_TIMEOUT_S)
        error = None
    except RequestFailed as exc:
        receipt, error = {}, str(exc)
    latency_ms = (time.perf_counter() - started) * 1000
    try:
        chunks, nodes, edges = _inspect(server, agent)
    except RequestFailed as exc:
        if error is None or exc.status != 404:
            raise
        chunks, nodes, edges = [], [], []  # a failed first formation creates no workspace
    observed = Observed(receipt, chunks, nodes, edges, prior_ids, latency_ms, error=error)
    _progress(case, index, count, observed)
    return observed


def _commit_priors(server: Server, agent: str, case: Case) -> dict[str, str]:
    if not case.priors:
        return {}
    body = {"chunks": [prior.wire for prior in case.priors]}
    answer = _call(server, "POST", f"{agent}/memory:commit", body)
    ids = list(answer.get("chunkIds", []))
    if len(ids) != len(case.priors):
        raise SystemExit(f"{case.id}: memory:commit wrote {len(ids)} of {len(case.priors)} priors")
    return {prior.label: chunk_id for prior, chunk_id in zip(case.priors, ids, strict=True)}


def _inspect(server: Server, agent: str) -> tuple[list[Any], list[Any], list[Any]]:
    """Everything valid now in the workspace: chunks, nodes and edges, every page."""
    chunks: list[Any] = []
    nodes: list[Any] = []
    edges: list[Any] = []
    token = ""
    while True:
        query = {"graph": "true", "pageSize": str(PAGE_SIZE)} | (
            {"pageToken": token} if token else {}
        )
        page = _call(server, "GET", f"{agent}/memory:inspect?{urllib.parse.urlencode(query)}")
        chunks += page.get("chunks", [])
        nodes += page.get("nodes", [])
        edges += page.get("edges", [])
        token = page.get("nextPageToken", "")
        if not token:
            return chunks, nodes, edges


def _call(
    server: Server, method: str, url: str, body: Any = None, timeout: float = 120.0
) -> dict[str, Any]:
    request = urllib.request.Request(
        url,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
        method=method,
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")
        raise RequestFailed(f"{method} {url} -> {exc.code}: {detail[:500]}", exc.code) from None


def _progress(case: Case, index: int, count: int, observed: Observed) -> None:
    if observed.error:
        outcome = f"FAILED {observed.error[:200]}"
    else:
        outcome = f"{len(observed.candidates)} candidates, {len(observed.formed())} stored"
    print(
        f"[{index + 1}/{count}] {case.id}: {outcome} ({observed.latency_ms:.0f} ms)",
        file=sys.stderr,
    )


# The brief (issue 16's targets), read from the same server after the formation.


_embedder: Any = None


def _brief_case(server: Server, case: Case, observed: Observed) -> BriefScore:
    agent = f"{server.base}/v1/agents/{_workspace(case)}"
    try:
        answer = _call(server, "GET", f"{agent}/memory/brief")
        hits: dict[str, list[str]] = {}
        for fact in case.facts:
            query = query_text(fact)
            if query and query not in hits:
                body = {"semantic": {"queryText": query, "topK": TOP_K, "mode": "HYBRID"}}
                found = _call(server, "POST", f"{agent}/memory:query", body)
                hits[query] = [c["id"] for c in found.get("semantic", {}).get("results", [])]
    except RequestFailed as exc:
        return BriefScore(case.id, case.split, error=str(exc))
    chunks = [c for c in observed.chunks if c.get("status", "active") == "active"]
    score = score_brief(
        case, answer["brief"], int(answer["tokenCount"]), chunks, hits, _vectors(chunks)
    )
    return score


def _vectors(chunks: Sequence[dict[str, Any]]) -> list[list[float]]:
    """MiniLM embeddings of the chunks' texts, for the duplicate measure (whatever
    embedder the server runs: the threshold is MiniLM's)."""
    global _embedder
    if _embedder is None:
        from jennah.adapters.embedding.minilm import MiniLMEmbedder

        _embedder = MiniLMEmbedder(threads=1)
    vectors: list[list[float]] = _embedder.embed_batch([c["text"] for c in chunks])
    return vectors


def _print_brief(brief: dict[str, Any]) -> None:
    print("\nthe brief (issue 16 targets; labelled facts: required, new/revised/known)\n")
    groups = {k: v for k, v in brief.items() if k != "caseScores"}
    rows: list[list[object]] = [
        [name, *(_target(g[key]) for g in groups.values())]
        for name, key in (
            ("reached: brief or top 5 (>= 0.80)", "factsReached"),
            ("  in the brief", "factsInBrief"),
            ("  in the query's top 5", "factsInTop5"),
            ("  held by an active claim", "factsHeld"),
            ("hard constraints in brief (1.0)", "hardInBrief"),
            ("duplicate clusters / active (<= 0.05)", "duplicateClusters"),
        )
    ]
    rows.append(
        ["brief tokens max (<= 2000)", *(str(g["briefTokensMax"]) for g in groups.values())]
    )
    rows.append(["briefs unread", *(str(g["failed"]) for g in groups.values())])
    print(table(["figure", *groups], rows))


def _target(value: dict[str, Any]) -> str:
    met = value.get("met")
    flag = "" if met is None else (" ok" if met else " MISSED")
    return _fraction(value) + flag


def _print_brief_misses(briefs: Sequence[BriefScore]) -> None:
    print("\nbrief misses per case\n")
    for score in briefs:
        lines = [f"  brief unread: {score.error}"] if score.error else misses(score)
        if lines:
            print(score.case_id)
            print("\n".join(lines))


# The report.


def _report(args: argparse.Namespace, scores: Sequence[CaseScore]) -> dict[str, Any]:
    all_totals = totals(scores)
    splits = {s: totals([x for x in scores if x.split == s]) for s in SPLITS}
    tags = sorted({t for s in scores for t in s.tags}, key=_tag_order)
    return {
        "model": args.model,
        "embedder": args.embedder,
        "casesGlob": args.cases,
        "split": args.split,
        "machine": machine_line(),
        "overall": all_totals.rates() | _latency(all_totals),
        "splits": {name: t.rates() | _latency(t) for name, t in splits.items() if t.cases},
        "tags": {tag: totals([s for s in scores if tag in s.tags]).rates() for tag in tags},
        "decisions": {
            name: {k: v for k, v in t.rates().items() if k in _FACT_RATES}
            for name, t in by_decision(scores).items()
        },
        "caseScores": [_camel(asdict(s)) for s in scores],
    }


def _camel(value: Any) -> Any:
    """snake_case keys (dataclass fields) as camelCase, like the rest of the report."""
    if isinstance(value, dict):
        return {re.sub(r"_([a-z])", lambda m: m[1].upper(), k): _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


_FACT_RATES = ("factRecall", "decisionAccuracy", "attributionAccuracy")


def _tag_order(tag: str) -> tuple[int, str]:
    return (COVERAGE_TAGS.index(tag), tag) if tag in COVERAGE_TAGS else (len(COVERAGE_TAGS), tag)


def _latency(total: Totals) -> dict[str, Any]:
    samples = total.latencies_ms
    return {
        "latencyMsP50": percentile(samples, 50) if samples else None,
        "latencyMsP95": percentile(samples, 95) if samples else None,
    }


_SHORT = ("recall", "decision", "attribution", "spurious", "empty", "structure")
_FIGURES = (
    ("fact recall", "factRecall"),
    ("decision accuracy", "decisionAccuracy"),
    ("attribution accuracy", "attributionAccuracy"),
    ("spurious-write rate", "spuriousWriteRate"),
    ("empty-case accuracy", "emptyCaseAccuracy"),
    ("structure accuracy", "structureAccuracy"),
)


def _print(
    report: dict[str, Any],
    scores: Sequence[CaseScore],
    verbose: bool,
    briefs: Sequence[BriefScore],
) -> None:
    overall = report["overall"]
    print(
        f"formation quality: --model {report['model']} --embedder {report['embedder']}, "
        f"{overall['cases']} cases ({report['machine']})\n"
    )
    groups = {"all": overall, **report["splits"]}
    rows: list[list[object]] = [[name, *(_fraction(g[key]) for g in groups.values())]
                                for name, key in _FIGURES]  # fmt: skip
    for name, key in (
        ("forbidden terms stored", "forbiddenTermsStored"),
        ("injected attributes stored", "injectedAttributesStored"),
        ("formations failed", "failed"),
    ):
        rows.append([name, *(str(g[key]) for g in groups.values())])
    rows.append(["model calls per formation", *(_mean(g) for g in groups.values())])
    rows.append(["latency p50 / p95 ms", *(_p50_p95(g) for g in groups.values())])
    print(table(["figure", *groups], rows))
    print("\nper tag (coverage tags first)\n")
    print(table(["tag", "cases", *_SHORT], _tag_rows(report["tags"])))
    print("\nper decision label (labelled facts, optional ones aside)\n")
    decision_rows = [
        [name, *(_fraction(d[key]) for key in _FACT_RATES)]
        for name, d in report["decisions"].items()
    ]
    print(table(["label", "recall", "decision", "attribution"], decision_rows))
    claims = report["claims"]
    print(f"\nclaim fields of formed chunks: type accuracy {_fraction(claims['typeAccuracy'])}")
    for name, counts in claims["distribution"].items():
        print(f"  {name}: {counts}")
    print(f"  sensitivity against labels: {claims['sensitivity']}")
    _print_brief(report["brief"])
    if verbose:
        _print_misses(scores)
        _print_brief_misses(briefs)


def _tag_rows(tags: dict[str, Any]) -> list[list[object]]:
    return [
        [tag, t["cases"], *(_fraction(t[key]) for _, key in _FIGURES)] for tag, t in tags.items()
    ]


def _fraction(value: dict[str, Any]) -> str:
    if value["rate"] is None:
        return "-"
    return f"{value['rate']:.3f} ({value['count']}/{value['of']})"


def _mean(group: dict[str, Any]) -> str:
    value = group["modelCallsPerFormation"]
    return "-" if value is None else f"{value:.2f}"


def _p50_p95(group: dict[str, Any]) -> str:
    if group.get("latencyMsP50") is None:
        return "-"
    return f"{group['latencyMsP50']:.0f} / {group['latencyMsP95']:.0f}"


def _print_misses(scores: Sequence[CaseScore]) -> None:
    print("\nmisses per case\n")
    for score in scores:
        lines = [f"  formation failed: {score.error}"] if score.error else []
        for fact in score.facts:
            wrong = [
                name
                for name, ok in (
                    ("not recalled", fact.recalled),
                    ("decision", fact.decided),
                    ("attribution", fact.attributed),
                )
                if ok is False
            ]
            if wrong:
                got = ", ".join(d.removeprefix("MEMORY_DECISION_").lower() for d in fact.got)
                lines.append(
                    f"  {fact.terms} ({fact.decision}, {fact.speaker}): {', '.join(wrong)}"
                    f"; candidates: {got or 'none'}"
                )
        lines += [f"  spurious: {text!r}" for text in score.spurious]
        lines += [f"  forbidden: {hit}" for hit in score.forbidden]
        lines += [f"  injected attribute: {hit}" for hit in score.injected]
        if score.empty_ok is False:
            lines.append("  empty case wrote memory")
        if score.structure_ok is False:
            lines.append("  structure not as labelled")
        if lines:
            print(score.case_id)
            print("\n".join(lines))


if __name__ == "__main__":
    main()
