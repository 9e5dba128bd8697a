"""Start a broker on a copy of a real store directory: its files into a disk, its mapped-file sizes.

RocketMQ refuses to load a commit log whose files differ from ``mappedFileSizeCommitLog``; a real store
tells its own sizes by its files (the first commit-log file, the first consume-queue file of any queue, the
first timer-log file, the timer wheel's length).
"""

from __future__ import annotations

import os

from .disk import Disk

SKIPPED = ("index", "lock")  # not modelled: the message-key index (400 MB files in a real store), the file lock


def _first_file_size(directory: str) -> int | None:
    if not os.path.isdir(directory):
        return None
    names = sorted(n for n in os.listdir(directory) if n.isdigit() and os.path.isfile(os.path.join(directory, n))
                   and os.path.getsize(os.path.join(directory, n)))
    return os.path.getsize(os.path.join(directory, names[0])) if names else None


def mapped_file_sizes(root: str) -> dict[str, int]:
    """``{"commit_log", "consume_queue", "timer_log", "timer_wheel": bytes}`` for the sizes the store's files have
    (keys absent if none)."""
    sizes: dict[str, int] = {}
    commit_log = _first_file_size(os.path.join(root, "commitlog"))
    if commit_log:
        sizes["commit_log"] = commit_log
    timer_log = _first_file_size(os.path.join(root, "timerlog"))
    if timer_log:
        sizes["timer_log"] = timer_log
    wheel = os.path.join(root, "timerwheel")
    if os.path.isfile(wheel) and os.path.getsize(wheel):
        sizes["timer_wheel"] = os.path.getsize(wheel)
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


def read_store_files(root: str) -> tuple[tuple[str, bytes], ...]:
    """Every file under ``root`` but the top-level ``SKIPPED``: (relative '/'-separated path, bytes), in a fixed
    order (sorted directories and names), so that what a run starts on never depends on the file system."""
    out = []
    for directory, dirs, names in os.walk(root):
        rel_dir = os.path.relpath(directory, root)
        if rel_dir == ".":
            dirs[:] = [d for d in dirs if d not in SKIPPED]
            names = [n for n in names if n not in SKIPPED]
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(directory, name)
            if not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                data = f.read()
            out.append((name if rel_dir == "." else f"{rel_dir.replace(os.sep, '/')}/{name}", data))
    return tuple(out)


def load_store_dir(root: str, disk: Disk) -> int:
    """Copy every file under ``root`` into ``disk`` (durably, as files already on a disk are); the file count."""
    files = read_store_files(root)
    for rel, data in files:
        disk.write_file(rel, data, fsync=True)
    return len(files)
