"""Spanish, German and French questions, read through their English words.

Teams ask in their own language ("3 Epochen über 20.000 Beispiele, bis Freitag", "LoRA sur
gemma-2-2b, 10k exemples, en 6 heures"). Rather than a second grammar per language, a word
of such a question is read as the English word the rules know (its normalised form changes;
the word as typed stays, so the answer quotes it). A question is read this way when one of
its words is a unit, count or magnitude of :data:`WORDS` ("Epochen", "Mio"), or at least
:data:`MIN_WORDS` are glue words of :data:`GLUE`: one glue word alone ("de" in a name, "mit")
leaves an English question as it is.

These languages also group thousands with a dot or a space ("50.000 ejemplos", "1.500 €",
"5 000 €"), where English writes a comma, and write decimals with a comma ("1,5 Mio.");
in such a question a number of 1–3 digits followed by groups of exactly three is read as
one whole number, and a comma before one or two digits as a decimal point
(:func:`grouped_thousands`, :func:`translate`). In an English question "50.000" stays
ambiguous and is asked about.
"""

from __future__ import annotations

import re

__all__ = [
    "GLUE",
    "MIN_WORDS",
    "PHRASES",
    "WORDS",
    "grouped_thousands",
    "reads_foreign",
    "translate",
]

#: How many glue words (:data:`GLUE`) make a question Spanish, German or French (ours: two,
#: so one stray word of an English question translates nothing).
MIN_WORDS = 2


def _table(english: str, words: str) -> dict[str, str]:
    return dict.fromkeys(words.split(), english)


#: Normalised word (case-folded; see :mod:`recommender.parsing._scan`) → the English word the
#: rules read: units, counts, magnitudes, money, days and methods. None is an English word,
#: so one of them makes a question Spanish, German or French.
WORDS: dict[str, str] = {
    # durations
    **_table("minutes", "minutos minuten"),
    **_table("hours", "horas stunden heures"),
    **_table("hour", "hora stunde heure"),
    **_table("days", "días dias tage tagen jours"),
    **_table("day", "día dia jour"),
    **_table("weeks", "semanas wochen semaines"),
    **_table("week", "semana woche semaine"),
    **_table("months", "meses monate monaten mois"),
    # work units
    **_table("epochs", "épocas epocas epochen époques epoques"),
    **_table("epoch", "época epoca epoche époque epoque"),
    **_table(
        "examples",
        "ejemplos muestras registros beispiele beispielen datensätze datensätzen exemples"
        " échantillons echantillons",
    ),
    **_table(
        "conversations",
        "conversaciones gespräche gesprächen unterhaltungen dialoge dialogen diálogos dialogos",
    ),
    **_table("pairs", "pares paare paaren paires"),
    **_table("images", "imágenes imagenes bilder bildern"),
    **_table("steps", "pasos schritte étapes etapes"),
    **_table("prompts", "instrucciones"),
    **_table("nodes", "nodos knoten nœuds noeuds"),
    # magnitudes: "50 mil", "200 Mio.", "2 Mrd.", "300 millions", "3 milliards"
    **_table("thousand", "tausend"),
    **_table("million", "millones millón millon mio millionen"),
    **_table("billion", "mrd milliarden milliarde milliards milliard"),
    # Spanish counts on the long scale: a "billón" is a million millions
    **_table("trillion", "billón billones"),
    # spot instances ("Spot-Instanzen ok"), a negation ("kein AWS")
    **_table("spot-instances", "spot-instanzen spot-instanz"),
    **_table("instances", "instanzen instancias"),
    **_table("no", "kein keine keinen ningún ningun ninguna"),
    # money
    **_table("budget", "presupuesto"),
    # weekdays and relative days
    **_table("monday", "lunes montag lundi"),
    **_table("tuesday", "martes dienstag mardi"),
    **_table("wednesday", "miércoles miercoles mittwoch mercredi"),
    **_table("thursday", "jueves donnerstag jeudi"),
    **_table("friday", "viernes freitag vendredi"),
    **_table("saturday", "sábado sabado samstag samedi"),
    **_table("sunday", "domingo sonntag dimanche"),
    **_table("tomorrow", "mañana manana morgen demain"),
    # methods
    **_table("full", "completo completa vollständig vollstandig komplett complet complète"),
    **_table("finetune", "feintunen finetunen feinabstimmen nachtrainieren"),
    **_table("finetuning", "feintuning feinabstimmung"),
    **_table("pretraining", "preentrenamiento vortraining pré-entraînement"),
    **_table("pretrain", "preentrenar vortrainieren pré-entraîner préentraîner"),
    **_table("train", "entrenar entrenamiento trainieren entraîner entrainer"),
}
#: Phrases of several words read as one English word ("50 mil millones": 50 billion;
#: "desde cero": from scratch); the words are joined into one (still a slice of the text).
PHRASES: dict[tuple[str, ...], str] = {
    ("mil", "millones"): "billion",
    ("desde", "cero"): "from-scratch",
    ("de", "cero"): "from-scratch",
    ("von", "grund", "auf"): "from-scratch",
    ("à", "partir", "de", "zéro"): "from-scratch",
    ("en", "menos", "de"): "within",
    ("pas", "de"): "no",  # "pas de spot"
    ("cada", "uno"): "each",
    ("antes", "del"): "before",
    ("antes", "de"): "before",
    ("hasta", "el"): "by",
    ("avant", "le"): "before",
    ("bis", "zum"): "by",
    ("vor", "dem"): "before",
    ("cada", "una"): "each",
}
_LONGEST_PHRASE = max(len(words) for words in PHRASES)
_PHRASE_NORMS = {"-".join(words): english for words, english in PHRASES.items()}

