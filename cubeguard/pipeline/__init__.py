"""Core release steps as plain functions over paths and small summaries (wrapped by ``tasks``)."""
