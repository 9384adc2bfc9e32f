"""Word lists used by the built-in, model-free entity extractor.

Kept apart from the extraction logic so the heuristics in the ``text_*`` modules stay
readable. Every list is lowercase and frozen: lookups are ``word.lower() in SET``.
The lists are deliberately small — they only need to catch the common cases that
decide an entity's type or stop a function word from becoming an entity.
"""

from __future__ import annotations

import functools

from .stopwords import ALL_FUNCTION_WORDS, ARTICLES, function_words

# Canonical entity categories. They are the type names of LightRAG 1.5.7's
# default ``entity_types_guidance`` (LightRAG lowercases them on ingest).
PERSON = "Person"
ORGANIZATION = "Organization"
LOCATION = "Location"
EVENT = "Event"
CONCEPT = "Concept"
METHOD = "Method"
CONTENT = "Content"
DATA = "Data"
ARTIFACT = "Artifact"
# Not in LightRAG's default list: the extractor maps them onto "Data" unless the prompt's
# entity types name them (extractor._CATEGORY_FALLBACKS).
DATE = "Date"
QUANTITY = "Quantity"
OTHER = "Other"

MIN_NAME_CHARS = 3  # "R2", "Ge", "EU": two characters name nothing a reader can tell apart

# Function words and pronouns: stripped from the start of a capitalised run
# ("The Acme Corporation" -> "Acme Corporation") and never an entity alone.
LEADING_STOPWORDS: frozenset[str] = frozenset(
    """a an the this that these those there here in on at by for from to of with
    without into onto over under about above below between among through during
    before after since until upon within across along around against and or nor
    but if when while where what which who whom whose why how it its we our ours
    you your yours they them their theirs he him his she her hers i me my mine us
    so as also however therefore thus then than yet still each every all any some
    many most more less few no not yes both either neither such one two three
    first second third finally next now today meanwhile although though because
    unlike like per via do does did is are was were be been being has have had
    can could would should will shall may might must let please""".split()
)

# Capitalised words that are not entities when they stand alone (sentence
# starters, calendar words, document furniture, generic nouns).
SINGLE_STOPWORDS: frozenset[str] = LEADING_STOPWORDS | frozenset(
    """new old note notes see example examples step steps figure fig table chapter
    section part page appendix summary overview introduction conclusion contents
    other another important warning tip tips info todo fixme ok okay yes no true
    false none null nil monday tuesday wednesday thursday friday saturday sunday
    january february march april may june july august september october november
    december today tomorrow yesterday mr mrs ms dr prof sir madam dear hello hi
    thanks thank regards best sincerely question answer task result results input
    output default optional required returns return raises args arguments
    parameters parameter usage install installation setup use using""".split()
)

# Sentence-initial verbs and adverbs that must not start an entity name
# ("Install LightRAG" -> "LightRAG").
INITIAL_VERBS: frozenset[str] = frozenset(
    """install run use add create see call set get make open read check click
    configure start stop build deploy update remove delete write load save import
    export define enable disable select choose pick try note find follow go ask
    send pass return ensure keep consider copy download upload insert query
    explore visit contact join meet welcome thanks store index search fetch pull
    push clone test debug fix apply review compare describe explain list show
    give tell provide learn understand imagine suppose assume recall remember
    today recently currently originally additionally furthermore moreover press type hit
    enter move replace change append tapez appuyez tapez répétez déplacez pulse escriba
    mueva mantenga drücken drücke geben gib tippe bewege""".split()
)

# Lowercase words allowed inside a capitalised run when another capitalised
# word follows ("University of Cambridge", "Bank of the West", "Ludwig van Beethoven").
CONNECTORS: frozenset[str] = frozenset(
    "of the for de la le du da di del der den van von y &".split()
)