#: The glue words of such a question: read as English only in a question that is Spanish,
#: German or French by its other words (several are English words or parts of names too).
GLUE: dict[str, str] = {
    **_table("thousand", "mil"),  # "50 mil ejemplos"; English "mil" is a unit of length
    **_table("million", "millions"),  # French, and English
    **_table("without", "sin ohne sans"),
    **_table("by", "bis hasta d'ici spätestens"),
    **_table("max", "höchstens maximal máximo"),
    **_table("before", "antes avant vor"),
    **_table("for", "durante während pendant para für pour"),
    **_table("in", "en dans innerhalb"),
    **_table("on", "sobre über auf sur"),
    **_table("with", "con mit avec"),
    **_table("of", "de del von"),
    **_table("per", "por"),
    **_table("at", "à"),
    **_table("each", "cada jede jeder chaque je"),  # German "je"; French "je" (I) reads alike
    **_table("model", "modelo modell modells modèle modele"),
    **_table("we", "wir nous nosotros"),
    **_table("a", "un una une ein eine einen einem"),  # one: "une A100" is one card
    **_table("no", "pas"),  # French "(ne …) pas": not
    **_table("have", "haben tenemos avons"),
    **_table("full", "voll"),
    **_table("and", "und"),
    **_table("only", "solamente nur seulement uniquement"),
    **_table(
        "the",
        "el la los las der die das dem den le les des du"
        " au aux quiero queremos hacer wollen möchten mochten voulons veux"
        " faire machen cuánto cuanto cuesta kostet combien coûte coute",
    ),
}

#: "50.000", "€1.500", "1.500€", and "5-000" (a space-grouped number, normalised).
_GROUPED = re.compile(r"(?P<sym>[$€£]?)(?P<n>[1-9][0-9]{0,2}(?:[.-][0-9]{3})+)(?P<rest>[^0-9.-]*)")
_GROUP = re.compile(r"[0-9]{3}[€$£]?")
_LEAD = re.compile(r"[$€£]?[1-9][0-9]{0,2}(?:[ \u00a0\u202f][0-9]{3})*")
_DECIMALS = re.compile(r"[0-9]{1,2}(?:[a-zA-Z]{1,3})?")  # "5" of "1,5", "5k" of "1,5k"
_WHOLE = re.compile(r"[$€£]?[0-9]+")
_DECIMAL_COMMA = re.compile(r"(?P<n>[$€£]?[0-9]+),(?P<d>[0-9]{1,2})(?P<rest>[^0-9]*)")
_ELIDED = re.compile(r"^(?:d|l|qu|j|n|s)'(?=[a-zà-ÿ0-9])")
_SEPARATORS = (" ", "\u00a0", "\u202f")  # a space, a no-break space, a narrow one


def reads_foreign(norm: tuple[str, ...]) -> bool:
    """Whether a question's normalised words are Spanish, German or French: one word of
    :data:`WORDS`, or :data:`MIN_WORDS` of :data:`GLUE`."""
    return any(word in WORDS for word in norm) or sum(w in GLUE for w in norm) >= MIN_WORDS


def translate(word: str) -> str:
    """A normalised word as English: its entry in :data:`WORDS` or :data:`GLUE` (a compound's
    parts each), "50.000" as "50000", "1,5" as "1.5", "d'AWS" as "aws"."""
    if m := _GROUPED.fullmatch(word):
        return m["sym"] + re.sub("[.-]", "", m["n"]) + m["rest"]
    if m := _DECIMAL_COMMA.fullmatch(word):  # "1,5": one and a half
        return f"{m['n']}.{m['d']}{m['rest']}"
    if word in _PHRASE_NORMS:
        return _PHRASE_NORMS[word]
    if word in WORDS or word in GLUE:
        return WORDS.get(word) or GLUE[word]
    if _ELIDED.match(word):  # French "d'AWS", "l'époque": the word after the apostrophe
        return translate(_ELIDED.sub("", word))
    if "-" in word and not word[0].isdigit():  # "LoRA-Feintuning": each part of a compound
        return "-".join(WORDS.get(part) or part for part in word.split("-"))
    return word


def _phrases(raw: list[str], text: str) -> list[str]:
    """``raw`` with the words of each of :data:`PHRASES` joined into one."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        for span in range(min(_LONGEST_PHRASE, len(raw) - i), 1, -1):
            words = tuple(w.casefold() for w in raw[i : i + span])
            joined = " ".join(raw[i : i + span])
            if words in PHRASES and joined in text:
                out.append(joined)
                i += span
                break
        else:
            out.append(raw[i])
            i += 1
    return out


def grouped_thousands(raw: list[str], text: str, *, zeros_only: bool = False) -> list[str]:
    """Words of ``raw`` (slices of ``text``) with a space-grouped number joined into one,
    and a decimal comma's two sides: "5 000 €" is "5 000" and "€", "1,5 Mio." is "1,5" and
    "Mio" (each still a slice of the text). ``zeros_only`` (an English question): only a
    group of "000" joins ("40 000 samples"), so "8 128" stays two numbers."""
    out: list[str] = []
    for word in raw if zeros_only else _phrases(raw, text):
        last = out[-1] if out else ""
        decimal = _DECIMALS.fullmatch(word) and _WHOLE.fullmatch(last) and f"{last},{word}" in text
        if decimal and not zeros_only:
            out[-1] = f"{last},{word}"
        elif (
            _GROUP.fullmatch(word)
            and _LEAD.fullmatch(last)
            and (word[:3] == "000" or not zeros_only)
        ):
            for sep in _SEPARATORS:
                if f"{last}{sep}{word}" in text:
                    out[-1] = f"{last}{sep}{word}"
                    break
            else:
                out.append(word)
        else:
            out.append(word)
    return out
