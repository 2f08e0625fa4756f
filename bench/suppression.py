"""The suppression bound: how similar a candidate must be to a forgotten claim to be
suppressed (`jennah.domain.suppression.SUPPRESSION_SIMILARITY`).

Our own labelled set (below, written for this bench): 40 forgotten facts, each with two
paraphrases that must be suppressed (the same fact in other words) and two near-but-
different statements that must not be (the same person and topic, another fact:
"Ana is allergic to peanuts" / "Ana is allergic to shellfish"). Each statement is
embedded with the product's default embedder (`jnh serve`: all-MiniLM-L6-v2, int8,
`adapters/embedding/minilm.py`), scored against its own forgotten fact exactly as
formation does (`suppression.match`: same words, else cosine of the bodies), and for
every threshold the bench prints precision and recall of "suppressed", then the chosen
bound: the highest threshold whose recall is at least MIN_RECALL (a forgotten fact must
stay forgotten in other words too), with the precision it costs.

Measured (2 cores, shared): no threshold separates them. Near-but-different statements
score up to 0.985 (a weekday or a number changed: "... on Thursdays" / "... on
Tuesdays"), paraphrases as low as 0.73; at 0.80 recall is 0.963 and precision 0.616
(48 of 80 near-but-different statements suppressed too). A word-overlap condition on
top does not help (it costs recall as fast as it gains precision). The bound is 0.80.
Also reports the cross-fact false positives: each paraphrase and near-miss against
every OTHER forgotten fact.

    .venv/bin/python bench/suppression.py [--embedder minilm|hashing]
"""

# ruff: noqa: E501  (the labelled set reads best one case per line)
from __future__ import annotations

import argparse
import time

from jennah.bootstrap import build_embedder
from jennah.domain import suppression
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
]  # fmt: skip

MIN_RECALL = 0.95
THRESHOLDS = [round(0.50 + 0.025 * i, 3) for i in range(19)]  # 0.50 .. 0.95


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
    labelled: list[tuple[int, str, bool]] = []  # (case, statement, must be suppressed)
    for i, (_, paraphrases, near) in enumerate(CASES):
        labelled += [(i, text, True) for text in paraphrases]
        labelled += [(i, text, False) for text in near]
    vectors = embedder.embed_batch([text for _, text, _ in labelled])
    own = [
        suppression.cosine(vector, rules[i].embedding or [])
        for (i, _, _), vector in zip(labelled, vectors, strict=True)
    ]
    cross = max(
        suppression.cosine(vector, rule.embedding or [])
        for (i, _, _), vector in zip(labelled, vectors, strict=True)
        for rule in rules
        if rule.memory_id != f"chk_{i:02d}"
    )
    print(f"embedder {embedder.model_name}: {len(CASES)} forgotten facts, "
          f"{sum(1 for *_, s in labelled if s)} paraphrases, "
          f"{sum(1 for *_, s in labelled if not s)} near-but-different "
          f"({time.perf_counter() - started:.1f} s)")  # fmt: skip
    print(f"highest similarity to ANOTHER forgotten fact: {cross:.3f}")
    print(f"{'threshold':>9} {'precision':>9} {'recall':>6} {'tp':>3} {'fp':>3} {'fn':>3}")
    chosen: tuple[float, float] | None = None
    for threshold in THRESHOLDS:
        tp = fp = fn = 0
        for (_, _, must), score in zip(labelled, own, strict=True):
            hit = score >= threshold
            tp += hit and must
            fp += hit and not must
            fn += must and not hit
        precision = tp / (tp + fp) if tp + fp else 1.0
        recall = tp / (tp + fn) if tp + fn else 1.0
        print(f"{threshold:>9.3f} {precision:>9.3f} {recall:>6.3f} {tp:>3} {fp:>3} {fn:>3}")
        if recall >= MIN_RECALL:
            chosen = (threshold, precision)
    worst_near = max(s for (*_, must), s in zip(labelled, own, strict=True) if not must)
    print(f"highest near-but-different similarity: {worst_near:.3f}")
    if chosen is not None:
        print(f"chosen bound: {chosen[0]:.3f} (recall >= {MIN_RECALL}, precision {chosen[1]:.3f}); "
              f"in the code: {suppression.SUPPRESSION_SIMILARITY:.3f}")  # fmt: skip
    for (i, text, must), score in sorted(zip(labelled, own, strict=True), key=lambda x: -x[1]):
        if not must and score >= suppression.SUPPRESSION_SIMILARITY:
            print(
                f"  suppressed wrongly at the code's bound: {score:.3f} {text!r} ~ {CASES[i][0]!r}"
            )
        if must and score < suppression.SUPPRESSION_SIMILARITY:
            print(f"  missed at the code's bound: {score:.3f} {text!r} ~ {CASES[i][0]!r}")


if __name__ == "__main__":
    main()
