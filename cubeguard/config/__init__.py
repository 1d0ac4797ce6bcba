"""Release configs: models, YAML loading with located errors, secret references."""

from cubeguard.config.load import ConfigError, Release, load_release
from cubeguard.config.models import ReleaseConfig

__all__ = ["ConfigError", "Release", "ReleaseConfig", "load_release"]
