"""Flexible tables on demand from a published release, protected on the fly (Shlomo 2009, section 5).

:mod:`~cubeguard.tables.keystore` holds what a query needs; :mod:`~cubeguard.tables.engine`
checks a query against the release's rules and tabulates, perturbs and describes the table.
"""
