"""Release configs: models, YAML loading with located errors, secret references."""

from cubeguard.config.load import Release, load_release
from cubeguard.config.models import ReleaseConfig
from cubeguard.errors import ConfigError

__all__ = ["ConfigError", "Release", "ReleaseConfig", "load_release"]
