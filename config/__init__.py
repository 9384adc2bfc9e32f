"""Configuration both processes read: settings, storages, model bindings, logging, statistics periods.

Not the wire (that is `protocol/`): these modules read the environment and the disk."""
