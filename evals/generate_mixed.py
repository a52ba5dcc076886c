"""Generate the mixed evaluation cases: ``python -m evals.generate_mixed --output evals/cases/mixed.json``.

An invented world in eight sessions (two English and two Chinese users, an English and a Chinese
project, a bilingual support agent, a travel agent): 1,000 memories and 100 questions. The same
templates fill every session of a kind with other values, so sessions share words and a
cross-session leak would surface; inside a session, distractors share words with the evidence
(three invoice-export tickets, three doctors, the sister's dog beside the user's own), updates
supersede earlier facts ("moved from Berlin to Lisbon"), events carry dates, and identifiers
(tickets, files, error codes, booking codes) are asked both ways. About a third is Chinese.

Every choice comes from one ``random.Random(seed)``: the same seed gives a byte-identical file.
A question names its evidence by case memory id (``m0042``); an update also names the memories
its evidence supersedes (``superseded``), so the runner can check that the newer ranks higher.
The machinery comes first (``Builder``, ``generate``); the templates follow, one function per
kind of session (``person_en`` ... ``travel_en``), and ``PLANS`` sizes the sessions.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_SEED", "KINDS", "PLANS", "generate", "render"]

DEFAULT_SEED = 20250601
DEFAULT_OUTPUT = Path(__file__).resolve().parent / "cases" / "mixed.json"
KINDS = ("fact", "update", "temporal", "identifier", "distractor")
START, DAYS = datetime(2023, 1, 2), 880  # the timeline, in each session's local wall-clock time
MONTHS = "January February March April May June July August September October November December".split()
SHARED = {  # stored verbatim in every session of a language: de-duplication across sessions would show
    "en": ["Daylight saving time starts on Sunday, so the weekly call moves by an hour.",
           "Reminder: the office is closed on the public holiday next Monday."],
    "zh": ["下周一是法定节假日，办公室不开门。", "提醒：这个周日调休，正常上班。"],
}


def _l(text: str) -> list[str]:
    """A pool written as ``"a|b|c"``."""
    return text.split("|")


def day_en(t: datetime) -> str:
    """``14 April 2024`` (no locale involved)."""
    return f"{t.day} {MONTHS[t.month - 1]} {t.year}"


def month_en(t: datetime) -> str:
    """``April 2024``."""
    return f"{MONTHS[t.month - 1]} {t.year}"


def day_zh(t: datetime) -> str:
    """``2024年4月14日``."""
    return f"{t.year}年{t.month}月{t.day}日"


def month_zh(t: datetime) -> str:
    """``2024年4月``."""
    return f"{t.year}年{t.month}月"


@dataclass
class Memory:
    """One memory to store; ``case_id`` is given once all sessions are built."""

    session: str
    content: str
    occurred_at: datetime
    language: str
    metadata: dict[str, str] | None = None
    case_id: str = ""


@dataclass
class Question:
    """One question; evidence and superseded hold the memories themselves until ids exist."""

    session: str
    kind: str
    language: str
    query: str
    expected_answer: str
    evidence: list[Memory]
    superseded: list[Memory] = field(default_factory=list)


class Builder:
    """Adds one plan's memories and candidate questions; every choice is drawn from the shared rng."""

    def __init__(self, rng: random.Random, plan: Plan, taken: set[int], seen: set[str], world: dict[str, str]) -> None:
        """Start a plan.

        Args:
            rng: the generator's only source of randomness.
            plan: session, language, time zone and size.
            taken: hour slots already used in this session (memories stay at least 2 hours apart,
                beyond the server's one-hour neighbour window).
            seen: contents already stored in this session (the server would de-duplicate them).
            world: values one session's templates hand to another's (a shared ticket number).
        """
        self.rng, self.plan, self.taken, self.seen, self.world = rng, plan, taken, seen, world
        self.tz = timezone(timedelta(hours=plan.utc_offset_h))
        self.memories: list[Memory] = []
        self.candidates: list[Question] = []

    def one(self, options: Sequence[str]) -> str:
        """One of ``options``."""
        return self.rng.choice(list(options))

    def pick(self, pool: str, k: int) -> list[str]:
        """``k`` distinct values of a ``"a|b|c"`` pool."""
        return self.rng.sample(_l(pool), k)

    def digits(self, n: int) -> str:
        """A random ``n``-digit number without a leading zero."""
        return str(self.rng.randrange(10 ** (n - 1), 10**n))

    def at(self, lo: float = 0.0, hi: float = 1.0) -> datetime:
        """A free local time between fractions ``lo`` and ``hi`` of the timeline, 08:00-21:59."""
        first, last = int(lo * DAYS), max(int(hi * DAYS), int(lo * DAYS) + 1)
        while True:
            day, hour = self.rng.randrange(first, last), self.rng.randrange(8, 22)
            slot = day * 24 + hour
            if not self.taken.intersection(range(slot - 2, slot + 3)):
                self.taken.add(slot)
                minute = self.rng.randrange(60)
                return (START + timedelta(days=day, hours=hour, minutes=minute)).replace(tzinfo=self.tz)

    def add(self, content: str, when: datetime | None = None) -> Memory:
        """Store ``content`` at ``when`` (a random time if None), sometimes with a source in metadata.

        Raises:
            ValueError: the session already holds this content.
        """
        if content in self.seen:
            raise ValueError(f"{self.plan.session}: duplicate content {content!r}")
        self.seen.add(content)
        source = self.one(self.plan.sources) if self.rng.random() < 0.4 else None
        memory = Memory(self.plan.session, content, when or self.at(), self.plan.language,
                        {"source": source} if source else None)
        self.memories.append(memory)
        return memory

    def ask(self, kind: str, queries: Sequence[str], answer: str, evidence: list[Memory],
            superseded: Sequence[Memory] = ()) -> None:
        """Offer a question (one of ``queries``); ``generate`` keeps as many per kind as the plan asks."""
        self.candidates.append(Question(self.plan.session, kind, self.plan.language, self.one(queries), answer,
                                        evidence, list(superseded)))

    def fact(self, kind: str, memories: Sequence[str], queries: Sequence[str], answer: str,
             when: datetime | None = None) -> Memory:
        """Store one of ``memories`` and offer a question whose evidence it is."""
        memory = self.add(self.one(memories), when)
        self.ask(kind, queries, answer, [memory])
        return memory

    def event(self, memories: Sequence[str], queries: Sequence[str], date_text: Callable[[datetime], str]) -> Memory:
        """Store a dated event and offer a when-question; the answer is its local date as ``date_text`` writes it."""
        when = self.at()
        return self.fact("temporal", memories, queries, date_text(when), when)

    def chain(self, steps: Sequence[Sequence[str]], queries: Sequence[str], answer: str) -> list[Memory]:
        """Store a fact and its updates in time order; the question's evidence is the newest."""
        n = len(steps)
        stored = [self.add(self.one(step), self.at(0.05 + 0.9 * i / n, 0.05 + 0.9 * (i + 1) / n))
                  for i, step in enumerate(steps)]
        self.ask("update", queries, answer, stored[-1:], stored[:-1])
        return stored

    def fill(self, templates: Sequence[str], pools: dict[str, str], count: int) -> None:
        """Add ``count`` distinct everyday memories from ``templates`` filled from ``pools``.

        Raises:
            RuntimeError: the templates cannot make that many distinct texts.
        """
        for _ in range(count * 50):
            if count <= 0:
                return
            text = self.one(templates).format(**{key: self.one(_l(pool)) for key, pool in pools.items()})
            if text not in self.seen:
                self.add(text)
                count -= 1
        raise RuntimeError(f"{self.plan.session}: filler templates ran out of distinct texts")


