"""The suppression rule: how close a candidate must be to a forgotten claim to be
suppressed (`jennah.domain.suppression`: SUPPRESSION_SIMILARITY and SUPPRESSION_GUARD).

Our own labelled set (below, written for this bench): forgotten facts, each with two
paraphrases that must be suppressed (the same fact in other words) and two near-but-
different statements that must not be (the same person and topic, another fact: "Ana is
allergic to peanuts" / "Ana is allergic to shellfish"). Each statement is embedded with
the product's default embedder (`jnh serve`: all-MiniLM-L6-v2, int8,
`adapters/embedding/minilm.py`) and held against its own forgotten fact exactly as
formation does (`suppression.match`: same words, else cosine of the bodies at or above a
threshold and no difference in the guarded kinds of fact-carrying word,
`domain.distinguishing`).

Split, fixed: the cases at even positions of CASES are the TUNE half, the odd ones the
HELD-OUT half (by forgotten fact, so a fact's paraphrases never sit in both). The rule
(which kinds of fact-carrying word must not differ, and for a changed thing the
similarity that still suppresses) and the threshold are chosen on the tune half only:
the highest F1 (ties: the stricter rule, then the higher threshold); the bench prints
both halves for every rule and threshold, then the choice and each error of the code's
rule.

Measured (MiniLM; 52 facts, 104 paraphrases, 104 near-but-different; 26 facts a half):
- cosine alone at 0.80 (the first bound): tune P 0.585 R 0.923, held-out P 0.623 R 0.923;
- chosen: anchors+names at 0.725: tune P 0.754 R 1.000, held-out P 0.833 R 0.962.
The word lists of `domain.distinguishing` were written looking at the first 40 cases;
the last 12 were written after that draft and changed the choice: on the first 40 alone
"anchors+names+things" won (tune P 0.881 R 0.925, held-out P 0.943 R 0.825), but on the
12 new facts the things guard lost most paraphrases that swap a noun ("pills" /
"tablets", "grandfather fought" / "was a soldier"), so it is reported and not used.
After seeing the 12, ordinals and "once"/"twice" became number anchors and an opening
capitalised word a name: no half is blind to the word lists; what the split keeps
honest is the choice of rule and threshold. What the chosen rule still suppresses wrongly: a thing swapped ("peanuts"
/ "shellfish" at high cosine), a verb changing the fact ("lives" / "works" in Tokyo, "loves"
/ "hates"), a direction swapped with the same words ("owes their brother" / "brother
owes them").
Also reports the cross-fact false positives: each statement against every OTHER
forgotten fact (highest 0.648, below the bound).

    .venv/bin/python bench/suppression.py [--embedder minilm|hashing]
"""

# ruff: noqa: E501  (the labelled set reads best one case per line)
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

from jennah.bootstrap import build_embedder
from jennah.domain import suppression
from jennah.domain.distinguishing import Difference
from jennah.settings import Settings

