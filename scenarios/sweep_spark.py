"""Spark, the one executor that needs a JVM, and the only module that imports pyspark (and py4j).

``execute`` runs the tasks on a SparkSession in batches (two jobs in flight, so stragglers do not idle the
cores) and returns the rows, calling ``on_rows`` as each batch finishes; the rows are then written and
aggregated on the driver (``sweep_io``, ``sweep_aggregate``) as for any executor.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import sys
import tempfile

from .sweep_rows import SPARK_TASK_FAILED, run_task
from .sweep_spec import write_atomic as _write_atomic

_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = STDERR
appender.console.type = Console
appender.console.name = STDERR
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
"""


def _log4j2_file() -> str:
    path = os.path.join(tempfile.gettempdir(), f"rmqsim-log4j2-{hashlib.sha256(_LOG4J2.encode()).hexdigest()[:8]}.properties")
    if not os.path.exists(path):
        _write_atomic(path, _LOG4J2.encode())
    return path


def spark_session(master: str | None = None, app_name: str = "rmqsim-sweep"):
    """A quiet SparkSession bound to 127.0.0.1: no UI, log level WARN, this interpreter for the workers."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    log4j = f"-Dlog4j2.configurationFile=file:{_log4j2_file()} -XX:TieredStopAtLevel=1"
    builder = (SparkSession.builder.master(master or "local[*]").appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.pyspark.python", sys.executable)
               .config("spark.pyspark.driver.python", sys.executable)
               .config("spark.driver.extraJavaOptions", log4j)
               .config("spark.executor.extraJavaOptions", log4j)
               .config("spark.sql.shuffle.partitions", "8")
               .config("spark.sql.debug.maxToStringFields", "1000")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.python.worker.reuse", "true"))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def environment_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean Spark (or its cluster) failed, not a run: the command line reports them
    as a one-line environment error."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    return (Py4JError, PySparkException, ConnectionError, OSError, RuntimeError)


def active_session():
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()




def _first_line(text: str) -> str:
    """The useful line of a Spark job failure (its Python or Java exception), shortened."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    match = re.search(r"most recent failure: [^\n]*?\): ([^\n]+)", text)
    if match:
        return match.group(1).replace("org.apache.spark.SparkException: ", "")[:300]
    for line in lines:
        if "Error" in line or "Exception" in line or "exited" in line or "crashed" in line:
            return line[:300]
    return lines[0][:300] if lines else "the task failed"


def _run_batch(spark, batch: list[dict], check, group: int) -> list[dict]:
    """One Spark job: the batch's runs in tasks of ``group`` runs each (a PySpark task costs some tens of
    milliseconds of scheduling and serialisation; small groups amortise it for short runs)."""
    sc = spark.sparkContext
    sc.setJobGroup("rmqsim-sweep", f"{len(batch)} runs", interruptOnCancel=True)
    slices = max(1, math.ceil(len(batch) / group))
    return sc.parallelize(batch, slices).mapPartitions(lambda tasks: [run_task(t, check) for t in tasks]).collect()


def _run_batch_isolating(spark, batch: list[dict], check, group: int) -> list[dict]:
    """A batch whose job failed (a worker died, not a Python exception) is re-run task by task; a task
    that still fails becomes an error row."""
    try:
        return _run_batch(spark, batch, check, group)
    except Exception as job_error:  # noqa: BLE001 - py4j raises several types
        if spark.sparkContext._jsc is None or any(
                text in str(job_error) for text in ("stopped SparkContext", "SparkContext was shut down")):
            raise  # the session or the cluster is gone: an environment failure, not a run's
        if len(batch) == 1:
            task = batch[0]
            text = str(job_error)
            return [{"cell": task["cell"], "cell_id": task["cell_id"], "seed": task["seed"], **task["params"],
                     "repro": task["repro"], "checked": False, "violated": [],
                     "error": f"{SPARK_TASK_FAILED}: {_first_line(text)}"}]
        return [row for task in batch for row in _run_batch_isolating(spark, [task], check, 1)]


def plan_batches(total: int, parallelism: int, batch_size: int | None = None) -> tuple[int, int]:
    """(runs per Spark task, runs per Spark job): one run per task for small sweeps (every core busy),
    groups of up to 8 for large ones; each job has about four tasks per core."""
    group = max(1, min(8, total // (parallelism * 16)))
    size = batch_size or max(4, group * parallelism * 4)
    return group, size


def execute(spark, tasks: list[dict], *, check=None, on_rows=None, progress: bool = True, batch_size: int | None = None):
    """Run ``tasks`` on Spark in batches (two jobs in flight, so stragglers do not idle the cores);
    ``on_rows(rows)`` as each batch finishes; a tqdm bar over finished runs. Returns all rows."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    from .progress import progress_bar

    sc = spark.sparkContext
    parallelism = max(1, sc.defaultParallelism)
    group, size = plan_batches(len(tasks), parallelism, batch_size)
    batches = [tasks[i:i + size] for i in range(0, len(tasks), size)]
    bar = progress_bar(total=len(tasks), desc="sweep", unit="run", enabled=progress)
    rows: list[dict] = []
    done = 0
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="rmqsim-sweep")
    pending = {}
    queue = list(batches)
    try:
        while queue or pending:
            while queue and len(pending) < 2:
                batch = queue.pop(0)
                pending[pool.submit(_run_batch_isolating, spark, batch, check, group)] = batch
            finished, _ = wait(list(pending), timeout=0.5, return_when=FIRST_COMPLETED)
            for future in finished:
                pending.pop(future)
                batch_rows = future.result()
                done += len(batch_rows)
                rows.extend(batch_rows)
                if on_rows is not None:
                    on_rows(batch_rows)
            running = 0
            tracker = sc.statusTracker()
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    running += info.numCompletedTasks * group
            bar.n = min(len(tasks), done + running)
            bar.refresh()
    except BaseException:
        sc.cancelJobGroup("rmqsim-sweep")
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        bar.n = done
        bar.close()
    return rows

