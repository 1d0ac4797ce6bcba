"""Protection methods, one package each, listed once in :mod:`cubeguard.methods.registry`.

:mod:`cubeguard.methods.base` says what a method provides; :mod:`cubeguard.methods.swapping`
holds what the record-swapping methods share.
"""
