"""Harvest: the nightly upload of new transcripts (S3), its state, spool and schedule.

May import: the core and below; `runner` is a face.
"""
