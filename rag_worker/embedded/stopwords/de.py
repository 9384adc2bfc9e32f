"""German function words and sentence-opening adverbs (lower case)."""

WORDS: frozenset[str] = frozenset(
    """der die das den dem des ein eine einen einem einer eines kein keine keinen keinem keiner
    keines dieser diese dieses diesen diesem jener jene jenes jenen jenem jeder jede jedes jeden
    jedem mancher manche manches manchen manchem welcher welche welches welchen welchem solcher
    solche solches solchen solchem alle allem allen aller alles beide beiden beider beides
    einige einigen einiger einiges mehrere mehreren viele vielen vieler wenige wenigen

    ich du er sie es wir ihr mich dich sich uns euch mir dir ihm ihn ihnen mein meine meinem
    meinen meiner meines dein deine deinem deinen deiner deines sein seine seinem seinen seiner
    seines ihre ihrem ihren ihrer ihres unser unsere unserem unseren unserer unseres euer eure
    eurem euren eurer eures man jemand niemand etwas nichts selbst

    wer wen wem wessen was wo woher wohin wann warum wieso weshalb wie womit wodurch wofür
    worauf worüber

    an auf aus bei bis durch für gegen hinter in im ins am ans beim vom von vor zu zum zur mit
    nach neben ohne seit über um unter während wegen zwischen trotz statt innerhalb außerhalb
    gemäß laut mittels entlang samt

    und oder aber sondern denn doch jedoch sowie als ob wenn weil dass daß damit obwohl falls
    sofern solange sobald bevor nachdem indem ehe weder noch entweder sowohl

    bin bist ist sind seid war warst waren wart gewesen sei seien wäre wären werde wirst wird
    werden werdet wurde wurden würde würden worden habe hast hat haben habt hatte hatten hätte
    hätten gehabt kann kannst können könnt konnte konnten könnte könnten muss musst müssen
    müsst musste mussten müsste soll sollst sollen sollt sollte sollten will willst wollen
    wollt wollte wollten darf darfst dürfen dürft durfte dürfte mag magst mögen möchte möchten
    lässt lassen

    nicht auch nur noch schon sehr so dann da dort hier jetzt nun immer nie niemals oft
    manchmal bereits wieder mehr weniger meist meistens fast kaum etwa ganz gar ja nein
    vielleicht eventuell wahrscheinlich möglicherweise natürlich zwar eben gerade bald später
    zuerst zunächst danach dabei dadurch dafür dagegen daher darauf darin darum davon dazu
    deshalb deswegen trotzdem außerdem ebenfalls ebenso jedenfalls allerdings also sonst
    hierbei hierzu hiermit somit insbesondere beispielsweise bzw usw etc erst zuvor stets
    bitte danke hallo
    """.split()
)