PERSON_TITLES: frozenset[str] = frozenset(
    """dr mr mrs ms mx prof professor sir dame lord lady president senator
    minister judge king queen prince princess general captain saint gen col colonel
    maj major lt lieutenant capt admiral adm sgt sergeant governor gov rev reverend
    herr frau monsieur madame mme mlle señor señora sr sra don doña""".split()
)
# "Dr. X", "General X", "Frau X": the name after one of these (capitalised) is a person's.
PERSON_TITLES_BEFORE: frozenset[str] = PERSON_TITLES - frozenset({"don", "sr", "judge", "saint"})

PERSON_ROLE_WORDS: frozenset[str] = frozenset(
    """engineer developer scientist researcher professor author writer founder
    cofounder co-founder ceo cto cfo coo chairman chairwoman chair manager director
    maintainer architect designer student analyst artist lead president
    programmer physicist chemist biologist mathematician economist journalist
    editor lawyer doctor physician nurse teacher lecturer inventor entrepreneur
    investor officer employee intern contributor creator owner executive
    spokesperson spokesman spokeswoman commissioner reporter secretary governor
    mayor ambassador coach player actor actress singer chairperson""".split()
)

PERSON_VERBS: frozenset[str] = frozenset(
    """said says wrote writes joined founded co-founded cofounded leads led
    maintains maintained authored explained argued told tells married born
    retired graduated studied believes believed thinks thought recalled
    recalls""".split()
)

ORG_SUFFIXES: frozenset[str] = frozenset(
    """inc incorporated corp corporation company co ltd limited llc llp plc gmbh ag
    sa bv nv foundation university institute college academy agency association
    society group labs lab laboratory laboratories bank ministry department council
    committee commission organization organisation consortium team club party
    federation union school hospital museum press systems technologies software
    studios studio partners holdings network services solutions industries
    enterprises ventures capital airlines motors pharmaceuticals media records
    publishing trust fund authority bureau office court parliament congress senate
    army navy police church se kg ev e.v verein stiftung universität institut
    gesellschaft verband ministerium sarl sas université fondation société
    universidad fundación sociedad compañía sl""".split()
)

ORG_PREFIXES: frozenset[str] = frozenset(
    """university bank department ministry institute museum college school
    church office bureau council corporation foundation society association agency
    commission committee academy federation stichting fondation fundación verein
    stiftung universität université universidad""".split()
)

# "State of California", "Commonwealth of Virginia": a place named by its kind and name.
LOCATION_PREFIXES: frozenset[str] = frozenset(
    """state commonwealth republic kingdom city county province region district town village
    island isle gulf bay lake mount""".split()
)
# "Santa Clara", "Fort Worth", "Port Louis": a first word that names a place.
PLACE_FIRST_WORDS: frozenset[str] = frozenset("santa san são fort port saint st sankt".split())
COMPASS_WORDS: frozenset[str] = frozenset(
    """north south east west central northern southern eastern western upper lower""".split()
)

# A word right after a name that makes it a piece of software or a product ("the Vim editor",
# "Python 3.11", "Debian packages").
ARTIFACT_FOLLOWERS: frozenset[str] = frozenset(
    """editor interpreter compiler package packages release releases distribution version
    versions program programs repository archive server client library module plugin app
    application tool toolkit framework binary binaries installer sdk api cli daemon kernel""".split()
)

ORG_CUE_WORDS: frozenset[str] = frozenset(
    """company startup firm corporation organization organisation agency nonprofit
    non-profit vendor employer manufacturer publisher subsidiary""".split()
)

LOCATION_SUFFIXES: frozenset[str] = frozenset(
    """city county river mountain mountains mount lake island islands street avenue
    road boulevard valley bay ocean sea park province state republic kingdom
    square bridge airport station harbor harbour coast desert forest peninsula
    region district village town canyon falls gulf strait drive lane""".split()
)

