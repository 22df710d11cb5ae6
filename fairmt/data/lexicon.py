"""fairmt's own curated English gender lexicon.

Each entry is ``male female [neutral]``: a masculine word, its feminine counterpart and, where English has one,
a gender-neutral replacement (used by counterfactual augmentation to make the neutral version of a text). The
list was written for this project by category (pronouns, family, titles and address, occupations and roles,
nobility and religion, people and animals), singular and plural forms both listed.

Ambiguous words are handled by rules in :mod:`fairmt.data.gender`, not by this table:

* ``her`` is possessive (→ ``his``) or object (→ ``him``), decided from the next token;
* ``his`` is a determiner (→ ``her``) or a possessive pronoun standing alone (→ ``hers``);
* words with a common non-gendered sense (``miss``, ``master``, ``bachelor``, ``sir`` as a verb, ``prince`` in
  names, ``madam``) are listed in :data:`AMBIGUOUS`: they are swapped but not used to *detect* gender.

Coverage of the published lists in ``lexicons/`` (gn_glove, bias-bench) is measured by
``scripts/lexicon_coverage.py`` and tested in ``tests/data/test_lexicon.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

# male  female  [neutral]   -- one entry per line; "-" means no neutral form
_TABLE = """
he she they
him her them
his her their
himself herself themselves
his hers theirs
man woman person
men women people
boy girl child
boys girls children
gentleman lady person
gentlemen ladies people
guy gal person
guys gals people
male female person
males females people
masculine feminine -
manhood womanhood adulthood
boyhood girlhood childhood
boyish girlish childish
manly womanly -
father mother parent
fathers mothers parents
dad mom parent
dads moms parents
daddy mommy parent
daddies mommies parents
papa mama parent
pa ma parent
son daughter child
sons daughters children
brother sister sibling
brothers sisters siblings
brotherhood sisterhood siblinghood
brotherly sisterly -
husband wife spouse
husbands wives spouses
groom bride spouse
grooms brides spouses
bridegroom bride spouse
bridegrooms brides spouses
boyfriend girlfriend partner
boyfriends girlfriends partners
fiance fiancee fiance
fiances fiancees fiances
widower widow widowed person
widowers widows widowed people
uncle aunt relative
uncles aunts relatives
nephew niece relative
nephews nieces relatives
grandfather grandmother grandparent
grandfathers grandmothers grandparents
grandpa grandma grandparent
grandpas grandmas grandparents
granddad granny grandparent
grandson granddaughter grandchild
grandsons granddaughters grandchildren
godfather godmother godparent
godfathers godmothers godparents
godson goddaughter godchild
godsons goddaughters godchildren
stepfather stepmother stepparent
stepfathers stepmothers stepparents
stepson stepdaughter stepchild
stepsons stepdaughters stepchildren
stepbrother stepsister stepsibling
stepbrothers stepsisters stepsiblings
father-in-law mother-in-law parent-in-law
son-in-law daughter-in-law child-in-law
brother-in-law sister-in-law sibling-in-law
patriarch matriarch elder
patriarchs matriarchs elders
paternal maternal parental
paternity maternity parenthood
fatherhood motherhood parenthood
fraternal sororal -
fraternity sorority -
fraternities sororities -
mr mrs mx
mr ms mx
sir madam -
sirs madams -
lord lady -
lords ladies -
master mistress -
masters mistresses -
mister missus -
monsieur madame -
signor signora -
senor senora -
herr frau -
king queen monarch
kings queens monarchs
prince princess royal
princes princesses royals
duke duchess noble
dukes duchesses nobles
earl countess noble
earls countesses nobles
baron baroness noble
barons baronesses nobles
emperor empress ruler
emperors empresses rulers
czar czarina ruler
tsar tsarina ruler
sultan sultana ruler
lad lass youth
lads lasses youths
bachelor spinster single
bachelors spinsters singles
beau belle -
actor actress performer
actors actresses performers
waiter waitress server
waiters waitresses servers
steward stewardess attendant
stewards stewardesses attendants
headmaster headmistress principal
headmasters headmistresses principals
schoolboy schoolgirl student
schoolboys schoolgirls students
policeman policewoman police officer
policemen policewomen police officers
chairman chairwoman chairperson
chairmen chairwomen chairpersons
spokesman spokeswoman spokesperson
spokesmen spokeswomen spokespeople
businessman businesswoman businessperson
businessmen businesswomen businesspeople
congressman congresswoman member of congress
congressmen congresswomen members of congress
councilman councilwoman council member
councilmen councilwomen council members
salesman saleswoman salesperson
salesmen saleswomen salespeople
sportsman sportswoman athlete
sportsmen sportswomen athletes
craftsman craftswoman artisan
craftsmen craftswomen artisans
fireman firewoman firefighter
firemen firewomen firefighters
postman postwoman mail carrier
postmen postwomen mail carriers
mailman mailwoman mail carrier
cameraman camerawoman camera operator
cameramen camerawomen camera operators
anchorman anchorwoman anchor
repairman repairwoman repairer
foreman forewoman supervisor
foremen forewomen supervisors
weatherman weatherwoman meteorologist
doorman doorwoman door attendant
airman airwoman aviator
airmen airwomen aviators
countryman countrywoman compatriot
countrymen countrywomen compatriots
kinsman kinswoman relative
kinsmen kinswomen relatives
manservant maidservant servant
menservants maidservants servants
landlord landlady owner
landlords landladies owners
heir heiress heir
heirs heiresses heirs
hero heroine hero
heroes heroines heroes
god goddess deity
gods goddesses deities
priest priestess cleric
priests priestesses clergy
monk nun monastic
monks nuns monastics
abbot abbess superior
wizard witch magician
wizards witches magicians
sorcerer sorceress magician
sorcerers sorceresses magicians
prophet prophetess prophet
poet poetess poet
author authoress author
host hostess host
usher usherette usher
shepherd shepherdess shepherd
tailor seamstress tailor
masseur masseuse massage therapist
masseurs masseuses massage therapists
conductor conductress conductor
proprietor proprietress proprietor
benefactor benefactress benefactor
governor governess governor
instructor instructress instructor
murderer murderess murderer
adulterer adulteress adulterer
traitor traitress traitor
comedian comedienne comedian
hunter huntress hunter
lion lioness lion
lions lionesses lions
tiger tigress tiger
stallion mare horse
stallions mares horses
bull cow cattle
bulls cows cattle
rooster hen chicken
roosters hens chickens
cock hen chicken
drake duck duck
gander goose goose
ram ewe sheep
buck doe deer
boar sow pig
colt filly foal
colts fillies foals
dude chick person
sonny missy kid
bro sis sibling
brethren sistren siblings
""".strip()

# Words swapped in counterfactuals but too ambiguous to *detect* gender with. Detection is symmetric: a word whose
# counterpart is listed here is not used either (fairmt.data.gender.UNDETECTED), so swapping a sentence's gendered
# words always swaps its label ("hero" says nothing about gender, so neither does "heroine"). "Ms" counts as a title
# only when written "Ms" (not "MS"/"ms"): see fairmt.data.gender.
AMBIGUOUS = frozenset(
    {
        "master",
        "masters",
        "mistress",
        "mistresses",
        "miss",
        "bachelor",
        "bachelors",
        "count",
        "host",
        "hosts",
        "hostess",
        "hostesses",
        "heir",
        "heirs",
        "hero",
        "heroes",
        "prophet",
        "poet",
        "author",
        "usher",
        "shepherd",
        "tailor",
        "conductor",
        "proprietor",
        "benefactor",
        "governor",
        "instructor",
        "murderer",
        "adulterer",
        "traitor",
        "comedian",
        "hunter",
        "lion",
        "lions",
        "tiger",
        "bull",
        "bulls",
        "cow",
        "cows",
        "cock",
        "hen",
        "hens",
        "drake",
        "duck",
        "gander",
        "goose",
        "ram",
        "buck",
        "doe",
        "boar",
        "sow",
        "colt",
        "colts",
        "chick",
        "belle",
        "beau",
        "god",
        "gods",
        "sir",
        "sirs",
        "pa",
        "ma",
        "mama",
        "papa",
        "ms",
        "mx",
        "herr",
        "frau",
        "masculine",
        "feminine",
        "sonny",
        "missy",
        "signor",
        "senor",
        "monsieur",
        "madam",
        "madame",
        "widow",
        "widows",
        "widower",
        "widowers",
        "bro",
        "sis",
        "dude",
        "fella",
        "guy",
        "guys",
        "gal",
        "gals",
    }
)

MALE, FEMALE = "male", "female"
GENDER_IDS = {MALE: 0, FEMALE: 1}


@dataclass(frozen=True)
class GenderPair:
    """One lexicon entry: masculine and feminine forms, and a neutral form where one exists."""

    male: str
    female: str
    neutral: str | None = None


def _parse(table: str) -> tuple[GenderPair, ...]:
    pairs = []
    for line in table.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        neutral = " ".join(parts[2:]) if len(parts) > 2 and parts[2] != "-" else None
        pairs.append(GenderPair(parts[0], parts[1], neutral))
    return tuple(pairs)


PAIRS: tuple[GenderPair, ...] = _parse(_TABLE)


def words(gender: str) -> frozenset[str]:
    """All lower-case words of one gender (``"male"`` or ``"female"``) in the lexicon."""
    if gender not in (MALE, FEMALE):
        raise ValueError(f"gender must be 'male' or 'female', got {gender!r}")
    return frozenset(getattr(p, gender) for p in PAIRS)
