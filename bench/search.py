"""memory:search latency over HTTP at 10,000 claims, with memory:query on the same data
as the in-run baseline.

Starts `jnh serve` (a temporary data directory, a free loopback port, waitress, the
embedder of --embedder: `minilm`, the int8 all-MiniLM-L6-v2 `jnh serve` uses by
default) and writes --claims short household claims into one subject scope through
memory:commit (500 per commit, so the server embeds them as it would any write): who is
who, appointments, preferences, allergies, schools, pharmacies, pets and plans, from a
fixed seed; every type, 1 in 12 sensitive (health, finances, minors), 1 in 10 with a
validUntil in the coming weeks. Then one keep-alive connection sends --requests rounds
of, in turn: POST .../memory:search (the defaults: maxItems 5, tokenBudget 300),
POST .../memory:query (semantic section, HYBRID, topK 5: the same retrieval without the
eligibility filter and the rendering) and GET /v1/caller (an authenticated route doing no
work: the floor of a request). Queries are short messages naming things the claims hold,
one in four with a typo. Client wall time per request, after 20 untimed rounds; and the
server's own split of a search (Server-Timing: the query's embedding as far as the search
waited for it, since the word searches run while the query is embedded; then the rest
of the search and the rendering), so a miss says where the time goes.

Target (issue 17): memory:search p50 <= 10 ms over HTTP at 10k claims.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import time
from typing import Any

from _common import machine_line, percentile, table
from _serve import jnh_serve

SCOPE = "family.bench"
TARGET_P50_MS = 10.0
COMMIT_BATCH = 500
WARMUP_ROUNDS = 20

NAMES = [
    "Sam", "Mia", "Leo", "Ava", "Noah", "Zoe", "Eli", "Ivy", "Max", "Ruby", "Theo", "Nina",
    "Omar", "Lena", "Hugo", "Iris", "Jude", "Cleo", "Finn", "Maya", "Otto", "Rosa", "Ezra",
    "Lila", "Abel", "Dora", "Ian", "June", "Kai", "Nora",
]  # fmt: skip
PLACES = [
    "the dentist", "the orthodontist", "the pediatrician", "swimming practice", "piano lessons",
    "the eye doctor", "soccer training", "the school play", "the vet", "ballet class",
    "the barber", "chess club", "the physiotherapist", "karate", "the library",
]  # fmt: skip
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
FOODS = [
    "green tea", "oat milk", "spicy curry", "pancakes", "sushi", "lentil soup", "dark chocolate",
    "strawberries", "peanut butter", "sourdough bread", "black coffee", "mango", "pasta",
]  # fmt: skip
THINGS = [
    "peanuts", "penicillin", "shellfish", "cat hair", "pollen", "latex", "gluten", "eggs",
]  # fmt: skip
PETS = ["a beagle", "two cats", "a parrot", "a goldfish", "a rabbit", "a labrador"]
STREETS = ["Oak Street", "Elm Road", "Maple Avenue", "Harbor Lane", "Hill Road", "Park Way"]
TEMPLATES = [
    ("fact", "normal", "{n} has {p} every {d} at {h}"),
    ("fact", "normal", "{n} goes to {p} on {d} afternoons"),
    ("preference", "normal", "{n} prefers {f} for breakfast"),
    ("preference", "normal", "{n} does not like {f}"),
    ("constraint", "health", "{n} is allergic to {t}"),
    ("directive", "normal", "Remind {n} about {p} the evening before"),
    ("relationship", "normal", "{n} is {m}'s cousin"),
    ("identity", "normal", "{n} likes to be called {n2}"),
    ("fact", "normal", "The family pharmacy is on {s}, near {p}"),
    ("fact", "minors", "{n} is in grade {g} at the school on {s}"),
    ("fact", "finances", "{n} pays the {p} bill on the {g}th of the month"),
    ("fact", "normal", "{n} has {pet} called {n2}"),
    ("fact", "normal", "{n} plans a trip to {s} in week {g}"),
]
QUERIES = [
    "when is {n}'s appointment with {p}",
    "what does {n} like for breakfast",
    "is {n} allergic to anything",
    "where is the pharmacy",
    "what time is {p} on {d}",
    "who is {n}'s cousin",
    "does {n} have a pet",
    "which school does {n} go to",
]


def main() -> None:
    args = _parse_args()
    load = os.getloadavg()[0]
    print(f"memory:search over HTTP ({machine_line()}, load average {load:.1f}), "
          f"{args.claims:,} claims, embedder {args.embedder}\n")  # fmt: skip
    with jnh_serve(args.server, args.embedder) as served:
        connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=120)
        auth = {"Authorization": f"Bearer {served.token}", "Content-Type": "application/json"}
        started = time.perf_counter()
        _seed(connection, auth, args.claims)
        print(f"seeded {args.claims:,} claims through memory:commit in "
              f"{time.perf_counter() - started:.1f} s\n")  # fmt: skip
        samples, split, found = _time_requests(connection, auth, args.requests)
        connection.close()
    rows = []
    for name, ms in samples.items():
        target = f"<= {TARGET_P50_MS:g} ms" if name.startswith("POST .../memory:search") else ""
        rows.append([name, len(ms), percentile(ms, 50), percentile(ms, 95),
                     sum(ms) / len(ms), target])  # fmt: skip
    print(table(["request", "n", "p50 ms", "p95 ms", "mean ms", "target p50"], rows))
    search_p50 = percentile(samples[SEARCH], 50)
    query_p50 = percentile(samples[QUERY], 50)
    caller_p50 = percentile(samples[CALLER], 50)
    print(
        f"\nmemory:search p50 / memory:query p50 = {search_p50 / query_p50:.2f}; "
        f"memory:search p50 - GET /v1/caller p50 = {search_p50 - caller_p50:.2f} ms"
    )
    print("\nwhere a search's time goes (server side, Server-Timing), p50 / p95 ms:")
    for part, ms in split.items():
        print(f"  {part:<28} {percentile(ms, 50):7.2f} / {percentile(ms, 95):7.2f}")
    print(
        f"\ncandidates per search: mean {sum(found) / len(found):.2f} (maxItems 5); "
        f"{'met' if search_p50 <= TARGET_P50_MS else 'MISSED'}: search p50 "
        f"{search_p50:.2f} ms against <= {TARGET_P50_MS:g} ms"
    )


SEARCH = "POST .../memory:search"
QUERY = "POST .../memory:query (HYBRID, topK 5; baseline)"
CALLER = "GET /v1/caller (floor)"


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=10_000, help="claims in the scope")
    parser.add_argument("--requests", type=int, default=300, help="timed rounds")
    parser.add_argument("--embedder", default="minilm", help="minilm (default) or hashing")
    parser.add_argument("--server", default="waitress", help="JENNAH_HTTP_SERVER of jnh serve")
    return parser.parse_args()


# the claims


def claims(count: int, seed: int = 17) -> list[dict[str, Any]]:
    """`count` distinct short claims as memory:commit chunks."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    while len(out) < count:
        kind, sensitivity, template = rng.choice(TEMPLATES)
        text = template.format(**_fill(rng))
        if text in seen:
            continue
        seen.add(text)
        chunk: dict[str, Any] = {"text": text, "type": kind}
        if sensitivity != "normal":
            chunk["sensitivity"] = sensitivity
        if len(out) % 10 == 0:
            chunk["validUntil"] = f"2099-0{1 + len(out) % 9}-01T00:00:00Z"
        out.append(chunk)
    return out


