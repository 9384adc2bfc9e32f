"""Spanish function words and sentence-opening adverbs (lower case)."""

WORDS: frozenset[str] = frozenset(
    """el la los las lo un una unos unas al del este esta estos estas ese esa esos esas aquel
    aquella aquellos aquellas mi mis tu tus su sus nuestro nuestra nuestros nuestras vuestro
    vuestra vuestros vuestras cada todo toda todos todas otro otra otros otras mismo misma
    mismos mismas algún alguno alguna algunos algunas ningún ninguno ninguna varios varias
    cierto cierta ciertos ciertas tal tales cual cuales cualquier

    yo tú él ella ello nosotros nosotras vosotros vosotras ellos ellas usted ustedes me te se
    nos os le les mí ti sí conmigo contigo consigo que qué quien quién quienes cuyo cuya
    cuyos cuyas cuál cuáles donde dónde cuando cuándo como cómo cuanto cuánto

    a ante bajo con contra de desde durante en entre hacia hasta mediante para por según sin
    sobre tras excepto salvo

    y e o u ni pero sino aunque porque pues si mientras entonces así luego además embargo
    también tampoco

    es son era eran fue fueron ser sido siendo soy eres somos sois está están estaba estaban
    estar estado he has ha hemos habéis han había habían haber hay puede pueden podría
    podrían debe deben debería tiene tienen tener hace hacen hacer

    no sí muy más menos tan tanto ya aún todavía siempre nunca jamás también solo sólo
    aquí allí ahí ahora antes después luego quizá quizás tal vez acaso casi bastante mucho
    muchos mucha muchas poco pocos poca pocas demasiado primero finalmente incluso
    especialmente además gracias hola
    """.split()
)
