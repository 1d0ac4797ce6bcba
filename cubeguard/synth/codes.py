"""Raw values the synthetic census writes, one tuple per column.

Every tuple lists the *leaf* codes of the column's classification in ``configs/classifications``
(tests check that the two agree). The generator works on small integer indices into these tuples
and only turns them into strings when it writes Parquet (as dictionary columns whose dictionary is
the tuple), so the position of a code in its tuple is part of the data layout: append, never
reorder.
"""

from __future__ import annotations

from typing import Final

#: Reference year of the synthetic census (EU 2021 round).
CENSUS_YEAR: Final = 2021

HH_KIND: Final = ("P", "C")  # private household / communal establishment
CE_TYPE: Final = ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9")  # "0": not in a CE
CE_ROLE: Final = ("N", "C", "S", "F")  # not in a CE / client / staff / family of staff
SEX: Final = ("1", "2")
LMS: Final = ("1", "2.1", "2.2", "3", "4", "5")
HST: Final = ("1.1.1", "1.1.2", "1.1.3", "1.2.1", "1.2.2", "2")
FST: Final = ("1.1", "1.2", "1.3", "2.1", "2.2", "3.1", "3.2", "4")
HAR: Final = ("1", "2", "3", "4", "5")
CAS: Final = ("1.1", "1.2", "2.1", "2.2", "2.3", "2.4")
OCC: Final = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12.1", "12.2")
IND: Final = (
    "1",  # A
    "2.1", "2.2", "2.3", "2.4",  # B C D E
    "3",  # F
    "4.1", "4.2", "4.3",  # G H I
    "5", "6", "7",  # J K L
    "8.1", "8.2",  # M N
    "9.1", "9.2", "9.3",  # O P Q
    "10.1", "10.2", "10.3", "10.4",  # R S T U
    "11", "12",  # not stated, not applicable
)  # fmt: skip
SIE: Final = ("1", "2", "3", "4", "5", "6")
EDU: Final = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11")
ROY: Final = ("1", "2.1", "2.2", "3", "4")
LOC: Final = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13")
TPH: Final = (
    "1.1", "1.2", "2.1.1", "2.1.2", "2.1.3", "2.2.1", "2.2.2", "2.3.1", "2.3.2", "3", "4",
)  # fmt: skip
TSH: Final = ("1", "2", "3", "4", "5")

# Countries of citizenship / birth other than the (fictional) reporting country: ISO 3166 alpha-2
# code (EL for Greece, as Eurostat writes it) or "OTH" for "other countries of this group", grouped
# as in COC.M / POB.M. The first group is the 27 EU Member States.
COUNTRY_GROUPS: Final = (
    ("2.1", ("AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "EL", "ES", "FI", "FR", "HR", "HU",
             "IE", "IT", "LT", "LU", "LV", "MT", "NL", "PL", "PT", "RO", "SE", "SI", "SK")),
    ("2.2.1", ("UA", "BY", "RU", "GB", "MD", "RS", "TR", "CH", "NO", "AL", "OTH")),
    ("2.2.2", ("MA", "DZ", "NG", "EG", "TN", "SN", "OTH")),
    ("2.2.3", ("BR", "CO", "VE", "OTH")),
    ("2.2.4", ("US", "CA")),
    ("2.2.5", ("IN", "CN", "VN", "PH", "PK", "GE", "AM", "KZ", "SY", "AF", "OTH")),
    ("2.2.6", ("AU", "NZ", "OTH")),
)  # fmt: skip

#: Leaf code of every foreign country, in COUNTRY_GROUPS order ("2.1.AT", ..., "2.2.6.OTH").
FOREIGN: Final = tuple(f"{g}.{c}" for g, cs in COUNTRY_GROUPS for c in cs)
COC: Final = ("1", *FOREIGN, "3", "4")  # national, foreign countries, stateless, not stated
POB: Final = ("1", *FOREIGN, "3")  # reporting country, foreign countries, not stated

#: Year of arrival: the year itself, or one of these two codes.
YAE_NEVER_ABROAD: Final = 0
YAE_NOT_STATED: Final = 9999

#: Household size of persons not in a private household.
SPH_NOT_APPLICABLE: Final = 0

#: Column order of persons.parquet.
COLUMNS: Final = (
    "pid", "hid", "is_ref", "hh_kind", "ce_type", "ce_role",
    "nuts1", "nuts2", "nuts3", "lau",
    "sex", "age", "lms", "hst", "fst", "har", "cas", "occ", "ind", "sie", "edu",
    "coc", "pob", "yae", "roy", "loc", "sph", "tph", "tsh", "imputed", "rkey",
)  # fmt: skip

#: Code columns and the tuple of raw values each may hold (geography columns are per layout).
CODE_COLUMNS: Final = {
    "hh_kind": HH_KIND, "ce_type": CE_TYPE, "ce_role": CE_ROLE, "sex": SEX, "lms": LMS,
    "hst": HST, "fst": FST, "har": HAR, "cas": CAS, "occ": OCC, "ind": IND, "sie": SIE,
    "edu": EDU, "coc": COC, "pob": POB, "roy": ROY, "loc": LOC, "tph": TPH, "tsh": TSH,
}  # fmt: skip
