"""Atomic publishing of a release: staging folder, public store and exports, manifest, one rename."""

from cubeguard.publish.checksums import tree_checksums
from cubeguard.publish.lock import ReleaseLocked, release_lock
from cubeguard.publish.manifest import build_manifest
from cubeguard.publish.public_store import PublishedCube
from cubeguard.publish.stage import (
    PublishResult,
    ReleaseExists,
    check_release_id,
    make_release_id,
    publish_release,
    published_root,
)

__all__ = [
    "PublishResult",
    "PublishedCube",
    "ReleaseExists",
    "ReleaseLocked",
    "build_manifest",
    "check_release_id",
    "make_release_id",
    "publish_release",
    "published_root",
    "release_lock",
    "tree_checksums",
]