def _fill(rng: random.Random) -> dict[str, str]:
    return {
        "n": rng.choice(NAMES), "n2": rng.choice(NAMES), "m": rng.choice(NAMES),
        "p": rng.choice(PLACES), "d": rng.choice(DAYS), "f": rng.choice(FOODS),
        "t": rng.choice(THINGS), "s": rng.choice(STREETS), "pet": rng.choice(PETS),
        "h": f"{rng.randint(7, 19)}:{rng.choice(['00', '15', '30', '45'])}",
        "g": str(rng.randint(1, 28)),
    }  # fmt: skip


def queries(count: int, seed: int = 29) -> list[str]:
    """Short messages; one in four with a letter of its longest word swapped (a typo)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        text = rng.choice(QUERIES).format(**_fill(rng))
        if i % 4 == 0:
            text = _typo(text)
        out.append(text)
    return out


def _typo(text: str) -> str:
    word = max(re.findall(r"[a-z]{5,}", text) or ["x"], key=len)
    if len(word) < 5:
        return text
    at = len(word) // 2
    return text.replace(word, word[:at] + word[at + 1] + word[at] + word[at + 2 :], 1)


def _seed(connection: http.client.HTTPConnection, auth: dict[str, str], count: int) -> None:
    chunks = claims(count)
    for start in range(0, count, COMMIT_BATCH):
        body = {"chunks": chunks[start : start + COMMIT_BATCH]}
        status, answer, _ = _post(connection, f"/v1/scopes/{SCOPE}/memory:commit", body, auth)
        assert status == 200, answer


# the requests


def _time_requests(
    connection: http.client.HTTPConnection, auth: dict[str, str], rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], list[int]]:
    samples: dict[str, list[float]] = {SEARCH: [], QUERY: [], CALLER: []}
    split: dict[str, list[float]] = {"embed the query (waited)": [], "search + render": []}
    found: list[int] = []
    texts = queries(rounds + WARMUP_ROUNDS)
    for i, text in enumerate(texts):
        timed = i >= WARMUP_ROUNDS
        started = time.perf_counter()
        status, answer, timing = _post(
            connection, f"/v1/scopes/{SCOPE}/memory:search", {"query": text}, auth
        )
        elapsed = (time.perf_counter() - started) * 1000
        assert status == 200, answer
        if timed:
            samples[SEARCH].append(elapsed)
            parts = _server_timing(timing)
            split["embed the query (waited)"].append(parts["embed"])
            split["search + render"].append(parts["search"])
            found.append(len(json.loads(answer)["candidates"]))
        body = {"semantic": {"queryText": text, "topK": 5}}
        started = time.perf_counter()
        status, answer, _ = _post(connection, f"/v1/scopes/{SCOPE}/memory:query", body, auth)
        elapsed = (time.perf_counter() - started) * 1000
        assert status == 200, answer
        if timed:
            samples[QUERY].append(elapsed)
        started = time.perf_counter()
        connection.request("GET", "/v1/caller", headers=auth)
        response = connection.getresponse()
        response.read()
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status == 200
        if timed:
            samples[CALLER].append(elapsed)
    return samples, split, found


def _post(
    connection: http.client.HTTPConnection, path: str, body: Any, headers: dict[str, str]
) -> tuple[int, bytes, str]:
    connection.request("POST", path, body=json.dumps(body), headers=headers)
    response = connection.getresponse()
    return response.status, response.read(), response.getheader("Server-Timing") or ""


def _server_timing(header: str) -> dict[str, float]:
    """{"embed": ms, "search": ms} of `embed;dur=1.23, search;dur=4.56`."""
    parts = {}
    for item in header.split(","):
        name, _, duration = item.strip().partition(";dur=")
        parts[name] = float(duration)
    return parts


if __name__ == "__main__":
    main()
