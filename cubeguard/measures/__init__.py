"""Information loss and disclosure risk of a protected cube against its original.

Pure functions on numpy arrays and xarray objects (no Prefect, no Great Expectations). Each module
holds one family of measures and cites the paper section it implements:

* :mod:`~cubeguard.measures.select` picks the interior cells or a margin of a cube;
* :mod:`~cubeguard.measures.distance` absolute, relative absolute (RAD) and Hellinger distances;
* :mod:`~cubeguard.measures.deviations` deviation tables by table dimension and cell size (SAFE);
* :mod:`~cubeguard.measures.association` Cramér's V and Spearman's rank correlation;
* :mod:`~cubeguard.measures.variance` variance of the average cell size and one-way ANOVA R²;
* :mod:`~cubeguard.measures.tests_stat` exact binomial and Wilcoxon signed-rank tests;
* :mod:`~cubeguard.measures.entropy` table entropy and median entropy over sub-groups;
* :mod:`~cubeguard.measures.loglinear` Pearson's statistic of a log-linear model's fit;
* :mod:`~cubeguard.measures.risk` small cells unchanged, zeros kept, entropy risk r and r#;
* :mod:`~cubeguard.measures.transitions` units moving between cells (r# of record swapping);
* :mod:`~cubeguard.measures.disclosive` directly disclosive cells (k-coalitions) and the two
  success measures of record swapping;
* :mod:`~cubeguard.measures.drilldown` the cube's loss measures per breakdown and hierarchy level;
* :mod:`~cubeguard.measures.rounding` cells moved beyond the nearest multiple or a whole base, and
  the existence intervals a user infers from a table rounded to a public base;
* :mod:`~cubeguard.measures.small_origin` the share of cells published as ``j`` that hide a small
  original count, for any method (after Enderle, Giessing and Tent 2020);
* :mod:`~cubeguard.measures.magnitudes` loss of published sums and of the means read from them;
* :mod:`~cubeguard.measures.table` one configured set of measures per cube, and a DataFrame over
  many cubes.
"""