@dataclass(frozen=True)
class Plan:
    """One session (or one language's share of it) and how many questions of each kind it gets.

    Attributes:
        session: the MCP session name.
        language: ``en`` or ``zh``, for memories and questions alike.
        utc_offset_h: the session's time zone, hours east of UTC.
        size: memories in this plan, filler included.
        quota: questions per kind, in ``KINDS`` order.
        build: adds the plan's facts, updates, events and identifiers (filler is added after).
        fill: filler templates and their ``"a|b|c"`` pools.
        sources: values of ``metadata.source``.
        description: one line for the case file.
        person: (name, pronoun) for a user session; the filler's ``{n}`` is the name.
    """

    session: str
    language: str
    utc_offset_h: int
    size: int
    quota: tuple[int, int, int, int, int]
    build: Callable[[Builder], None]
    fill: tuple[tuple[str, ...], dict[str, str]]
    sources: tuple[str, ...]
    description: str
    person: tuple[str, str] = ("", "")


def generate(seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Build the whole case file as a JSON-ready dict (no dates of generation, so it is reproducible).

    Raises:
        ValueError: a plan offers fewer candidate questions of a kind than its quota.
    """
    rng = random.Random(seed)
    world: dict[str, str] = {}
    states: dict[str, tuple[set[int], set[str]]] = {}
    memories: list[Memory] = []
    questions: list[Question] = []
    for plan in PLANS:
        taken, seen = states.setdefault(plan.session, (set(), set()))
        builder = Builder(rng, plan, taken, seen, world)
        plan.build(builder)
        for line in SHARED[plan.language]:
            if line not in seen:
                builder.add(line)
        templates, pools = plan.fill
        builder.fill(templates, {**pools, "n": plan.person[0]}, plan.size - len(builder.memories))
        for kind, count in zip(KINDS, plan.quota, strict=True):
            offered = [q for q in builder.candidates if q.kind == kind]
            if len(offered) < count:
                raise ValueError(f"{plan.session}: {len(offered)} {kind} questions offered, {count} wanted")
            questions += rng.sample(offered, count)
        memories += builder.memories
    sessions = list(dict.fromkeys(plan.session for plan in PLANS))
    memories.sort(key=lambda m: (sessions.index(m.session), m.occurred_at))
    for index, memory in enumerate(memories, start=1):
        memory.case_id = f"m{index:04d}"
    return {
        "name": "mixed",
        "seed": seed,
        "generator": "python -m evals.generate_mixed",
        "counts": {
            "memories": len(memories),
            "questions": len(questions),
            "memories_zh": sum(m.language == "zh" for m in memories),
            "questions_zh": sum(q.language == "zh" for q in questions),
            "questions_per_kind": {kind: sum(q.kind == kind for q in questions) for kind in KINDS},
        },
        "sessions": [
            {"session": s, "description": next(p.description for p in PLANS if p.session == s),
             "memories": sum(m.session == s for m in memories), "questions": sum(q.session == s for q in questions)}
            for s in sessions
        ],
        "memories": [
            {"id": m.case_id, "session": m.session, "language": m.language, "content": m.content,
             "occurred_at": m.occurred_at.isoformat(), **({"metadata": m.metadata} if m.metadata else {})}
            for m in memories
        ],
        "questions": [
            {"id": f"q{index:03d}", "session": q.session, "kind": q.kind, "language": q.language, "query": q.query,
             "expected_answer": q.expected_answer, "evidence": [m.case_id for m in q.evidence],
             **({"superseded": [m.case_id for m in q.superseded]} if q.superseded else {})}
            for index, q in enumerate(questions, start=1)
        ],
    }


def render(cases: dict[str, Any]) -> str:
    """The case file's text: indented UTF-8 JSON (Chinese kept readable), newline-terminated."""
    return json.dumps(cases, ensure_ascii=False, indent=2) + "\n"


# --- Templates. ``"a|b|c"`` strings are pools; ``b.fact``/``b.chain`` store memories and offer a question. ---


def person_en(b: Builder) -> None:
    """An English-speaking user (the plan's name and possessive pronoun): family, health, moves, jobs, events."""
    n, p = b.plan.person
    sister = b.one(_l("Nora|Ines|Maya|Clara|Greta|Lena"))
    dog, sister_dog, other_dog = b.pick("Miso|Pepper|Biscuit|Juno|Toffee|Mango|Olive", 3)
    b.fact("fact", [f"{n}'s younger sister is called {sister}.", f"Family: {n} has one sibling, a sister named "
                    f"{sister}.", f"{n} mentioned that {p} sister {sister} is coming to stay for a week."],
           [f"What is the name of {n}'s sister?", f"Who is {n}'s sister?"], sister)
    b.fact("fact", [f"{n} adopted a beagle called {dog} from the shelter.", f"{n}'s dog {dog} needs a walk "
                    "before 8am every day."], [f"What is {n}'s dog called?", f"What's the name of {n}'s dog?"], dog)
    b.fact("distractor", [f"{n}'s sister {sister} has a dachshund named {sister_dog}."],
           [f"What is the name of {n}'s sister's dog?"], sister_dog)
    b.add(f"{n}'s neighbour's dog {other_dog} barks whenever the doorbell rings.")
    allergy = b.one(_l("peanuts|shellfish|penicillin|sesame"))
    b.fact("fact", [f"{n} is allergic to {allergy}; keep that in mind when booking restaurants.",
                    f"Health note: {n} reacts badly to {allergy}, so an antihistamine is always in {p} bag."],
           [f"What is {n} allergic to?", f"Does {n} have any allergies?"], allergy)
    coffee = b.one(_l("flat white|oat-milk cortado|double espresso|iced americano"))
    b.fact("fact", [f"{n} always orders a {coffee}, no sugar.", f"Coffee order for {n}: {coffee}."],
           [f"How does {n} take {p} coffee?", f"What coffee does {n} usually order?"], coffee)
    instrument = b.one(_l("cello|bass guitar|piano|trumpet|violin"))
    b.fact("fact", [f"{n} has been taking {instrument} lessons on Thursday evenings.",
                    f"{n} practises the {instrument} for half an hour after work."],
           [f"Which instrument is {n} learning?", f"What instrument does {n} play?"], instrument)
    partner = b.one(_l("Tomás|Yusuf|Hannah|Priya|Daniel|Sofia"))
    b.fact("fact", [f"{n}'s partner {partner} works as an architect.", f"{n} lives with {p} partner, {partner}."],
           [f"What is the name of {n}'s partner?", f"Who is {n}'s partner?"], partner)
    food = b.one(_l("Tasca do Chico|Mamma Rosa|Sakura Ramen|The Green Fork|Casa Lupita"))
    b.fact("fact", [f"{n}'s favourite place for dinner is {food}.",
                    f"When in doubt, book {food}: it is {n}'s favourite restaurant."],
           [f"Which restaurant does {n} like best?"], food)
    birthday = f"{b.rng.randrange(1, 29)} {b.one(MONTHS)}"
    b.fact("fact", [f"{n}'s birthday is on {birthday}.", f"Remember {n}'s birthday: {birthday}."],
           [f"When is {n}'s birthday?"], birthday)
    gp, dentist, physio = (f"Dr. {name}" for name in b.pick("Almeida|Fischer|Novak|Rahman|Keller|Costa", 3))
    b.add(f"{n}'s GP is {gp} at the health centre on the main square.")
    b.fact("distractor", [f"{n}'s dentist is {dentist}; appointments are booked online."],
           [f"Who is {n}'s dentist?", f"What is the name of {n}'s dentist?"], dentist)
    b.add(f"{n} sees {physio}, a physiotherapist, about {p} knee.")
    c = b.pick("Berlin|Lisbon|Munich|Amsterdam|Vienna|Copenhagen", 3)
    moves = b.rng.choice([2, 3])
    b.chain([[f"{n} lives in {c[0]}, in a flat near the old town.", f"{n} has been based in {c[0]} for three years."],
             [f"{n} moved from {c[0]} to {c[1]} for a new role.", f"Update: {n} relocated from {c[0]} to {c[1]}."],
             [f"{n} moved again, from {c[1]} to {c[2]}; the flat in {c[1]} is given up.",
              f"Big news: {n} has moved from {c[1]} to {c[2]}."]][:moves],
            [f"Which city does {n} live in now?", f"Where is {n} based at the moment?"], c[moves - 1])
    e = b.pick("Northwind|Globex|Initech|Hooli|Contoso|Umbrella Labs", 2)
    b.chain([[f"{n} works as a data analyst at {e[0]}.", f"{n} has been at {e[0]} since 2021, in the analytics team."],
             [f"{n} left {e[0]} and started at {e[1]} on Monday.",
              f"{n} accepted an offer from {e[1]}; the last day at {e[0]} was Friday."]],
            [f"Where does {n} work now?", f"Who is {n}'s current employer?"], e[1])
    car = b.pick("Toyota Yaris|VW Golf|Tesla Model 3|Renault Zoe|Fiat 500", 2)
    b.chain([[f"{n} drives a {car[0]}.", f"{n}'s car is an old {car[0]}."],
             [f"{n} sold the {car[0]} and bought a {car[1]}.", f"{n} traded in the {car[0]} for a {car[1]}."]],
            [f"What car does {n} drive now?", f"Which car does {n} have at the moment?"], car[1])
    gym = b.pick("Monday and Wednesday|Tuesday and Thursday|Wednesday and Saturday|Friday and Sunday", 2)
    b.chain([[f"{n} goes to the gym on {gym[0]} mornings."],
             [f"{n} switched gym days to {gym[1]}.", f"From now on {n} trains on {gym[1]} instead of {gym[0]}."]],
            [f"Which days does {n} go to the gym?", f"When does {n} train at the gym these days?"], gym[1])
    phone = [f"+{b.one(_l('49|351|31|43'))} {b.digits(3)} {b.digits(3)} {b.digits(4)}" for _ in range(2)]
    b.chain([[f"{n}'s mobile number is {phone[0]}."],
             [f"{n} has a new mobile number: {phone[1]} (the old {phone[0]} no longer works)."]],
            [f"What is {n}'s current phone number?", f"Which mobile number should I use for {n}?"], phone[1])
    race, friend = b.one(_l("Lisbon|Berlin|Porto|Vienna")), b.one(_l("Jonas|Marta|Kofi"))
    events = [([f"{n} ran the {race} half marathon in 1:5{b.digits(1)}.", f"{n} finished the {race} half "
                "marathon, a personal best."], [f"When did {n} run the half marathon?"]),
              ([f"{n} passed the driving test today, on the second attempt."],
               [f"When did {n} pass the driving test?"]),
              ([f"{n} was at {friend}'s wedding in Sintra today."], [f"When did {n} go to {friend}'s wedding?"]),
              ([f"{n} had knee surgery at St. Mary's; recovery will take six weeks."],
               [f"When did {n} have knee surgery?", f"On what date was {n}'s knee operation?"])]
    dated = [b.event(texts, queries, day_en) for texts, queries in events]
    early, late = sorted([b.at(), b.at()])
    older = b.add(f"{n} went to the dentist for a check-up and a cleaning.", early)
    newer = b.add(f"{n} had a filling replaced at the dentist.", late)
    b.ask("temporal", [f"When was {n}'s most recent dentist appointment?"], day_en(late), [newer], [older])
    bands = b.pick("Radiohead|Arctic Monkeys|Rosalía|Massive Attack|Florence + the Machine", 2)
    early, late = b.at(0.0, 0.5), b.at(0.5, 1.0)
    b.add(f"{n} saw {bands[0]} live at the arena.", early)
    gig = b.add(f"{n} went to the {bands[1]} concert with {partner}.", late)
    b.ask("temporal", [f"Which concert did {n} go to in {month_en(late)}?"], bands[1], [gig])
    subject = b.one(_l("Portuguese|photography|pottery|accounting"))
    course = b.add(f"{n} started an evening course in {subject}.")
    first = "the half marathon" if dated[0].occurred_at < course.occurred_at else f"the {subject} course"
    b.ask("temporal", [f"Which came first: {n}'s half marathon or the start of the {subject} course?"], first,
          [dated[0], course])
    member, flyer, tax = f"GM-{b.digits(5)}", f"{b.digits(3)} {b.digits(3)} {b.digits(3)}", f"TX-2024-{b.digits(4)}"
    b.fact("identifier", [f"{n}'s gym membership number is {member}."], [f"What is {n}'s gym membership number?"],
           member)
    b.fact("identifier", [f"{n}'s frequent flyer number is {flyer} (Miles & More)."],
           [f"What is {n}'s frequent flyer number?"], flyer)
    b.fact("identifier", [f"The tax advisor's reference for {n}'s 2024 return is {tax}."],
           [f"What reference number did the tax advisor give {n}?"], tax)


PERSON_EN_FILL = (
    ("{n} had {meal} with {friend} at {place}.", "{n} is reading {book} and likes it so far.",
     "{n} asked for a reminder to {task}.", "{n} said the week was {mood} because of {reason}.",
     "{n} binge-watched {show} over the weekend.", "{n} wants to try {hobby} this year.",
     "{n} recommended {book} to {friend}.", "{n} and {friend} talked about {hobby} for an hour.",
     "{n} needs to {task} before the end of the month.", "{friend} lent {n} a copy of {book}."),
    {"meal": "lunch|dinner|brunch|coffee", "friend": "Sam|Lea|Omar|Julia|Rui|Kate|Ben|Anya",
     "place": "a new Thai place|the harbour café|a ramen bar downtown|the market hall|an Italian trattoria|"
              "a rooftop bar",
     "book": "Project Hail Mary|The Overstory|Klara and the Sun|Piranesi|Educated|Sapiens|Stoner",
     "task": "renew the passport|pay the electricity bill|call the landlord|book a haircut|return the library books|"
             "order printer ink|cancel the streaming trial",
     "mood": "hectic|quiet|exhausting|productive|relaxed",
     "reason": "a deadline at work|a cold|visitors staying over|the heatwave|a long train trip|a broken boiler",
     "show": "Severance|The Bear|Slow Horses|Shogun|a documentary about octopuses|Succession",
     "hobby": "bouldering|sourdough baking|watercolour painting|salsa classes|birdwatching|a pottery course"},
)


def person_zh(b: Builder) -> None:
    """A Chinese-speaking user (the plan's name and pronoun, 她 or 他): the same kinds of facts as ``person_en``."""
    n, p = b.plan.person
    sister = b.one(_l("小雪|小雨|婷婷|佳佳|晓燕"))
    cat, sister_cat, other_cat = b.pick("团子|年糕|橘子|豆豆|布丁|可乐", 3)
    b.fact("fact", [f"{n}的妹妹叫{sister}，在成都读大学。", f"{n}说{p}妹妹{sister}下个月要来住一周。"],
           [f"{n}的妹妹叫什么名字？", f"{n}的妹妹是谁？"], sister)
    b.fact("fact", [f"{n}从救助站领养了一只橘猫，取名{cat}。", f"{n}家的猫叫{cat}，每天早上七点要喂。"],
           [f"{n}的猫叫什么？", f"{n}养的猫叫什么名字？"], cat)
    b.fact("distractor", [f"{n}的妹妹{sister}养了一只英短，叫{sister_cat}。"], [f"{n}妹妹的猫叫什么名字？"], sister_cat)
    b.add(f"{n}邻居家的猫{other_cat}经常跑到{p}家阳台上。")
    allergy = b.one(_l("花生|海鲜|青霉素|芒果"))
    b.fact("fact", [f"{n}对{allergy}过敏，订餐时要注意。", f"健康备注：{n}{allergy}过敏，随身带着抗过敏药。"],
           [f"{n}对什么过敏？", f"{n}有什么过敏的东西吗？"], allergy)
    drink = b.one(_l("茉莉花茶|冰美式|燕麦拿铁|普洱"))
    b.fact("fact", [f"{n}每天下午都要喝一杯{drink}。", f"{n}最喜欢喝{drink}。"], [f"{n}平时喜欢喝什么？"], drink)
    instrument = b.one(_l("古筝|钢琴|二胡|吉他|小提琴"))
    b.fact("fact", [f"{n}每周四晚上去学{instrument}。", f"{n}最近在练{instrument}，每天下班后练半小时。"],
           [f"{n}在学什么乐器？"], instrument)
    partner = b.one(_l("张伟|刘洋|赵敏|孙磊|周婷"))
    b.fact("fact", [f"{n}的爱人{partner}是一名建筑师。", f"{n}和爱人{partner}住在一起。"], [f"{n}的爱人叫什么名字？"],
           partner)
    food = b.one(_l("外婆家|绿茶餐厅|南京大牌档|西贝莜面村|点都德"))
    b.fact("fact", [f"{n}最喜欢去{food}吃饭。", f"不知道去哪吃就订{food}，那是{n}最爱的餐厅。"],
           [f"{n}最喜欢哪家餐厅？"], food)
    birthday = f"{b.rng.randrange(1, 13)}月{b.rng.randrange(1, 29)}日"
    b.fact("fact", [f"{n}的生日是{birthday}。", f"记住：{n}的生日在{birthday}。"], [f"{n}的生日是哪天？"], birthday)
    gp, dentist, physio = (f"{name}医生" for name in b.pick("李|王|陈|赵|黄|吴", 3))
    b.add(f"{n}的家庭医生是社区医院的{gp}。")
    b.fact("distractor", [f"{n}的牙医是口腔医院的{dentist}，要在网上预约。"], [f"{n}的牙医是哪位？", f"{n}看牙找哪位医生？"],
           dentist)
    b.add(f"{n}因为膝盖的问题在康复科看{physio}。")
    c = b.pick("北京|上海|杭州|深圳|成都|南京", 3)
    moves = b.rng.choice([2, 3])
    b.chain([[f"{n}住在{c[0]}，在公司附近租了一套小公寓。", f"{n}在{c[0]}已经生活三年了。"],
             [f"{n}从{c[0]}搬到了{c[1]}，换了新工作。", f"更新：{n}上个月从{c[0]}搬去了{c[1]}。"],
             [f"{n}又搬家了，从{c[1]}搬到{c[2]}。", f"大消息：{n}已经从{c[1]}搬到{c[2]}了。"]][:moves],
            [f"{n}现在住在哪个城市？", f"{n}目前在哪里生活？"], c[moves - 1])
    e = b.pick("星河科技|蓝鲸数据|云帆网络|青松医疗|远航物流", 2)
    b.chain([[f"{n}在{e[0]}做数据分析师。", f"{n}从2021年起就在{e[0]}的数据团队工作。"],
             [f"{n}从{e[0]}离职了，周一开始在{e[1]}上班。", f"{n}接受了{e[1]}的offer，上周五是在{e[0]}的最后一天。"]],
            [f"{n}现在在哪家公司工作？"], e[1])
    car = b.pick("比亚迪秦|大众朗逸|特斯拉Model 3|丰田卡罗拉|蔚来ET5", 2)
    b.chain([[f"{n}开的是一辆{car[0]}。"], [f"{n}把{car[0]}卖了，换了一辆{car[1]}。"]], [f"{n}现在开什么车？"], car[1])
    gym = b.pick("周一和周三|周二和周四|周三和周六|周五和周日", 2)
    b.chain([[f"{n}每{gym[0]}早上去健身房。"],
             [f"{n}把健身时间改到了{gym[1]}。", f"以后{n}改成{gym[1]}去健身，不再是{gym[0]}了。"]],
            [f"{n}现在哪几天去健身？"], gym[1])
    phone = [f"1{b.one(_l('38|39|58|86'))} {b.digits(4)} {b.digits(4)}" for _ in range(2)]
    b.chain([[f"{n}的手机号是{phone[0]}。"], [f"{n}换了新手机号：{phone[1]}，旧号{phone[0]}已停用。"]],
            [f"{n}现在的手机号是多少？", f"现在应该打哪个号码联系{n}？"], phone[1])
    race, friend = b.one(_l("北京|上海|杭州|厦门")), b.one(_l("小林|阿杰|美美"))
    events = [([f"{n}跑完了{race}半程马拉松，成绩1小时5{b.digits(1)}分。"], [f"{n}是哪天跑的半程马拉松？"]),
              ([f"{n}今天通过了驾照科目三考试，第二次才过。"], [f"{n}是什么时候考过驾照的？"]),
              ([f"{n}今天去苏州参加了{friend}的婚礼。"], [f"{n}什么时候去参加了{friend}的婚礼？"]),
              ([f"{n}在市第一医院做了膝盖手术，需要休养六周。"], [f"{n}是什么时候做的膝盖手术？"])]
    dated = [b.event(texts, queries, day_zh) for texts, queries in events]
    early, late = sorted([b.at(), b.at()])
    older = b.add(f"{n}去看了牙医，洗牙加检查。", early)
    newer = b.add(f"{n}今天去补了一颗牙。", late)
    b.ask("temporal", [f"{n}最近一次看牙是什么时候？"], day_zh(late), [newer], [older])
    singers = b.pick("周杰伦|五月天|陈奕迅|林俊杰|王菲", 2)
    early, late = b.at(0.0, 0.5), b.at(0.5, 1.0)
    b.add(f"{n}去体育馆看了{singers[0]}的演唱会。", early)
    gig = b.add(f"{n}和{partner}一起去看了{singers[1]}的演唱会。", late)
    b.ask("temporal", [f"{n}在{month_zh(late)}去看了谁的演唱会？"], singers[1], [gig])
    subject = b.one(_l("日语|摄影|茶艺|会计"))
    course = b.add(f"{n}报名了一个{subject}晚班课程，今天第一次上课。")
    first = "半程马拉松" if dated[0].occurred_at < course.occurred_at else f"{subject}课"
    b.ask("temporal", [f"{n}是先跑的半程马拉松，还是先开始上{subject}课？"], first, [dated[0], course])
    member, flyer = f"GM-{b.digits(5)}", f"CA{b.digits(9)}"
    b.fact("identifier", [f"{n}的健身房会员号是{member}。"], [f"{n}的健身房会员号是多少？"], member)
    b.fact("identifier", [f"{n}的国航知音卡号是{flyer}。"], [f"{n}的常旅客卡号是多少？"], flyer)


PERSON_ZH_FILL = (
    ("{n}和{friend}在{place}吃了{meal}。", "{n}最近在看《{book}》，觉得挺有意思。", "{n}让我提醒一下要{task}。",
     "{n}说这周{mood}，因为{reason}。", "{n}周末追了《{show}》。", "{n}今年想试试{hobby}。",
     "{n}把《{book}》推荐给了{friend}。", "{n}和{friend}聊了一个小时的{hobby}。", "{friend}借给{n}一本《{book}》。"),
    {"friend": "小李|阿杰|老王|美美|小周|大鹏",
     "place": "楼下新开的川菜馆|公司附近的咖啡馆|商场里的日料店|老街的面馆|江边的烧烤摊",
     "meal": "午饭|晚饭|早茶|火锅", "book": "三体|活着|围城|人类简史|明朝那些事儿|平凡的世界",
     "task": "交电费|续签租房合同|给妈妈打电话|预约理发|还图书馆的书|买打印机墨盒", "mood": "特别忙|比较轻松|很累|效率很高",
     "reason": "项目要上线|感冒了|家里来了客人|天气太热|出差了好几天", "show": "繁花|漫长的季节|狂飙|去有风的地方|觉醒年代",
     "hobby": "攀岩|烘焙|水彩画|飞盘|陶艺"},
)


def project_en(b: Builder) -> None:
    """Atlas, an English B2B invoicing project: decisions, migrations, incidents, tickets, files, error codes."""
    a, c, d = b.pick("Priya|Marcus|Jonas|Leila|Tobias|Mei", 3)
    b.fact("fact", ["Atlas is a B2B invoicing platform: the API is Python (FastAPI), the web app React.",
                    "Stack reminder: Atlas runs a FastAPI (Python) backend behind a React front end."],
           ["What is the Atlas API written in?", "Which framework does the Atlas backend use?"], "FastAPI")
    b.fact("fact", ["Decision: Atlas drops support for Internet Explorer 11 from release 2.5.",
                    "The team agreed to stop supporting IE11 starting with release 2.5."],
           ["From which release is Internet Explorer 11 no longer supported?"], "release 2.5")
    b.fact("fact", ["Release policy: code freeze starts two working days before every release.",
                    "No merges to main in the two working days before a release (code freeze)."],
           ["How long before a release does the code freeze start?"], "two working days")
    b.fact("fact", [f"The design doc for multi-currency invoices is in Notion under 'Billing v2', written by {c}."],
           ["Who wrote the design doc for multi-currency invoices?"], c)
    b.fact("fact", ["Standup is at 09:45 Berlin time, except Fridays when it is async in Slack."],
           ["When is the Atlas standup?", "What time is standup?"], "09:45 Berlin time")
    b.chain([["Atlas stores invoices in MySQL 8 on RDS."],
             ["The migration from MySQL to PostgreSQL 16 is finished; MySQL stays read-only until switch-off."]],
            ["Which database does Atlas use now?", "Where are Atlas invoices stored at the moment?"], "PostgreSQL 16")
    planned, moved = b.at(0.2, 0.4), b.at(0.45, 0.6)
    first_date = moved + timedelta(days=b.rng.randrange(10, 20))
    second_date = first_date + timedelta(days=b.rng.randrange(14, 28))
    old = b.add(f"Release 2.4 is planned for {day_en(first_date)}.", planned)
    new = b.add(f"Release 2.4 slipped from {day_en(first_date)} to {day_en(second_date)}: the data migration "
                "needs another sprint.", moved)
    b.ask("update", ["When is release 2.4 planned now?", "What is the current date for release 2.4?"],
          day_en(second_date), [new], [old])
    b.chain([[f"{a} owns the billing service and reviews every change to it."],
             [f"Billing service ownership moved from {a} to {d}; {a} joins the search team."]],
            ["Who owns the billing service now?"], d)
    b.chain([["CI runs on Jenkins; the pipeline is defined in the Jenkinsfile at the repo root."],
             ["CI moved from Jenkins to GitHub Actions; workflows live in .github/workflows/."]],
            ["Which CI system does Atlas use now?"], "GitHub Actions")
    b.chain([["The public API rate limit is 100 requests per minute per key."],
             ["The public API rate limit was raised from 100 to 300 requests per minute per key."]],
            ["What is the current public API rate limit?"], "300 requests per minute per key")
    incidents = [("Incident: checkout latency spiked to 4 s for 40 minutes; root cause was a missing index on "
                  "invoices.customer_id.", "When did the checkout latency incident happen?"),
                 ("Incident: the EU region was down for 12 minutes after a bad DNS change.",
                  "When was the EU region outage?"),
                 ("Deployed atlas-api 2.3.0 to production; no rollback needed.",
                  "When did atlas-api 2.3.0 go to production?"),
                 ("Load test on staging: 1,200 requests per second before p95 latency passed 300 ms.",
                  "When did the team run the staging load test?")]
    dated = [b.event([text], [query], day_en) for text, query in incidents]
    first = "the checkout latency incident" if dated[0].occurred_at < dated[1].occurred_at else "the EU region outage"
    b.ask("temporal", ["Which happened first, the EU region outage or the checkout latency incident?"], first,
          dated[:2])
    early, late = b.at(0.0, 0.5), b.at(0.5, 1.0)
    b.add("Retro: the release captain rotates every sprint.", early)
    retro = b.add("Retro: flaky tests get fixed or deleted within a week.", late)
    b.ask("temporal", [f"What did the team agree on in the {month_en(late)} retro?"],
          "flaky tests get fixed or deleted within a week", [retro])
    numbers = b.rng.sample(range(1100, 1999), 9)
    b.world["timeout_ticket"] = f"ATL-{numbers[0]}"
    tickets = [("distractor", "invoice export times out for accounts with more than 10,000 invoices"),
               ("distractor", "invoice export drops the currency column in CSV files"),
               ("distractor", "the invoice PDF export renders Polish characters in the wrong font"),
               ("identifier", "password reset emails arrive twenty minutes late"),
               ("identifier", "SSO login fails for Okta users with upper-case email addresses"),
               ("identifier", "dark mode makes the invoice total unreadable"),
               ("identifier", "search returns archived customers"),
               ("identifier", "the VAT summary rounds each line instead of the total"),
               ("identifier", "the mobile menu hides the logout button")]
    for number, (kind, topic) in zip(numbers, tickets, strict=True):
        ticket = f"ATL-{number}"
        memory = b.add(b.one([f"{ticket}: {topic}.", f"Opened {ticket} for the bug where {topic}.",
                              f"{ticket} tracks the bug where {topic}; assigned to {b.one([a, c, d])}."]))
        if kind == "identifier" and b.rng.random() < 0.4:
            b.ask(kind, [f"What is {ticket} about?", f"What bug does {ticket} track?"], topic, [memory])
        else:
            b.ask(kind, [f"Which ticket tracks the bug where {topic}?", f"What is the ticket number for the bug "
                         f"where {topic}?"], ticket, [memory])
    files = [("distractor", "services/webhooks/retry.py", "the retry backoff for outgoing webhooks"),
             ("distractor", "services/email/retry.py", "the retry policy for transactional emails"),
             ("distractor", "services/payments/retry_policy.py", "the retry rules for failed card payments"),
             ("identifier", "atlas/billing/currency.py", "currency rounding"),
             ("identifier", "web/src/pages/InvoiceList.tsx", "the invoice list page")]
    for kind, path, what in files:
        b.fact(kind, [f"{what[0].upper()}{what[1:]} lives in {path}.", f"Code pointer: {what} is in {path}."],
               [f"Which file holds {what}?", f"Where in the code is {what}?"], path)
    for code, when in [("ERR_QUOTA_EXCEEDED", "an account goes over its monthly invoice quota"),
                       ("ERR_VAT_ID_INVALID", "a customer's VAT number fails the VIES check")]:
        memory = b.add(f"The API returns {code} when {when}.")
        b.ask("identifier", [f"Which error code does the API return when {when}?"], code, [memory])
    b.fact("identifier", ["The redesigned checkout sits behind the feature flag new_checkout_v2."],
           ["Which feature flag gates the redesigned checkout?"], "new_checkout_v2")


PROJECT_EN_FILL = (
    ("Standup: {p} is working on {component}.", "PR #{pr} ({change}) was merged by {p}.",
     "Deployed {service} 1.{minor}.{patch} to {env}.", "{p} is out of office until {weekday}.",
     "{p} asked for a review of the {component} change.", "{p} paired with {q} on {component} this afternoon.",
     "Sprint {sprint} planning: {component} work carried over.", "Flaky test {test} failed again in CI.",
     "{p} wrote a short RFC about {component}."),
    {"p": "Priya|Marcus|Jonas|Leila|Tobias|Mei|Sam", "q": "Ana|Felix|Noor|Ravi",
     "pr": "|".join(map(str, range(400, 460))),
     "component": "the invoice list|the tax engine|the customer importer|the PDF renderer|the webhook dispatcher|"
                  "the audit log|the dunning emails|the reporting dashboard",
     "change": "add pagination to /v1/customers|bump FastAPI|fix the timezone bug in reminders|cache exchange rates|"
               "remove unused feature flags|tighten CORS rules|log request ids",
     "service": "atlas-web|atlas-worker|atlas-scheduler", "minor": "7|8|9", "patch": "0|1|2|3",
     "env": "staging|preview",
     "weekday": "Monday|Tuesday|Wednesday|Thursday|Friday", "sprint": "|".join(map(str, range(30, 60))),
     "test": "test_invoice_totals|test_webhook_signature|test_login_redirect|test_csv_import"},
)


def project_zh(b: Builder) -> None:
    """凤凰 (Phoenix), a Chinese order-platform project with English identifiers."""
    a, c, d = b.pick("张伟|李娜|王磊|刘洋|陈静|杨帆", 3)
    b.fact("fact", ["凤凰项目的后端用 Go 写，前端用 Vue 3。", "技术栈备忘：凤凰后端是 Go，前端是 Vue 3。"],
           ["凤凰项目的后端是用什么语言写的？"], "Go")
    b.fact("fact", ["凤凰项目每周二下午三点开周会，用腾讯会议。"], ["凤凰项目的周会是什么时候？"], "每周二下午三点")
    b.fact("fact", [f"订单中台的技术方案文档放在飞书知识库里，作者是{c}。"], ["订单中台的技术方案文档是谁写的？"], c)
    b.fact("fact", ["决定：从 3.0 版本开始不再支持 iOS 13。"], ["从哪个版本开始不再支持 iOS 13？"], "3.0")
    b.chain([["凤凰项目的订单数据存在 MySQL 5.7 里。"], ["订单库已经从 MySQL 迁移到 TiDB，MySQL 只保留一个月只读。"]],
            ["凤凰项目现在用的是什么数据库？"], "TiDB")
    planned, moved = b.at(0.2, 0.4), b.at(0.45, 0.6)
    first_date = moved + timedelta(days=b.rng.randrange(10, 20))
    second_date = first_date + timedelta(days=b.rng.randrange(14, 28))
    old = b.add(f"凤凰 3.0 计划在{day_zh(first_date)}上线。", planned)
    new = b.add(f"凤凰 3.0 的上线时间从{day_zh(first_date)}推迟到了{day_zh(second_date)}，原因是支付联调没完成。", moved)
    b.ask("update", ["凤凰 3.0 现在计划什么时候上线？"], day_zh(second_date), [new], [old])
    b.chain([[f"支付模块由{a}负责。"], [f"支付模块的负责人从{a}换成了{d}，{a}调去做搜索了。"]],
            ["支付模块现在由谁负责？"], d)
    b.chain([["消息队列用的是 RabbitMQ。"], ["消息队列从 RabbitMQ 换成了 Kafka，旧队列下周下线。"]],
            ["凤凰项目现在用什么消息队列？"], "Kafka")
    events = [("线上故障：支付回调超时，约 300 笔订单状态卡在“待支付”，持续 25 分钟。", "支付回调超时的故障是哪天发生的？"),
              ("压测结果：下单接口在 2000 QPS 时 p99 延迟超过 500 毫秒。", "下单接口的压测是哪天做的？"),
              ("order-service v2.8.0 已发布到生产环境，没有回滚。", "order-service v2.8.0 是哪天发布到生产环境的？")]
    for text, query in events:
        b.event([text], [query], day_zh)
    early, late = b.at(0.0, 0.5), b.at(0.5, 1.0)
    b.add("复盘会结论：每个迭代轮换发布负责人。", early)
    retro = b.add("复盘会结论：不稳定的测试一周内必须修复或删除。", late)
    b.ask("temporal", [f"{month_zh(late)}的复盘会得出了什么结论？"], "不稳定的测试一周内必须修复或删除", [retro])
    tickets = [("distractor", "部分退款时退款金额计算错误"), ("distractor", "退款审批通过后没有发短信通知用户"),
               ("identifier", "支付回调超时后订单状态没有更新"), ("identifier", "优惠券叠加使用时满减没有生效"),
               ("identifier", "订单导出 Excel 时手机号被截断"), ("identifier", "商家后台在 Safari 上无法上传图片")]
    for number, (kind, topic) in zip(b.rng.sample(range(300, 999), len(tickets)), tickets, strict=True):
        ticket = f"PHX-{number}"
        memory = b.add(b.one([f"{ticket}：{topic}。", f"新建了工单 {ticket}，问题是{topic}。"]))
        if kind == "identifier" and b.rng.random() < 0.4:
            b.ask(kind, [f"{ticket} 是什么问题？"], topic, [memory])
        else:
            b.ask(kind, [f"“{topic}”这个问题对应哪个工单？", f"哪个工单记录了{topic}的问题？"], ticket, [memory])
    for kind, path, what in [("distractor", "internal/refund/calc.go", "退款金额的计算逻辑"),
                             ("distractor", "internal/refund/notify.go", "退款通知的发送逻辑"),
                             ("identifier", "internal/payment/callback.go", "支付回调的处理逻辑"),
                             ("identifier", "web/src/views/OrderExport.vue", "订单导出页面")]:
        b.fact(kind, [f"{what}在 {path} 里。", f"代码位置：{what}写在 {path}。"], [f"{what}的代码在哪个文件里？"], path)


PROJECT_ZH_FILL = (
    ("站会：{p}在做{component}。", "{p}合并了 PR #{pr}（{change}）。", "{service} v1.{minor}.{patch} 已部署到{env}。",
     "{p}请假到{weekday}。", "{p}和{q}下午一起排查{component}的问题。",
     "第{sprint}个迭代计划会：{component}的工作延到下个迭代。",
     "CI 里的不稳定测试 {test} 又失败了。", "{p}请大家帮忙评审{component}的改动。"),
    {"p": "张伟|李娜|王磊|刘洋|陈静|杨帆", "q": "小赵|小孙|老周|阿强", "pr": "|".join(map(str, range(200, 260))),
     "component": "订单列表|库存同步|优惠券服务|支付网关|物流跟踪|商家后台|数据报表",
     "change": "给订单接口加分页|升级 Go 版本|修复时区问题|缓存商品价格|删除无用的开关|增加请求日志",
     "service": "order-service|stock-service|coupon-service", "minor": "3|4|5", "patch": "0|1|2|3",
     "env": "测试环境|预发环境", "weekday": "周一|周二|周三|周四|周五", "sprint": "|".join(map(str, range(10, 40))),
     "test": "TestRefundAmount|TestCouponStack|TestOrderExport|TestStockSync"},
)


def support_en(b: Builder) -> None:
    """The support agent's English customers of Atlas: plans, refunds, contacts, support tickets."""
    c = b.pick("Dana Whitfield|Kenji Sato|Maria Gonzalez|Tom Becker|Aisha Khan|Lukas Brandt|Alice Moreau", 7)
    companies = b.pick("Brightline Ltd|Kestrel GmbH|Orchard & Co|Vantage Freight", 2)
    b.fact("fact", [f"{c[0]} prefers to be contacted by email, never by phone."], [f"How does {c[0]} want to be "
                                                                                    "contacted?"], "by email")
    b.fact("fact", [f"{c[1]} is the billing admin for {companies[0]}."], [f"Which company is {c[1]} the billing "
                                                                           "admin for?"], companies[0])
    b.fact("fact", [f"{companies[1]} needs every invoice in German; {c[2]} asked for it twice."],
           [f"Which language does {c[2]}'s company need its invoices in?"], "German")
    b.fact("fact", ["Refund policy: refunds within 30 days of a charge; after that only account credit."],
           ["What is the refund policy?", "Until when can a customer get a refund?"], "within 30 days of a charge")
    b.chain([[f"{c[3]} is on the Starter plan, billed monthly."],
             [f"{c[3]} upgraded from Starter to Business after hitting the invoice limit."]],
            [f"Which plan is {c[3]} on now?"], "Business")
    invoice = f"INV-{b.digits(6)}"
    b.chain([[f"{c[4]} asked for a refund of the duplicate charge on {invoice}."],
             [f"The refund for {invoice} is approved and waiting for finance."],
             [f"The refund for {invoice} was paid out; {c[4]} confirmed receipt."]],
            [f"What is the status of {c[4]}'s refund for {invoice}?"], "paid out")
    user = c[5].split()[0].lower()
    b.chain([[f"{c[5]}'s billing contact is {user}@kestrel.example."],
             [f"{c[5]} changed the billing contact from {user}@kestrel.example to billing@kestrel.example."]],
            [f"What is {c[5]}'s billing contact email now?"], "billing@kestrel.example")
    for text, query in [(f"Call with {c[0]}: walked through the CSV import; they will retry tomorrow.",
                         f"When was the call with {c[0]} about the CSV import?"),
                        (f"Escalated {c[1]}'s SSO login problem to the engineering on-call.",
                         f"When was {c[1]}'s SSO problem escalated?")]:
        b.event([text], [query], day_en)
    ticket = b.world["timeout_ticket"]
    b.fact("identifier", [f"{c[6]} reported that the invoice export times out; linked to engineering ticket {ticket}."],
           [f"Which engineering ticket is {c[6]}'s invoice export timeout linked to?"], ticket)
    issues = [("identifier", c[2], "a PDF invoice showing the wrong VAT rate"),
              ("identifier", c[4], "two-factor codes not arriving by SMS"),
              ("distractor", c[0], "the CSV import rejecting semicolon-separated files"),
              ("distractor", c[3], "the CSV import failing on files over 5 MB"),
              ("distractor", c[6], "the CSV import mixing up day and month in dates")]
    for number, (kind, customer, issue) in zip(b.rng.sample(range(5100, 5999), 5), issues, strict=True):
        memory = b.add(f"Opened SUP-{number} for {customer}: {issue}.")
        if kind == "distractor":
            b.ask(kind, [f"Which customer reported {issue}?"], customer, [memory])
        else:
            b.ask(kind, [f"Which support ticket covers {customer}'s issue with {issue}?"], f"SUP-{number}", [memory])
    for customer in c[:2]:
        account = f"ACC-{b.digits(5)}"
        b.fact("identifier", [f"{customer}'s account id is {account}."], [f"What is {customer}'s account id?"], account)


SUPPORT_EN_FILL = (
    ("Answered a question from {c} about {topic}.", "Sent {c} the link to the {guide} guide.",
     "{c} said thanks for the quick reply about {topic}.", "Closed a duplicate request from {c} about {topic}.",
     "{c} asked whether {topic} is on the roadmap.", "Followed up with {c} on {topic}; no reply yet."),
    {"c": "Dana Whitfield|Kenji Sato|Maria Gonzalez|Tom Becker|Aisha Khan|Lukas Brandt|Alice Moreau|Noah Fischer",
     "topic": "recurring invoices|the Xero integration|custom invoice numbering|late-payment reminders|user roles|"
              "the API sandbox|credit notes|bank transfers",
     "guide": "getting started|CSV import|invoice templates|API authentication|team permissions"},
)


def support_zh(b: Builder) -> None:
    """The support agent's Chinese-speaking customers (the same session as ``support_en``)."""
    c = b.pick("刘洋|陈静|黄磊|周敏|吴昊", 3)
    invoice = f"INV-{b.digits(6)}"
    b.chain([[f"客户{c[0]}申请退款，{invoice} 被重复扣费。"], [f"{invoice} 的退款已审批，等待财务打款。"],
             [f"{invoice} 的退款已经打款，{c[0]}确认收到了。"]], [f"{c[0]}的 {invoice} 退款现在是什么状态？"], "已经打款")
    b.event([f"客户{c[1]}来电咨询发票抬头怎么修改，约好明天回电。"], [f"{c[1]}是哪天来电咨询发票抬头的？"], day_zh)
    b.add(f"客户{c[2]}的账号是 ACC-{b.digits(5)}，企业版，按年付费。")
    b.add(f"新建了工单 SUP-{b.rng.randrange(6000, 6999)}：客户{c[2]}反馈导出的 PDF 发票中文显示成方框。")


SUPPORT_ZH_FILL = (
    ("回复了{c}关于{topic}的问题。", "把{guide}的帮助文档链接发给了{c}。", "{c}对我们关于{topic}的快速回复表示感谢。",
     "{c}问{topic}有没有排进开发计划。", "跟进了{c}的{topic}问题，对方还没回复。"),
    {"c": "刘洋|陈静|黄磊|周敏|吴昊|郑凯", "topic": "周期性发票|电子发票|发票编号规则|逾期提醒|子账号权限|红字发票",
     "guide": "入门指南|批量导入|发票模板|接口鉴权"},
)


def travel_en(b: Builder) -> None:
    """The travel agent: clients' preferences, bookings, rebookings, trips and booking codes."""
    c = b.pick("Alice Moreau|Bob Okafor|Dana Whitfield|Kenji Sato|Priya Nair|Marco Rossi", 6)
    b.fact("fact", [f"{c[0]} prefers an aisle seat and never flies before 8am."], [f"Which seat does {c[0]} prefer?"],
           "aisle")
    b.fact("fact", [f"{c[1]} is vegetarian: request VGML meals on long flights."],
           [f"Which meal should be requested for {c[1]} on flights?"], "VGML")
    b.fact("fact", [f"{c[2]} collects points with Marriott Bonvoy, so prefer Marriott hotels."],
           [f"Which hotel loyalty programme does {c[2]} use?"], "Marriott Bonvoy")
    flights = [f"{b.one(_l('LH|TP|KL|IB'))} {b.digits(4)}" for _ in range(7)]
    b.chain([[f"Booked {c[3]} on {flights[0]} from Frankfurt to Lisbon."],
             [f"{c[3]}'s Lisbon flight moved from {flights[0]} to {flights[1]} because of the strike."]],
            [f"Which flight is {c[3]} on now for the trip to Lisbon?"], flights[1])
    b.chain([[f"Hotel for {c[4]} in Porto: Hotel Infante Sagres, three nights."],
             [f"Swapped {c[4]}'s Porto hotel from Infante Sagres (overbooked) to the Pestana Vintage."]],
            [f"Which hotel is {c[4]} staying at in Porto?"], "Pestana Vintage")
    b.chain([[f"Rental car for {c[5]} in Madrid: pick-up at 10:00 at the airport."],
             [f"{c[5]}'s rental car pick-up in Madrid changed from 10:00 to 14:30."]],
            [f"What time is {c[5]}'s rental car pick-up in Madrid?"], "14:30")
    for client, city in [(c[0], "Copenhagen"), (c[5], "Athens")]:
        b.event([f"{client} flew to {city} for a conference."], [f"When did {client} fly to {city}?"], day_en)
    early, late = sorted([b.at(), b.at()])
    older = b.add(f"{c[1]} went to Lisbon for a client workshop.", early)
    newer = b.add(f"{c[1]} is back in Lisbon for the product launch.", late)
    b.ask("temporal", [f"When was {c[1]}'s most recent trip to Lisbon?"], day_en(late), [newer], [older])
    code, pnr = f"HC-{b.digits(6)}", "".join(b.rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(6))
    b.fact("identifier", [f"Hotel confirmation for {c[2]} at the Marriott in Vienna: {code}."],
           [f"What is the confirmation code for {c[2]}'s hotel in Vienna?"], code)
    b.fact("identifier", [f"{c[4]}'s booking reference for the Rome flights is {pnr}."],
           [f"What is {c[4]}'s booking reference for the Rome flights?"], pnr)
    for client, (out, back), direction in [(c[0], flights[2:4], "return"), (c[2], flights[4:6], "outbound")]:
        there = b.add(f"Outbound: {client} on {out}, Berlin to Barcelona.")
        home = b.add(f"Return: {client} on {back}, Barcelona to Berlin.")
        wanted = home if direction == "return" else there
        b.ask("distractor", [f"What is the flight number of {client}'s {direction} flight between Berlin and "
                             "Barcelona?"], back if direction == "return" else out, [wanted])


TRAVEL_EN_FILL = (
    ("Checked the visa rules for {country} for {c}.", "Sent {c} three hotel options in {city}.",
     "{c} asked about lounge access at {airport}.", "Price alert: {city} fares dropped to {price} EUR.",
     "{c} wants a quiet room on a high floor in {city}.", "Compared train and flight times to {city} for {c}."),
    {"c": "Alice Moreau|Bob Okafor|Dana Whitfield|Kenji Sato|Priya Nair|Marco Rossi", "country": "Japan|Brazil|India|"
     "Turkey|Kenya", "city": "Lisbon|Porto|Berlin|Vienna|Rome|Madrid|Athens|Oslo", "airport": "Frankfurt|Heathrow|"
     "Schiphol|Munich|Zurich", "price": "|".join(map(str, range(49, 260, 10)))},
)



PLANS = (
    Plan("user:alice", "en", 1, 170, (4, 4, 4, 2, 2), person_en, PERSON_EN_FILL, ("chat", "email", "voice note"),
         "an English-speaking user in Europe", ("Alice", "her")),
    Plan("user:bob", "en", -5, 130, (3, 3, 2, 1, 1), person_en, PERSON_EN_FILL, ("chat", "email"),
         "an English-speaking user in New York; same templates as Alice, other values", ("Bob", "his")),
    Plan("user:wang-fang", "zh", 8, 110, (3, 3, 3, 1, 2), person_zh, PERSON_ZH_FILL, ("微信", "语音"),
         "a Chinese-speaking user", ("王芳", "她")),
    Plan("user:chen-jie", "zh", 8, 70, (2, 2, 1, 0, 1), person_zh, PERSON_ZH_FILL, ("微信",),
         "a Chinese-speaking user; same templates as 王芳, other values", ("陈杰", "他")),
    Plan("project:atlas", "en", 1, 170, (3, 3, 3, 6, 3), project_en, PROJECT_EN_FILL, ("slack", "jira", "github"),
         "an English software project: tickets, files, error codes, migrations, incidents"),
    Plan("project:phoenix", "zh", 8, 120, (2, 2, 2, 3, 1), project_zh, PROJECT_ZH_FILL, ("飞书", "jira", "github"),
         "a Chinese software project with English identifiers"),
    Plan("agent:support-bot", "en", 0, 100, (3, 3, 2, 4, 2), support_en, SUPPORT_EN_FILL, ("zendesk", "email"),
         "a support agent, English customers (shares a ticket id with project:atlas)"),
    Plan("agent:support-bot", "zh", 0, 30, (0, 1, 1, 0, 0), support_zh, SUPPORT_ZH_FILL, ("zendesk",),
         "the same support agent's Chinese-speaking customers"),
    Plan("agent:travel-planner", "en", 1, 100, (2, 3, 3, 2, 2), travel_en, TRAVEL_EN_FILL, ("email", "chat"),
         "a travel agent whose clients share names with other sessions"),
)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m evals.generate_mixed``."""
    parser = argparse.ArgumentParser(prog="python -m evals.generate_mixed", description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help=f"default {DEFAULT_OUTPUT}")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"default {DEFAULT_SEED}")
    args = parser.parse_args(argv)
    cases = generate(args.seed)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(render(cases), encoding="utf-8")
    print(f"wrote {args.output}: {json.dumps(cases['counts'], ensure_ascii=False)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
