"""Generated documents for benchmarks and profiling: two-page reports with varied vocabulary
(people, organisations, places, products, events, topical words) and, for benchmarks, one
planted fact per document with the question that finds it."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

_FIRST = ("Alice", "Rahul", "Grace", "Kenji", "Fatima", "Lars", "Sofia", "Marco", "Priya", "Omar",
          "Ingrid", "Carlos", "Elena", "Hiroshi", "Nicole", "Pierre", "Astrid", "Ravi", "Julia", "Sven")
_LAST = ("Johnson", "Mehta", "Okafor", "Tanaka", "Haddad", "Nilsson", "Ricci", "Moreau", "Kowalski",
         "Schneider", "Alvarez", "Novak", "Fischer", "Dubois", "Larsen", "Costa", "Petrov", "Yamada")
_ORGS = ("Acme Corporation", "Initech Inc", "Globex Corporation", "Umbrella Labs", "Stark Industries",
         "Wayne Enterprises", "Cyberdyne Systems", "Hooli Inc", "Vandelay Industries", "Soylent Corporation",
         "Tyrell Corporation", "Aperture Science", "Massive Dynamics", "Oscorp Industries",
         "Northwind Traders", "Contoso Ltd", "Fabrikam Inc", "Open Compute Foundation",
         "Apache Software Foundation", "University of Leeds", "Technical University of Munich",
         "Institute of Data Science", "Nordic Energy Agency", "Harbor Logistics Group")
_CITIES = ("Berlin", "Paris", "London", "Tokyo", "Madrid", "Rome", "Vienna", "Oslo", "Stockholm",
           "Amsterdam", "Lisbon", "Dublin", "Zurich", "Seoul", "Toronto", "Boston", "Chicago", "Sydney",
           "Singapore", "Mumbai", "Nairobi", "Lagos", "Warsaw", "Prague")
_PRODUCTS = ("Nimbus Scheduler", "Orion Relay", "Atlas Gateway", "Helix Store", "Quasar Engine",
             "Vega Dashboard", "Pulsar Queue", "Comet Cache", "Nova Indexer", "Zenith Planner",
             "Aurora Ledger", "Titan Router", "Polaris Monitor", "Lumen Tracer", "Cobalt Vault",
             "Ember Pipeline", "Falcon Compiler", "Gemini Sync", "Halo Firewall", "Iris Search",
             "StreamForge", "DataWeave", "GraphLoom", "TaskPilot", "LogHarbor", "MetricFlow",
             "PostgreSQL", "Kubernetes", "Redis", "Kafka", "TensorFlow", "PyTorch")
_EVENTS = ("KubeCon Europe", "PyCon Summit", "Data Council Conference", "Open Source Summit",
           "Cloud Native Forum", "Strata Data Conference", "Web Summit", "Supply Chain Expo")
_METHODS = ("Raft Consensus Algorithm", "Gradient Descent", "Merge Sort", "Bloom Filter Technique",
            "Consistent Hashing Approach", "Monte Carlo Method", "Kalman Filter Method",
            "Dynamic Programming Approach", "Paxos Protocol", "Two Phase Commit Protocol")
_TOPICS = (Path(__file__).with_name("corpus_topics.txt")).read_text(encoding="utf-8").split()
_VERBS = ("improves", "reduces", "tracks", "replicates", "schedules", "validates", "compresses",
          "stores", "monitors", "forecasts", "balances", "encrypts", "aggregates", "routes", "audits")


def _person(rnd: random.Random) -> str:
    return f"{rnd.choice(_FIRST)} {rnd.choice(_LAST)}"


def _topic_sentence(rnd: random.Random) -> str:
    words = [rnd.choice(_TOPICS) for _ in range(rnd.randint(7, 15))]
    words.insert(rnd.randrange(1, len(words)), rnd.choice(_VERBS))
    if rnd.random() < 0.3:
        words.append(f"in {rnd.randint(2001, 2024)}")
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


# Sentence templates; each {slot} is drawn in order: a word list by name, `person`, `topic`
# (the sentence's topic, drawn first), `verb_stem`, or `lo-hi` for a number.
_ENTITY_TEMPLATES = (
    "{person} of {org} presented the {product} at {event} {2015-2024} in {city}.",
    "The {product} uses the {method} to {verb_stem} {topic} data across {2-40} {topics} nodes.",
    "{person} said the {topic} {topics} improved {topics} by {3-60} percent after the move to {product}.",
    "{org} opened an office in {city} to support its {topic} and {topics} teams.",
    "Dr. {person}, the chief {topic} officer at {org}, reviewed the {topics} report with {person}.",
    "The {product} {verb} every {topic} with the {product} before the {topics} review.",
    "According to {org}, the {topic} {topics} in {city} grew to {100-99999} units in {2001-2024}.",
)
_SLOT_WORDS = {"org": "_ORGS", "product": "_PRODUCTS", "event": "_EVENTS", "city": "_CITIES",
               "method": "_METHODS", "topics": "_TOPICS", "verb": "_VERBS"}


def _entity_sentence(rnd: random.Random) -> str:
    kind = rnd.randrange(8)
    topic = rnd.choice(_TOPICS)
    if kind == len(_ENTITY_TEMPLATES):
        return _topic_sentence(rnd)

    def fill(slot: re.Match[str]) -> str:
        name = slot.group(1)
        if name == "topic":
            return topic
        if name == "person":
            return _person(rnd)
        if name == "verb_stem":
            return rnd.choice(_VERBS)[:-1]
        if "-" in name:
            low, high = name.split("-")
            return str(rnd.randint(int(low), int(high)))
        return str(rnd.choice(globals()[_SLOT_WORDS[name]]))

    return re.sub(r"\{([\w-]+)\}", fill, _ENTITY_TEMPLATES[kind])


#: A planted fact, found again by the --queries check in every query mode.
PLANTED_FACT = "The secret launch code for the Orion Relay is ZEBRA-7741."
PLANTED_QUESTION = "What is the secret launch code for the Orion Relay?"
PLANTED_ANSWER = "ZEBRA-7741"


def generated_pages(number: int, *, seed: int = 7, page_chars: int = 2600,
                    markdown: bool = False) -> tuple[str, list[str]]:
    """Title and the two pages of generated document ``number`` (deterministic per seed)."""
    rnd = random.Random(seed * 100_003 + number)
    product = rnd.choice(_PRODUCTS)
    title = f"{product} {rnd.choice(_TOPICS).title()} Report {number}"
    pages: list[str] = []
    for page_no in range(2):
        lines: list[str] = [f"# {title}" if markdown else title] if page_no == 0 else []
        size = 0
        section = 0
        while size < page_chars:
            section += 1
            heading = f"{rnd.choice(_TOPICS).title()} and {rnd.choice(_TOPICS).title()}"
            lines.append(f"\n## {heading}" if markdown else f"\n{page_no + 1}.{section} {heading}")
            paragraph = []
            for _ in range(rnd.randint(4, 7)):
                sentence = _entity_sentence(rnd) if rnd.random() < 0.55 else _topic_sentence(rnd)
                paragraph.append(sentence)
            if number == 17 and page_no == 1 and section == 1:
                paragraph.insert(2, PLANTED_FACT)
            text = " ".join(paragraph)
            lines.append(text)
            size += len(text) + len(heading)
        pages.append("\n".join(lines))
    return title, pages


def generated_documents(count: int, *, seed: int = 7, fmt: str = "pdf") -> list[tuple[str, str]]:
    """``count`` (file name, text) pairs of two-page documents, through PDF unless ``fmt`` is text."""
    from rag_worker.ingest.pdf import extract_pdf
    from tests.fixtures.documents import make_pdf

    docs = []
    for number in range(count):
        title, pages = generated_pages(number, seed=seed, markdown=(fmt == "text"))
        if fmt == "text":
            docs.append((f"generated-{number:03d}.md", "\n\n".join(pages)))
        else:
            latin = [p.encode("latin-1", "replace").decode("latin-1") for p in pages]
            text = extract_pdf(make_pdf(latin, title=title)).text
            docs.append((f"generated-{number:03d}.pdf", text))
    return docs


def generated_questions(count: int, *, seed: int = 3) -> list[str]:
    """`count` different questions a user of the generated reports could ask, each naming a person,
    an organisation, a product and a city the reports name (most of them in thousands of reports at
    5,000 documents: what a local question's relation ranking has to read)."""
    rnd = random.Random(seed)
    asked: dict[str, None] = {}
    while len(asked) < count:
        asked[f"What did {_person(rnd)} of {rnd.choice(_ORGS)} say about the {rnd.choice(_PRODUCTS)} "
              f"in {rnd.choice(_CITIES)}?"] = None
    return list(asked)


@dataclass(frozen=True)
class BenchDoc:
    """A generated PDF with one fact that only it contains."""

    name: str
    pdf: bytes
    pages: int
    question: str
    answer: str


_CODES = ("HERON", "LYNX", "OSPREY", "KESTREL", "MARLIN", "PUMA", "IBEX", "CONDOR", "TAPIR", "EGRET")


def bench_documents(count: int, *, seed: int = 11) -> list[BenchDoc]:
    """`count` two-page PDFs; document i states who built the device coded `<NAME>-<i>`."""
    from tests.fixtures.documents import make_pdf

    docs = []
    for number in range(count):
        rnd = random.Random(seed * 7919 + number)
        title, pages = generated_pages(number, seed=seed)
        code = f"{_CODES[number % len(_CODES)]}-{1000 + number}"
        builder = _person(rnd)
        fact = f"The {code} prototype was built by {builder} in {rnd.choice(_CITIES)}."
        pages[1] = fact + " " + pages[1]
        latin = [page.encode("latin-1", "replace").decode("latin-1") for page in pages]
        docs.append(
            BenchDoc(
                name=f"report-{number:04d}.pdf",
                pdf=make_pdf(latin, title=title),
                pages=len(pages),
                question=f"Who built the {code} prototype?",
                answer=builder,
            )
        )
    return docs


@dataclass(frozen=True)
class MaintenanceReport:
    """A maintenance report quoting a part number, an e-mail address, a fault code, a firmware
    version and an amount (`values`, by kind), each in its own sentence among similar ones."""

    name: str
    text: str
    values: dict[str, str]


#: A question per kind of value; `{}` is the value quoted.
MAINTENANCE_QUESTIONS = {
    "part": "Which maintenance report lists the replacement part {}?",
    "email": "Which report was sent by {}?",
    "fault": "Where was fault code {} logged?",
    "firmware": "Which unit was updated to firmware {}?",
    "amount": "Which repair was invoiced at {} euros?",
}
_SITES = ("north pumping station", "harbour crane", "cold store", "paint line", "boiler house", "press shop")


def maintenance_reports(count: int, *, seed: int = 28) -> list[MaintenanceReport]:
    """`count` similar reports: the same sentences around different codes, addresses and amounts."""
    reports = []
    for number in range(count):
        rnd = random.Random(seed * 7919 + number)
        first, last = rnd.choice(_FIRST), rnd.choice(_LAST)
        values = {
            "part": f"{''.join(rnd.choices('ABCDEFGHKLMNPRSTVX', k=2))}-{rnd.randint(1000, 9999)}-"
                    f"{''.join(rnd.choices('ABCDEFGHKLMNPRSTVX', k=2))}",
            "email": f"{first.lower()}.{last.lower()}{rnd.randint(10, 99)}@{rnd.choice(('plant', 'service', 'fleet'))}"
                     f"-{rnd.choice(_CITIES).lower()}.example.com",
            "fault": f"E{rnd.randint(10000, 99999)}",
            "firmware": f"v{rnd.randint(1, 12)}.{rnd.randint(0, 99)}.{rnd.randint(100, 999)}",
            "amount": f"{rnd.randint(10, 99)},{rnd.randint(100, 999)}.{rnd.randint(10, 99)}",
        }
        site = rnd.choice(_SITES)
        sentences = [
            f"Maintenance report {number + 1} for the {site}.",
            f"The technician replaced the worn bearing assembly with part {values['part']} after the vibration check.",
            _topic_sentence(rnd), _topic_sentence(rnd),
            f"Questions about this visit go to {values['email']}, who signed the work order.",
            f"The controller logged fault code {values['fault']} twice during the night shift before the stop.",
            _topic_sentence(rnd), _topic_sentence(rnd), _topic_sentence(rnd),
            f"The drive unit was updated to firmware {values['firmware']} and passed the acceptance test.",
            _topic_sentence(rnd), _topic_sentence(rnd),
            f"The repair was invoiced at {values['amount']} euros including parts and labour.",
            _topic_sentence(rnd), _topic_sentence(rnd), _topic_sentence(rnd),
        ]
        reports.append(MaintenanceReport(f"maintenance-{number:04d}.md", " ".join(sentences), values))
    return reports