# (forgotten fact, paraphrases that must be suppressed, near-but-different that must not)
CASES: list[tuple[str, tuple[str, str], tuple[str, str]]] = [
    ("Ana is allergic to peanuts.",
     ("Ana has a peanut allergy.", "Peanuts give Ana an allergic reaction."),
     ("Ana is allergic to shellfish.", "Ana's brother is allergic to peanuts.")),
    ("The user lives in Tokyo.",
     ("The user's home is in Tokyo.", "The user resides in Tokyo."),
     ("The user lives in Osaka.", "The user works in Tokyo.")),
    ("Mira starts swimming lessons on Tuesdays at 5pm.",
     ("Mira's swimming lessons are on Tuesdays at 5pm.", "On Tuesdays at 5pm Mira has swimming lessons."),
     ("Mira starts piano lessons on Tuesdays at 5pm.", "Mira starts swimming lessons on Thursdays at 5pm.")),
    ("The user's daughter is called Lucia.",
     ("The user has a daughter named Lucia.", "Lucia is the user's daughter."),
     ("The user's niece is called Lucia.", "The user's daughter is called Sofia.")),
    ("The user works as a nurse at St Mary's hospital.",
     ("The user is a nurse at St Mary's hospital.", "The user's job is nursing at St Mary's hospital."),
     ("The user works as a doctor at St Mary's hospital.", "The user works as a nurse at the city clinic.")),
    ("The user prefers dark mode.",
     ("The user likes dark mode better.", "Dark mode is the user's preference."),
     ("The user prefers light mode.", "The user prefers large fonts.")),
    ("Tom's birthday is on March 3.",
     ("Tom was born on March 3.", "Tom celebrates his birthday on March 3."),
     ("Tom's birthday is on May 3.", "Tom's wedding anniversary is on March 3.")),
    ("The user is vegetarian.",
     ("The user does not eat meat.", "The user follows a vegetarian diet."),
     ("The user is vegan.", "The user's partner is vegetarian.")),
    ("The family dog is named Biscuit.",
     ("Biscuit is the family's dog.", "The family's dog is called Biscuit."),
     ("The family cat is named Biscuit.", "The neighbours' dog is named Biscuit.")),
    ("The user takes metformin every morning.",
     ("Every morning the user takes metformin.", "The user's morning medication is metformin."),
     ("The user takes insulin every morning.", "The user takes metformin every evening.")),
    ("The user's car is a blue Toyota Corolla.",
     ("The user drives a blue Toyota Corolla.", "The user owns a blue Corolla made by Toyota."),
     ("The user's car is a red Toyota Corolla.", "The user's car is a blue Honda Civic.")),
    ("Leo goes to Greenfield Primary School.",
     ("Leo attends Greenfield Primary School.", "Leo is a pupil at Greenfield Primary School."),
     ("Leo goes to Greenfield Secondary School.", "Leo's sister goes to Greenfield Primary School.")),
    ("The user's mother lives in Lisbon.",
     ("The user's mum lives in Lisbon.", "The mother of the user resides in Lisbon."),
     ("The user's father lives in Lisbon.", "The user's mother lives in Porto.")),
    ("The user is training for the Berlin marathon in September.",
     ("The user is preparing to run the Berlin marathon in September.", "In September the user will run the Berlin marathon and is training for it."),
     ("The user is training for the London marathon in April.", "The user is training for a triathlon in September.")),
    ("The user banks with Barclays.",
     ("The user's bank is Barclays.", "The user has a bank account at Barclays."),
     ("The user banks with HSBC.", "The user works at Barclays.")),
    ("The user's dentist is Dr. Patel.",
     ("Dr. Patel is the user's dentist.", "The user sees Dr. Patel for dental care."),
     ("The user's family doctor is Dr. Patel.", "The user's dentist is Dr. Chen.")),
    ("The user drinks coffee without sugar.",
     ("The user takes coffee with no sugar.", "The user has coffee unsweetened."),
     ("The user drinks tea without sugar.", "The user drinks coffee with oat milk.")),
    ("The user's wife is named Priya.",
     ("Priya is the user's wife.", "The user is married to Priya."),
     ("The user's sister is named Priya.", "The user's wife is named Anika.")),
    ("The user speaks Portuguese fluently.",
     ("The user is fluent in Portuguese.", "The user speaks fluent Portuguese."),
     ("The user speaks Spanish fluently.", "The user is learning Portuguese.")),
    ("The user's rent is 1,400 euros a month.",
     ("The user pays 1,400 euros in rent every month.", "Each month the user's rent costs 1,400 euros."),
     ("The user's mortgage is 1,400 euros a month.", "The user's rent is 900 euros a month.")),
    ("Sam has football practice on Saturday mornings.",
     ("On Saturday mornings Sam has football practice.", "Sam practises football every Saturday morning."),
     ("Sam has basketball practice on Saturday mornings.", "Sam has football practice on Wednesday evenings.")),
    ("The user is afraid of flying.",
     ("The user has a fear of flying.", "Flying scares the user."),
     ("The user is afraid of spiders.", "The user enjoys flying.")),
    ("The user's favourite restaurant is Nando's.",
     ("Nando's is the user's favourite restaurant.", "The user likes Nando's more than any other restaurant."),
     ("The user's least favourite restaurant is Nando's.", "The user's favourite restaurant is Pizza Express.")),
    ("The user has type 2 diabetes.",
     ("The user is diabetic, type 2.", "The user was diagnosed with type 2 diabetes."),
     ("The user has type 1 diabetes.", "The user's father has type 2 diabetes.")),
    ("The user's flight to Rome leaves on June 12.",
     ("The user flies to Rome on June 12.", "On June 12 the user's flight to Rome departs."),
     ("The user's flight to Madrid leaves on June 12.", "The user's flight to Rome leaves on July 12.")),
    ("The user wants reminders sent by SMS.",
     ("The user prefers reminders by text message.", "Send the user reminders via SMS."),
     ("The user wants reminders sent by email.", "The user wants invoices sent by SMS.")),
    ("The user's son Max is 7 years old.",
     ("Max, the user's son, is seven.", "The user's son Max is aged 7."),
     ("The user's son Max is 9 years old.", "The user's nephew Max is 7 years old.")),
    ("The user plays the violin.",
     ("The user is a violinist.", "The user plays violin."),
     ("The user plays the cello.", "The user's daughter plays the violin.")),
    ("The user is allergic to penicillin.",
     ("The user has a penicillin allergy.", "Penicillin causes an allergic reaction in the user."),
     ("The user is allergic to ibuprofen.", "The user's son is allergic to penicillin.")),
    ("The user goes to the gym on Monday and Wednesday evenings.",
     ("On Monday and Wednesday evenings the user works out at the gym.", "The user's gym days are Monday and Wednesday evenings."),
     ("The user goes swimming on Monday and Wednesday evenings.", "The user goes to the gym on Friday mornings.")),
    ("The user supports Benfica.",
     ("The user is a Benfica fan.", "Benfica is the football club the user supports."),
     ("The user supports Porto.", "The user's brother supports Benfica.")),
    ("The user's salary is 52,000 pounds a year.",
     ("The user earns 52,000 pounds annually.", "The user makes 52,000 pounds a year."),
     ("The user's salary is 65,000 pounds a year.", "The user's savings are 52,000 pounds.")),
    ("The user's grandmother Rosa lives in a care home in Seville.",
     ("Rosa, the user's grandmother, lives in a Seville care home.", "The user's grandma Rosa is in a care home in Seville."),
     ("The user's grandmother Rosa lives in her own flat in Seville.", "The user's aunt Rosa lives in a care home in Seville.")),
    ("The user is learning to drive.",
     ("The user is taking driving lessons.", "The user is learning how to drive a car."),
     ("The user is learning to swim.", "The user is teaching their son to drive.")),
    ("The user hates coriander.",
     ("The user can't stand coriander.", "The user really dislikes coriander."),
     ("The user loves coriander.", "The user hates parsley.")),
    ("The user's email is ana.silva@example.com.",
     ("The user can be emailed at ana.silva@example.com.", "The user's email address is ana.silva@example.com."),
     ("The user's work email is ana.silva@acme.com.", "The user's husband's email is joao.silva@example.com.")),
    ("Lily is scared of the dark.",
     ("Lily is afraid of the dark.", "The dark frightens Lily."),
     ("Lily is scared of dogs.", "Lily's brother is scared of the dark.")),
    ("The user is pregnant and due in November.",
     ("The user is expecting a baby in November.", "The user's baby is due in November."),
     ("The user's sister is pregnant and due in November.", "The user is pregnant and due in February.")),
    ("The user owes their brother 3,000 dollars.",
     ("The user has a 3,000 dollar debt to their brother.", "The user's brother lent them 3,000 dollars, not yet repaid."),
     ("The user owes their bank 3,000 dollars.", "The user's brother owes them 3,000 dollars.")),
    ("The user moved to Canada in 2019.",
     ("In 2019 the user relocated to Canada.", "The user has lived in Canada since moving there in 2019."),
     ("The user moved to Australia in 2019.", "The user moved to Canada in 2012.")),
    # Written after the first draft of the word lists (see the docstring).
    ("The user's phone number is 555-0142.",
     ("The user can be reached on 555-0142.", "Call the user at 555-0142."),
     ("The user's office number is 555-0142.", "The user's phone number is 555-0199.")),
    ("The user's team ships releases every second Friday.",
     ("Every second Friday the user's team ships a release.", "Releases go out from the user's team every other Friday."),
     ("The user's team ships releases every Friday.", "The user's team holds retrospectives every second Friday.")),
    ("The user writes code in Python at work.",
     ("At work the user programs in Python.", "Python is the language the user codes in at work."),
     ("The user writes code in Rust at work.", "The user writes code in Python as a hobby.")),
    ("The user's cat Miso needs thyroid pills twice a day.",
     ("Miso, the user's cat, takes thyroid tablets twice daily.", "Twice a day the user's cat Miso gets thyroid medication."),
     ("The user's cat Miso needs thyroid pills once a day.", "The user's cat Miso needs kidney pills twice a day.")),
    ("The user is lactose intolerant.",
     ("The user cannot digest lactose.", "Lactose makes the user ill."),
     ("The user is gluten intolerant.", "The user's daughter is lactose intolerant.")),
    ("The user's manager is Karen Liu.",
     ("Karen Liu manages the user.", "The user reports to Karen Liu."),
     ("The user's mentor is Karen Liu.", "The user's manager is Mark Liu.")),
    ("The user's apartment is on the fourth floor.",
     ("The user lives on the fourth floor of their building.", "The user's flat is on the 4th floor."),
     ("The user's office is on the fourth floor.", "The user's apartment is on the second floor.")),
    ("The user wakes up at 6am on weekdays.",
     ("On weekdays the user gets up at 6am.", "The user's alarm goes off at 6am every weekday."),
     ("The user wakes up at 9am on weekdays.", "The user goes to bed at 6am on weekdays.")),
    ("The user wants summaries kept under 100 words.",
     ("Keep summaries for the user below 100 words.", "The user prefers summaries shorter than 100 words."),
     ("The user wants summaries kept under 300 words.", "The user wants emails kept under 100 words.")),
    ("The user's grandfather fought in the Korean War.",
     ("The user's grandpa was a soldier in the Korean War.", "In the Korean War the user's grandfather served as a soldier."),
     ("The user's grandfather fought in the Vietnam War.", "The user's uncle fought in the Korean War.")),
    ("The user uses a wheelchair.",
     ("The user gets around in a wheelchair.", "The user is a wheelchair user."),
     ("The user uses a walking stick.", "The user's mother uses a wheelchair.")),
    ("The user is saving for a house deposit.",
     ("The user is putting money aside for a deposit on a house.", "The user saves money towards a house deposit."),
     ("The user is saving for a car.", "The user has paid a house deposit.")),
]  # fmt: skip

