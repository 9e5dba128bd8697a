"""Start a broker on a copy of a real store directory: its files into a disk, its mapped-file sizes.

RocketMQ refuses to load a commit log whose files differ from ``mappedFileSizeCommitLog``; a real store
tells its own sizes by its files (the first commit-log file, the first consume-queue file of any queue).
"""

from __future__ import annotations

import os

from .disk import Disk


def _first_file_size(directory: str) -> int | None:
    if not os.path.isdir(directory):
        return None
    names = sorted(n for n in os.listdir(directory) if n.isdigit() and os.path.isfile(os.path.join(directory, n)))
    return os.path.getsize(os.path.join(directory, names[0])) if names else None


def mapped_file_sizes(root: str) -> dict[str, int]:
    """``{"commit_log": bytes, "consume_queue": bytes}`` for the sizes the store's files have (keys absent if none)."""
    sizes: dict[str, int] = {}
    commit_log = _first_file_size(os.path.join(root, "commitlog"))
    if commit_log:
        sizes["commit_log"] = commit_log
    cq_root = os.path.join(root, "consumequeue")
    if os.path.isdir(cq_root):
        for topic in sorted(os.listdir(cq_root)):
            topic_dir = os.path.join(cq_root, topic)
            for queue in sorted(os.listdir(topic_dir)) if os.path.isdir(topic_dir) else []:
                size = _first_file_size(os.path.join(topic_dir, queue))
                if size:
                    sizes["consume_queue"] = size
                    return sizes
    return sizes


def load_store_dir(root: str, disk: Disk) -> int:
    """Copy every file under ``root`` into ``disk`` (durably, as files already on a disk are); the file count."""
    count = 0
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        rel_dir = os.path.relpath(directory, root)
        for name in sorted(files):
            with open(os.path.join(directory, name), "rb") as f:
                data = f.read()
            rel = name if rel_dir == "." else f"{rel_dir.replace(os.sep, '/')}/{name}"
            disk.write_file(rel, data, fsync=True)
            count += 1
    return count
