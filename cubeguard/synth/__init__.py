"""Synthetic census microdata for testing and benchmarking cubeguard.

:func:`generate` writes ``persons.parquet``: persons in private households and (~1.75%) in communal
establishments, one row per person, members of a household or establishment contiguous. Columns
(raw values are the leaves of ``configs/classifications/<file>.yaml``, see :mod:`.codes`):

========================  ==========================================================  ============
column                    meaning                                                     file
========================  ==========================================================  ============
pid, hid, is_ref          person id, household / establishment id, reference person   --
hh_kind, ce_type,         private household or CE; CE type; role in the CE            hh_kind,
ce_role                   (client / staff / family of staff)                          ce_type, ce_role
nuts1 .. nuts3, lau       place of usual residence (the LAU's ancestors repeated)     geo_<layout>
sex, age                  sex; age in completed years (int8)                          sex, age
lms, hst, fst             legal marital, household and family status                  lms, hst, fst
har                       housing arrangements                                        har
cas, occ, ind, sie        activity, occupation (ISCO-08), industry (NACE), status     cas, occ, ind, sie
edu                       ISCED 2011 level (also read by edu_isced97.yaml)            edu
coc, pob, yae             citizenship, country of birth, year of arrival (int16)      coc, pob, yae
roy, loc                  residence one year before; size class of the LAU            roy, loc
sph, tph, tsh             household size (int8), type, tenure                         sph, tph, tsh
imputed, rkey             imputation flag (int8); record key uniform on [0, 1)        imputed
========================  ==========================================================  ============

Calibration: the sparsity of detailed cubes was tuned so that the Eurostat test hypercube of seed
000 (Shlomo 2009, section 2: NUTS2 x sex x 21 ages x 5 activity x 13 occupation x 9 education x 5
citizenship on 1.5M persons of the ``two_regions`` layout) has the cell-count distribution of its
Table 1; ``tests/integration/test_synth_table1.py`` checks it. The main levers are the share of immigrant
households (``block._P_IMMIGRANT_HH``), the spread of education by age and origin and the
occupation-education association (``persons``).
"""

from cubeguard.synth.geography import GEOGRAPHIES, Geography, Layout, layout
from cubeguard.synth.write import FILE_NAME, SynthSummary, generate, schema

__all__ = ["FILE_NAME", "GEOGRAPHIES", "Geography", "Layout", "SynthSummary", "generate", "layout", "schema"]