THRESHOLDS = [round(0.50 + 0.025 * i, 3) for i in range(19)]  # 0.50 .. 0.95
NEVER = suppression.NEVER
A, N, T = Difference.ANCHORS, Difference.NAMES, Difference.THINGS
# The rules tried, strictest last: which kinds of fact-carrying word must not differ
# (NEVER), and for a changed thing, the similarity that still suppresses.
GUARDS: dict[str, suppression.Guard] = {
    "none": {},
    "anchors": {A: NEVER},
    "anchors+names": {A: NEVER, N: NEVER},
    **{f"anchors+names, things>={t:.3f}": {A: NEVER, N: NEVER, T: t}
       for t in (0.85, 0.875, 0.9, 0.925, 0.95)},
    "anchors+names+things": {A: NEVER, N: NEVER, T: NEVER},
}  # fmt: skip
HALVES = ("tune", "held-out")


@dataclass(frozen=True)
class Labelled:
    case: int
    text: str
    must: bool  # must be suppressed
    vector: list[float]

    @property
    def half(self) -> str:
        return HALVES[self.case % 2]


@dataclass(frozen=True)
class Score:
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def __str__(self) -> str:
        return f"P {self.precision:.3f} R {self.recall:.3f} (fp {self.fp:>2} fn {self.fn:>2})"


