"""Relative dates in an extracted fact, written as absolute ones (the `local` model).

The small model is told to copy time words as they were said ("tomorrow", "next
Tuesday"); this module rewrites them from the conversation's clock (observedAt, or
the receipt time), deterministically, so a stored fact never says "tomorrow".

Conventions (English, the week starting on Monday):
- today / tonight / this morning|afternoon|evening: the clock's day; tomorrow +1,
  the day after tomorrow +2, yesterday -1, the day before yesterday -2;
- next <weekday>: that weekday in next week; this / this coming / coming <weekday>:
  the next such day from today (today included); last <weekday>: the latest such day
  before today; for <weekday> (singular): the next such day, from tomorrow;
- this / next / last week: "the week of Monday <date>"; this / next weekend: the
  weekend's Saturday; this / next / last month and year: the month or year named;
- in N days / weeks / months (a number or a word, "a", "a fortnight"), N days /
  weeks ago: the day (a month: the month);
- the 10th (a day of month without a month): the next such date from today.
Days are written "Tuesday 14 October 2025"; a phrase that needs a preposition gets
"on" ("due tomorrow" -> "due on Friday 10 October 2025"), a month or a year "in",
unless one precedes it ("from this month" -> "from April 2026").
Recurring days ("on Tuesdays", "every Friday") and dates already absolute are kept.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import date, datetime, timedelta

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY = r"(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)(?!s)"
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_COUNT = r"(?P<n>\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(?P<unit>day|week|month|year)s?"
# A preposition already before the phrase: it keeps its own ("from next week").
_PREPOSITION = re.compile(
    r"\b(?:on|from|until|till|by|before|after|since|for|of|starting|beginning|until)\s+$", re.I
)
_MONTHS = "|".join(m.lower() for m in calendar.month_name[1:])


def day_text(day: date) -> str:
    """e.g. "Tuesday 14 October 2025"."""
    weekday = WEEKDAYS[day.weekday()].capitalize()
    return f"{weekday} {day.day} {calendar.month_name[day.month]} {day.year}"


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _add_months(day: date, months: int) -> date:
    month = day.month - 1 + months
    year, month = day.year + month // 12, month % 12 + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _month_text(day: date) -> str:
    return f"{calendar.month_name[day.month]} {day.year}"


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word.lower()]


def _shift(today: date, n: int, unit: str) -> date:
    if unit == "day":
        return today + timedelta(days=n)
    if unit == "week":
        return today + timedelta(weeks=n)
    if unit == "month":
        return _add_months(today, n)
    return _add_months(today, 12 * n)


def _span(today: date, n: int, unit: str) -> str:
    """A shifted day, or, for months and years, the month or year it falls in."""
    target = _shift(today, n, unit)
    if unit == "month":
        return f"in {_month_text(target)}"
    if unit == "year":
        return f"in {target.year}"
    return f"on {day_text(target)}"


def _on(day: date) -> str:
    return f"on {day_text(day)}"


def _weekday_from(today: date, weekday: int, *, earliest: int) -> date:
    """The first `weekday` at least `earliest` days after today."""
    start = today + timedelta(days=earliest)
    return start + timedelta(days=(weekday - start.weekday()) % 7)


def _day_of_month(today: date, day: int) -> date | None:
    for months in range(0, 3):
        first = _add_months(today.replace(day=1), months)
        if day <= calendar.monthrange(first.year, first.month)[1]:
            candidate = first.replace(day=day)
            if candidate >= today:
                return candidate
    return None


Rule = tuple[re.Pattern[str], Callable[[re.Match[str], date], str | None]]


def _wd(match: re.Match[str]) -> int:
    return WEEKDAYS.index(match["wd"].lower())


def _rules() -> list[Rule]:
    def rx(pattern: str) -> re.Pattern[str]:
        return re.compile(rf"\b{pattern}\b", re.IGNORECASE)

    def part_of_day(word: str, offset: int) -> Callable[[re.Match[str], date], str]:
        return lambda m, today: f"on the {word} of {day_text(today + timedelta(days=offset))}"

    return [
        (rx(r"the\s+day\s+after\s+tomorrow"), lambda m, t: _on(t + timedelta(days=2))),
        (rx(r"the\s+day\s+before\s+yesterday"), lambda m, t: _on(t - timedelta(days=2))),
        (rx(r"tomorrow\s+(?P<part>morning|afternoon|evening|night)"),
         lambda m, t: f"on the {m['part'].lower()} of {day_text(t + timedelta(days=1))}"),
        (rx(r"tomorrow"), lambda m, t: _on(t + timedelta(days=1))),
        (rx(r"yesterday"), lambda m, t: _on(t - timedelta(days=1))),
        (rx(r"last\s+night"), part_of_day("night", -1)),
        (rx(r"tonight"), part_of_day("night", 0)),
        (rx(r"this\s+(?P<part>morning|afternoon|evening)"),
         lambda m, t: f"on the {m['part'].lower()} of {day_text(t)}"),
        (rx(r"today"), lambda m, t: _on(t)),
        (rx(r"next\s+" + _WEEKDAY),
         lambda m, t: _on(_monday(t) + timedelta(days=7 + _wd(m)))),
        (rx(r"(?:this\s+coming|this|coming)\s+" + _WEEKDAY),
         lambda m, t: _on(_weekday_from(t, _wd(m), earliest=0))),
        (rx(r"last\s+" + _WEEKDAY),
         lambda m, t: _on(_weekday_from(t, _wd(m), earliest=-7))),
        (rx(r"(?<=for\s)" + _WEEKDAY),
         lambda m, t: day_text(_weekday_from(t, _wd(m), earliest=1))),
        (rx(r"(?P<which>this|next|last)\s+week(?!end)"),
         lambda m, t: "the week of " + day_text(
             _monday(t) + timedelta(weeks={"this": 0, "next": 1, "last": -1}[m["which"].lower()])
         )),
        (rx(r"(?P<which>this|next)\s+weekend"),
         lambda m, t: "the weekend of " + day_text(
             _weekday_from(t, 5, earliest=0) + timedelta(weeks=m["which"].lower() == "next")
         )),
        (rx(r"(?P<which>this|next|last)\s+month"),
         lambda m, t: "in " + _month_text(
             _add_months(t, {"this": 0, "next": 1, "last": -1}[m["which"].lower()])
         )),
        (rx(r"(?P<which>this|next|last)\s+year"),
         lambda m, t: f"in {t.year + {'this': 0, 'next': 1, 'last': -1}[m['which'].lower()]}"),
        (rx(r"in\s+a\s+fortnight(?:'s\s+time)?"), lambda m, t: _on(t + timedelta(weeks=2))),
        (rx(rf"in\s+{_COUNT}\s+{_UNIT}(?:'?\s+time)?"),
         lambda m, t: _span(t, _count(m["n"]), m["unit"].lower())),
        (rx(rf"{_COUNT}\s+{_UNIT}\s+ago"),
         lambda m, t: _span(t, -_count(m["n"]), m["unit"].lower())),
        (rx(rf"the\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)(?!\s+(?:of\s+)?(?:{_MONTHS}))"),
         lambda m, t: _nth(t, int(m["d"]))),
    ]  # fmt: skip


def _nth(today: date, day: int) -> str | None:
    found = _day_of_month(today, day) if 1 <= day <= 31 else None
    return None if found is None else f"{found.day} {_month_text(found)}"


_RULES = _rules()


def resolve(text: str, clock: datetime) -> str:
    """`text` with its relative dates written as absolute ones, from `clock`'s day."""
    today = clock.date()
    for pattern, replace in _RULES:
        text = pattern.sub(lambda m, r=replace: _replacement(m, r, today), text)  # type: ignore[misc]
    return text


def _replacement(
    match: re.Match[str], replace: Callable[[re.Match[str], date], str | None], today: date
) -> str:
    new = replace(match, today)
    if new is None:
        return match[0]
    before = match.string[: match.start()]
    if new.startswith(("on ", "in ")) and _PREPOSITION.search(before):
        return new[3:]
    return new