# A small gazetteer: countries and large cities that appear often in documents.
LOCATION_NAMES: frozenset[str] = frozenset(
    """afghanistan argentina australia austria belgium brazil canada chile china
    colombia croatia czechia denmark egypt estonia finland france germany greece
    hungary iceland india indonesia iran iraq ireland israel italy japan kenya
    korea latvia lithuania luxembourg malaysia mexico morocco netherlands nigeria
    norway pakistan peru philippines poland portugal romania russia singapore
    slovakia slovenia spain sweden switzerland taiwan thailand turkey ukraine
    vietnam africa asia europe antarctica america oceania london paris berlin
    madrid rome vienna amsterdam brussels zurich zürich geneva munich hamburg
    frankfurt stockholm oslo copenhagen helsinki dublin lisbon prague warsaw
    budapest athens istanbul moscow beijing shanghai tokyo osaka seoul delhi mumbai
    bangalore sydney melbourne toronto vancouver montreal chicago boston seattle
    austin denver atlanta miami dallas houston california texas york washington
    cambridge oxford edinburgh manchester lyon milan barcelona""".split()
) | frozenset({"new york", "san francisco", "los angeles", "hong kong",
               "united states", "united kingdom", "new zealand", "south africa",
               "silicon valley", "new delhi", "south korea", "north america",
               "south america", "european union"})

# US states and large regions, often met alone ("in Mississippi").
LOCATION_NAMES |= frozenset(
    """alabama alaska arizona arkansas colorado connecticut delaware florida georgia hawaii
    idaho illinois indiana iowa kansas kentucky louisiana maine maryland massachusetts
    michigan minnesota mississippi missouri montana nebraska nevada ohio oklahoma oregon
    pennsylvania tennessee utah vermont virginia wisconsin wyoming bavaria bayern
    scotland wales england catalonia andalusia quebec ontario siberia scandinavia
    netherlands holland uganda""".split()
) | frozenset({"new hampshire", "new jersey", "new mexico", "north carolina", "south carolina",
               "north dakota", "south dakota", "rhode island", "west virginia"})

LOCATION_CUES: tuple[str, ...] = (
    "based in", "located in", "headquartered in", "born in", "moved to",
    "lives in", "living in", "city of", "capital of", "offices in", "office in",
    "north of", "south of", "east of", "west of", "travelled to", "traveled to",
    "near", "outside", "town of", "village of", "county of", "province of", "state of",
    "siege of", "battle of", "arrived at", "arrived in", "marched to", "sailed to",
)

# Month names (EN, DE, FR, ES) for dates: "4 July 1863", "3. Januar 2022", "1 de enero de 2020".
MONTHS: frozenset[str] = frozenset(
    """january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec januar februar märz mai juni juli oktober
    dezember janvier février mars avril juin juillet août septembre octobre novembre décembre
    enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre""".split()
)

EVENT_SUFFIXES: frozenset[str] = frozenset(
    """conference summit war festival olympics championship election meeting
    workshop symposium expo revolution crisis hackathon ceremony tournament cup
    congress convention forum awards games battle treaty""".split()
)

CONTENT_SUFFIXES: frozenset[str] = frozenset(
    """report book paper journal article magazine guide manual handbook
    specification documentation film movie album series whitepaper novel thesis
    dissertation newsletter blog podcast encyclopedia dictionary bible act
    readme tutorial license licence agreement""".split()
)

DATA_SUFFIXES: frozenset[str] = frozenset(
    """dataset datasets corpus database benchmark statistics index census survey
    metrics table""".split()
)

METHOD_SUFFIXES: frozenset[str] = frozenset(
    """algorithm method technique procedure process approach strategy workflow
    regression descent sort search protocol pipeline analysis""".split()
)

ARTIFACT_SUFFIXES: frozenset[str] = frozenset(
    """library sdk api server client engine platform framework tool toolkit app
    application service plugin extension module package compiler editor browser
    device processor chip robot car phone cli runtime interpreter driver""".split()
)

CONCEPT_SUFFIXES: frozenset[str] = frozenset(
    """theory principle theorem law paradigm architecture pattern hypothesis
    concept model doctrine philosophy""".split()
)

