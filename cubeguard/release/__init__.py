"""The release layer: an ordered table of steps, one ledger that resumes them, and a walk over the table."""
