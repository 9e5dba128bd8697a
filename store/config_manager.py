"""ConfigManager: load with ``.bak`` fallback and the three historical ways to persist (ROCKETMQ.md 6.1).

The write algorithms are kept apart per era because their crash windows differ, and those
windows are what the simulator explores: 4.x leaves a moment with no main file, 5.1.0–5.3.3
truncates the main file in place without fsync (a power failure leaves it short or empty and
may have overwritten a good ``.bak`` with a bad main file first), develop (#9705) moves
the main file to ``.bak`` and fsyncs the new one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

from .disk import Disk
from .faults import NO_FAULTS, SITE_PERSIST_PREFIX, FaultInjector, check_crash
from .log import DISK_DAMAGE, as_log
from .probes import NO_PROBES

PERSIST_4X = "4.x"  # 4.x – 5.0.0 MixAll.string2File: tmp file, copy to .bak, delete, rename
PERSIST_5_3_3 = "5.3.3"  # 5.1.0 – 5.3.3 (#5905): copy to .bak, overwrite in place
PERSIST_DEVELOP = "develop"  # develop after #9705: move main to .bak, write + fsync
PERSIST_MODES = (PERSIST_5_3_3, PERSIST_4X, PERSIST_DEVELOP)

BAK_SUFFIX = ".bak"
TMP_SUFFIX = ".tmp"



def file_name_of(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def string2file(disk: Disk, path: str, data: bytes, persist_mode: str = PERSIST_5_3_3) -> None:
    """``MixAll.string2File`` of the chosen era (no fsync in either); raises OSError like Java's IOException.

    The current main file is copied to ``.bak`` whenever it exists, even when it is empty or
    garbage (Java's ``file2String`` returns "" for an empty file): the #9705 trap."""
    bak = path + BAK_SUFFIX
    if persist_mode == PERSIST_4X:
        tmp = path + TMP_SUFFIX
        disk.write_file(tmp, data)
        previous = disk.read_file(path)
        if previous is not None:
            disk.write_file(bak, previous)
        disk.delete(path)
        disk.rename(tmp, path)
    elif persist_mode == PERSIST_5_3_3:
        previous = disk.read_file(path)
        if previous is not None:
            disk.write_file(bak, previous)
        disk.write_file(path, data)
    else:
        raise ValueError(f"string2file has no persist mode {persist_mode!r}")


class ConfigManager(ABC):
    """Base of the JSON-file managers: subclasses give ``encode``/``decode``, this class does the files.

    ``load_events`` collects one short sentence per load (what was read, what fell back to
    ``.bak``) for the simulator's history; ``load_error`` says why the last load failed."""

    probes = NO_PROBES  # the run's ProbeCollector when the world attaches one

    def __init__(
        self,
        disk: Disk,
        config_file_path: str,
        *,
        faults: FaultInjector = NO_FAULTS,
        persist_mode: str = PERSIST_5_3_3,
        log: Callable[[str], None] | None = None,
    ) -> None:
        if persist_mode not in PERSIST_MODES:
            raise ValueError(f"persist_mode must be one of {PERSIST_MODES}, not {persist_mode!r}")
        self.disk = disk
        self.config_file_path = config_file_path
        self.file_name = file_name_of(config_file_path)  # told to the persist listeners on every round
        self.faults = faults
        self.persist_mode = persist_mode
        self.log = as_log(log, type(self).__name__)
        self.load_error: str | None = None
        self.load_events: list[str] = []
        self.persist_errors: list[str] = []
        # told the file name after each persist (and the times of a run of overwritten rounds, or None)
        self.persist_listeners: list[Callable[[str, range | None], None]] = []
        # A driver's choice for runs that cannot lose power: a persist that would leave the main file and its
        # .bak byte-identical to what they hold is skipped (no write, no listener). Rewriting identical bytes
        # matters only to a power failure, which may tear the rewritten file.
        self.skip_identical_persist = False
        self._written: tuple[bytes | None, bytes] | None = None  # (.bak, main) as this manager's last write left them
        self._written_token: object | None = None  # content_token() of the main file's bytes
        self._encoded: tuple[object, str | None] | None = None  # (content_token(), encode(True)) of the last persist

    # --- the subclass's part ---------------------------------------------------------------
    @abstractmethod
    def encode(self, pretty: bool = True) -> str | None:
        """The file content; None means: write nothing."""

    def content_token(self) -> object | None:
        """A cheap value that changes whenever ``encode`` would; None: unknown (a persist is never known idle)."""
        return None

    def persist_is_noop(self) -> bool:
        """True when ``persist`` would skip (identical bytes, see ``skip_identical_persist``) without encoding."""
        return (self.skip_identical_persist and self._written is not None and self._written[0] == self._written[1]
                and self._written_token is not None and self.content_token() == self._written_token)

    @abstractmethod
    def decode(self, text: str) -> None:
        """Merge the file's content into memory; raise (any Exception) if it cannot be read."""

    # --- load ------------------------------------------------------------------------------
    def _event(self, text: str, unreadable: bool = False) -> None:
        self.load_events.append(text)
        if unreadable:  # Java: log.error("load ... failed, and try to load backup file")
            self.log.error(text, fault_site=DISK_DAMAGE)
        else:
            self.log(text)

    def _try_decode(self, data: bytes) -> str | None:
        """Decode ``data``; None on success, else a one-line reason (the parser's position included)."""
        try:
            self.decode(data.decode("utf-8"))
        except ValueError as error:  # unparseable or ill-typed content (Java catches every exception here)
            return f"{type(error).__name__}: {error}"
        return None

    def load(self) -> bool:
        """Read the main file; missing, empty or unreadable → ``load_bak()``."""
        self.load_error = None
        name = self.file_name
        data = self.disk.read_file(self.config_file_path)
        if data is None:
            self.probes.probe("config.main_missing")
            return self.load_bak(f"{name} missing")
        if not data:
            self.probes.probe("config.main_empty")
            return self.load_bak(f"{name} empty")
        reason = self._try_decode(data)
        if reason is None:
            self._event(f"{name} loaded")
            return True
        self.log.error(f"load {name} failed, and try to load backup file: {reason}", fault_site=DISK_DAMAGE)
        self.probes.probe("config.main_unreadable")
        if self.persist_mode == PERSIST_DEVELOP:
            self.disk.delete(self.config_file_path)  # #9706: an invalid main file is removed
            return self.load_bak(f"{name} unreadable ({reason}), deleted")
        return self.load_bak(f"{name} unreadable ({reason})")

    def load_bak(self, why: str = "") -> bool:
        """Read ``.bak``: non-empty and readable → True; unreadable → False; missing or empty → True, empty table."""
        name = self.file_name
        prefix = f"{why}, " if why else ""
        data = self.disk.read_file(self.config_file_path + BAK_SUFFIX)
        if not data:
            self._event(f"{prefix}{name}.bak {'missing' if data is None else 'empty'}: starting with an empty table")
            return True
        reason = self._try_decode(data)
        if reason is None:
            self.probes.probe("config.bak_used")
            self._event(f"{prefix}loaded .bak")
            return True
        self.probes.probe("config.bak_unusable")
        self.load_error = f"{self.config_file_path}{BAK_SUFFIX} unreadable: {reason}"
        self._event(f"{prefix}{name}.bak unreadable ({reason}): load failed", unreadable=True)
        return False

    # --- persist ---------------------------------------------------------------------------
    def persist(self) -> None:
        """Encode and write with the era's algorithm; I/O errors are swallowed (logged) as in Java.

        The fault site ``persist.<file name>`` is asked before anything is written: CRASH raises
        BrokerCrash, FAIL plays an IOException (nothing written, the error swallowed)."""
        token = self.content_token()
        if token is not None and self._encoded is not None and self._encoded[0] == token:
            text = self._encoded[1]  # the token changes whenever encode's text would
        else:
            text = self.encode(True)
            if token is not None:
                self._encoded = (token, text)
        if text is None:
            return
        if check_crash(self.faults, SITE_PERSIST_PREFIX + self.file_name):
            self._persist_failed("injected I/O error", SITE_PERSIST_PREFIX + self.file_name)
            return
        data = text.encode("utf-8")
        if self.skip_identical_persist and self._written == (data, data):
            self._written_token = token
            return
        try:
            if self.persist_mode == PERSIST_DEVELOP:
                path = self.config_file_path
                if self.disk.exists(path):
                    self.disk.rename(path, path + BAK_SUFFIX)
                self.disk.write_file(path, data, fsync=True)
            else:
                string2file(self.disk, self.config_file_path, data, self.persist_mode)
        except OSError as error:
            self._written = self._written_token = None
            self._persist_failed(str(error))
            return
        # Every era's write leaves the previous main file as .bak.
        self._written = (self._written[1] if self._written is not None else None, data)
        self._written_token = token
        self.persist_overwritten()

    def persist_overwritten(self, rounds_ms: range | None = None) -> None:
        """Tell the listeners of a persist. Alone: a persist round whose bytes two later rounds overwrite (main file
        and .bak) before anything can read them, run late by a driver (store/service.py, deferred rounds): nothing
        it wrote survives. Only for runs in which the writes cannot fail and no crash can wait at the persist.
        ``rounds_ms``: a run of such rounds at these monotonic times, told at once (None: one round, now)."""
        for listener in self.persist_listeners:
            listener(self.file_name, rounds_ms)

    def _persist_failed(self, why: str, fault_site: str | None = None) -> None:
        message = f"persist file {self.config_file_path} exception: {why}"
        self.persist_errors.append(message)
        self.log.error(message, fault_site=fault_site)


# --- reading bean properties (shared by the managers' decode) ----------------------------------------------
def require_object(value: object, where: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be an object, not {type(value).__name__}")
    return value


def prop_int(bean: dict, key: str, default: int, where: str) -> int:
    """An int property (missing or null → default); a wrong type fails the load, as fastjson would."""
    value = bean.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}.{key} must be an integer, not {value!r}")
    return value


def prop_bool(bean: dict, key: str, default: bool, where: str) -> bool:
    value = bean.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ValueError(f"{where}.{key} must be true or false, not {value!r}")
    return value


def prop_str(bean: dict, key: str, default: str, where: str) -> str:
    value = bean.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ValueError(f"{where}.{key} must be a string, not {value!r}")
    return value


def prop_str_map(bean: dict, key: str, where: str) -> dict[str, str]:
    value = bean.get(key)
    if value is None:
        return {}
    table = require_object(value, f"{where}.{key}")
    return {str(k): str(v) for k, v in table.items()}
