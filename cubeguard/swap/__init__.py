"""Record-swapping machinery shared by the swapping methods (``cubeguard.methods.*_swap``).

* :mod:`cubeguard.swap.common` - column-name types, the seeded generator, the data errors;
* :mod:`cubeguard.swap.risk` - k-anonymity risk per household and level, must-swap levels
  (Handbook on SDC v2, 5.6.1; sdcMicro recordSwap);
* ``_households``, ``_ordering``, ``_donors`` - households as units, orderings, the donor search.

Everything here is pure numpy/pandas/numba: no I/O, no global random state.
"""
