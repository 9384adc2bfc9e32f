"""French function words and sentence-opening adverbs (lower case)."""

WORDS: frozenset[str] = frozenset(
    """le la les l un une des du de d au aux ce cet cette ces mon ma mes ton ta tes son sa ses
    notre nos votre vos leur leurs quel quelle quels quelles quelque quelques chaque tout toute
    tous toutes aucun aucune plusieurs certains certaines autre autres même mêmes tel telle
    tels telles

    je tu il elle on nous vous ils elles me te se moi toi lui eux soi y en leur celui celle
    ceux celles ceci cela ça qui que quoi dont où lequel laquelle lesquels lesquelles
    auquel duquel

    à dans par pour sur sous avec sans chez vers entre contre depuis pendant avant après
    devant derrière selon malgré parmi jusque jusqu hors outre via envers dès

    et ou mais donc or ni car si comme quand lorsque puisque parce quoique tandis alors ainsi
    cependant pourtant toutefois néanmoins sinon soit

    est sont était étaient été être es suis sommes êtes sera seront serait seraient fut
    soit soient ai as a avons avez ont avait avaient avoir eu aura auront aurait auraient
    peut peuvent pouvez pouvons pourrait pourraient doit doivent devez devons devrait faut
    fait font faire

    ne pas plus moins très trop bien aussi encore déjà toujours jamais souvent parfois
    ici là maintenant alors puis ensuite enfin d'abord peut-être probablement vraiment
    surtout notamment également seulement presque assez beaucoup peu tant tellement
    oui non merci bonjour voici voilà
    """.split()
)