def score(
    labelled: list[Labelled],
    rules: list[suppression.Suppression],
    threshold: float,
    guard: suppression.Guard,
    half: str,
) -> Score:
    tp = fp = fn = 0
    for item in labelled:
        if item.half != half:
            continue
        hit = suppression.match(item.text, item.vector, [rules[item.case]], threshold, guard)
        tp += bool(hit) and item.must
        fp += bool(hit) and not item.must
        fn += item.must and not hit
    return Score(tp, fp, fn)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", default="minilm", choices=["minilm", "hashing"])
    args = parser.parse_args()
    embedder = build_embedder(Settings(embedder=args.embedder))
    started = time.perf_counter()
    forgotten = [case[0] for case in CASES]
    rules = [
        suppression.Suppression(id=f"sup_{i:02d}", memory_id=f"chk_{i:02d}", text=text,
                                embedding=vector)
        for i, (text, vector) in enumerate(zip(forgotten, embedder.embed_batch(forgotten),
                                               strict=True))
    ]  # fmt: skip
    statements = [
        (i, text, must)
        for i, (_, paraphrases, near) in enumerate(CASES)
        for texts, must in ((paraphrases, True), (near, False))
        for text in texts
    ]
    vectors = embedder.embed_batch([text for _, text, _ in statements])
    labelled = [
        Labelled(i, text, must, vector)
        for (i, text, must), vector in zip(statements, vectors, strict=True)
    ]
    cross = max(
        suppression.cosine(item.vector, rule.embedding or [])
        for item in labelled
        for rule in rules
        if rule.memory_id != f"chk_{item.case:02d}"
    )
    print(f"embedder {embedder.model_name}: {len(CASES)} forgotten facts "
          f"({(len(CASES) + 1) // 2} tune, {len(CASES) // 2} held-out), "
          f"{sum(item.must for item in labelled)} paraphrases, "
          f"{sum(not item.must for item in labelled)} near-but-different "
          f"({time.perf_counter() - started:.1f} s)")  # fmt: skip
    print(f"highest similarity to ANOTHER forgotten fact: {cross:.3f}")
    print(f"{'guard':<32} {'threshold':>9}  {'tune':<28} {'held-out':<28}")
    best: tuple[float, int, float] | None = None
    chosen: tuple[str, float] | None = None
    for strictness, (name, guard) in enumerate(GUARDS.items()):
        for threshold in THRESHOLDS:
            tune, held = (score(labelled, rules, threshold, guard, half) for half in HALVES)
            print(f"{name:<32} {threshold:>9.3f}  {tune!s:<28} {held!s:<28}")
            rank = (round(tune.f1, 6), strictness, threshold)
            if best is None or rank > best:
                best, chosen = rank, (name, threshold)
    assert chosen is not None
    name, threshold = chosen
    print(f"chosen on the tune half (highest F1): guard {name}, threshold {threshold:.3f}")
    for half in HALVES:
        print(f"  {half:<8} {score(labelled, rules, threshold, GUARDS[name], half)}")
    in_code = [n for n, g in GUARDS.items() if g == suppression.SUPPRESSION_GUARD]
    print(f"in the code: guard {in_code[0] if in_code else sorted(suppression.SUPPRESSION_GUARD)}, "
          f"threshold {suppression.SUPPRESSION_SIMILARITY:.3f}")  # fmt: skip
    for item in labelled:
        hit = suppression.match(item.text, item.vector, [rules[item.case]])
        if bool(hit) != item.must:
            how = "suppressed wrongly" if hit else "missed"
            similarity = suppression.cosine(item.vector, rules[item.case].embedding or [])
            print(f"  {how} by the code's rule ({item.half}): {similarity:.3f} "
                  f"{item.text!r} ~ {CASES[item.case][0]!r}")  # fmt: skip


if __name__ == "__main__":
    main()
