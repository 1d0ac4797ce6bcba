"""Protection methods, one package each, listed once in :mod:`cubeguard.methods.registry`.

:mod:`cubeguard.methods.base` says what a method provides; :mod:`cubeguard.methods.swap_report`
holds what the record-swapping methods share, :mod:`cubeguard.methods.cells` what the methods that
change a cube's interior share, and :mod:`cubeguard.methods.bounds` what their published bounds share.
"""
