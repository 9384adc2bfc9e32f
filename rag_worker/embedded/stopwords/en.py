"""English function words and sentence-opening adverbs (lower case)."""

WORDS: frozenset[str] = frozenset(
    """a an the this that these those there here it its itself we us our ours ourselves you your
    yours yourself yourselves they them their theirs themselves he him his himself she her hers
    herself i me my mine myself one ones oneself who whom whose which what whatever whichever
    whoever whomever when where why how whether

    in on at by for from to of with without into onto over under about above below between among
    amongst through throughout during before after since until till upon within across along
    alongside around against beside besides beyond behind beneath toward towards via per than
    despite except inside outside near off out up down past unlike like versus vs

    and or nor but if unless because although though while whereas so as also either neither both
    whether yet then than thus hence therefore however moreover furthermore nevertheless
    nonetheless otherwise meanwhile instead

    is are was were be been being am has have had having do does did doing done can could would
    should will shall may might must ought need dare let isn't aren't wasn't weren't hasn't
    haven't hadn't don't doesn't didn't won't wouldn't can't cannot couldn't shouldn't mustn't
    i'm you're we're they're it's he's she's that's there's here's what's let's i've you've we've
    they've i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll they'll

    all any some each every no not none nobody nothing noone someone somebody something anyone
    anybody anything everyone everybody everything many much more most less least few fewer
    several such other others another same own enough half

    very too quite rather really just only even ever never always often sometimes usually
    already still again once twice soon later now today tomorrow yesterday tonight almost nearly
    perhaps maybe probably possibly certainly surely indeed actually basically generally
    typically normally usually simply merely especially particularly specifically notably
    namely mostly mainly largely partly fully well anyway anyhow somehow somewhat else elsewhere
    everywhere somewhere anywhere nowhere hereby herein thereby therein thereof whereby wherein
    first second third firstly secondly thirdly finally lastly next last previously recently
    currently originally eventually initially ultimately additionally alternatively
    consequently accordingly similarly likewise conversely unfortunately fortunately hopefully
    ideally obviously clearly apparently evidently overall altogether together apart ahead
    afterwards beforehand meanwhile sometime according including regarding concerning
    provided following considering excluding given

    yes no oh ah ok okay please thanks thank hello hi hey dear
    """.split()
)