# Common given names: a weak person cue for two-or-three-word runs.
GIVEN_NAMES: frozenset[str] = frozenset(
    """james john robert michael william david richard joseph thomas charles
    christopher daniel matthew anthony mark donald steven paul andrew joshua
    kenneth kevin brian george timothy ronald edward jason jeffrey ryan jacob gary
    nicholas eric jonathan stephen larry justin scott brandon benjamin samuel
    gregory alexander frank patrick raymond jack dennis jerry tyler aaron jose adam
    henry nathan douglas peter kyle walter ethan jeremy harold keith christian
    roger noah gerald carl terry sean austin arthur lawrence jesse dylan bryan joe
    jordan billy bruce albert willie gabriel logan alan juan wayne roy ralph
    randy eugene vincent russell elijah louis bobby philip johnny mary patricia
    jennifer linda elizabeth barbara susan jessica sarah karen nancy lisa betty
    margaret sandra ashley kimberly emily donna michelle dorothy carol amanda
    melissa deborah stephanie rebecca sharon laura cynthia kathleen amy shirley
    angela helen anna brenda pamela nicole emma samantha katherine christine debra
    rachel catherine carolyn janet ruth maria heather diane virginia julie joyce
    victoria olivia kelly christina lauren joan evelyn judith megan cheryl andrea
    hannah martha jacqueline frances gloria ann teresa kathryn sara janice jean
    alice madison doris abigail julia judy grace denise amber marilyn beverly
    danielle theresa sophia marie diana brittany natalie isabella charlotte rose
    alexis kayla bob alex sam max tom tim ben dan jim bill ted ada grace alan
    linus guido ada marie ali omar fatima ahmed mohammed muhammad wei li chen
    yuki hiroshi kenji akira raj priya ravi anil sunil arjun carlos luis miguel
    pedro juan sofia lucia elena ivan olga dmitri sergei anna hans klaus jurgen
    jürgen pierre jean marie francois françois giovanni marco luca paolo ingrid
    lars sven bjorn björn erik nils astrid freya chris ulysses abraham bram guido
    richard tim steve adrien dominique jacques françoise joachim wolfgang stefan andreas
    markus thorsten jörg uwe werner manuel javier jorge francisco antonio alejandro""".split()
)

# Generic English stopwords used for relation keywords and query keywords.
STOPWORDS: frozenset[str] = LEADING_STOPWORDS | frozenset(
    """am isn't aren't wasn't weren't don't doesn't didn't won't can't cannot
    just only very really quite too much lot lots thing things way ways something
    anything everything nothing someone anyone everyone get gets got getting make
    makes made making use used uses using tell me explain describe list show find
    give please know known want need needs needed like likes e.g i.e etc other
    others own same into out up down off again further once well back even ever
    never always often usually sometimes already perhaps maybe about against
    among whether whatever whichever whoever""".split()
)

# Interrogatives and request verbs removed from queries before keyword picking.
QUERY_STOPWORDS: frozenset[str] = STOPWORDS | frozenset(
    """what which who whom whose when where why how does do did is are was were
    can could would should tell show give explain describe list find summarize
    summarise define mean means meaning info information detail details
    regarding""".split()
)


@functools.lru_cache(maxsize=8)
def leading_words(language: str) -> frozenset[str]:
    """Words stripped from the start of a capitalised run in a text of ``language`` (and the
    articles of every language: a chunk of a German manual may read as English)."""
    return LEADING_STOPWORDS | ARTICLES | function_words(language)


@functools.lru_cache(maxsize=8)
def single_stopwords(language: str) -> frozenset[str]:
    """Capitalised words that are never a name alone, whatever the text's language."""
    return _SINGLE_ANY_LANGUAGE | function_words(language)


@functools.lru_cache(maxsize=8)
def keyword_stopwords(language: str) -> frozenset[str]:
    """Words that are never a relation keyword in a text of ``language``."""
    return STOPWORDS | function_words(language)


_SINGLE_ANY_LANGUAGE: frozenset[str] = SINGLE_STOPWORDS | STOPWORDS | MONTHS | ALL_FUNCTION_WORDS
