from __future__ import annotations

import threading

from PySide6.QtCore import QThread

from desktop.workers import Worker, WorkerPool


def _counting_job(release: threading.Event, total: int = 50):
    def job(worker: Worker) -> str:
        for done in range(total):
            if worker.cancelled():
                return f"stopped at {done}"
            worker.report(done, total, f"item {done}")
            if done == 2:
                release.wait(5)  # the test cancels while the job is here
        return "done"

    return job


def test_progress_then_result_in_the_gui_thread(qtbot, qapp):
    pool = WorkerPool()
    release = threading.Event()
    release.set()
    seen: list[tuple] = []

    def on_result(result: str) -> None:
        seen.append(("result", result, QThread.currentThread() is qapp.thread()))

    worker = pool.start(_counting_job(release, 5), on_result=on_result,
                        on_progress=lambda d, t, label: seen.append((d, t, label)))
    assert worker in pool._running  # kept alive until finished
    qtbot.waitUntil(lambda: not pool.busy, timeout=5000)
    assert seen == [(i, 5, f"item {i}") for i in range(5)] + [("result", "done", True)]


def test_cancel_stops_the_job_between_items(qtbot):
    pool = WorkerPool()
    release = threading.Event()
    results: list[str] = []
    done: list[int] = []
    worker = pool.start(_counting_job(release), on_result=results.append,
                        on_progress=lambda d, _t, _l: done.append(d))
    qtbot.waitUntil(lambda: 2 in done)  # the job now waits for the release
    worker.cancel()
    release.set()
    qtbot.waitUntil(lambda: not pool.busy, timeout=5000)
    assert results == ["stopped at 3"]


def test_a_failing_job_reports_one_line_and_still_finishes(qtbot):
    pool = WorkerPool()

    def job(_worker):
        raise ValueError("line 12: truncated JSON\nmore detail nobody needs")

    errors: list[str] = []
    pool.start(job, on_error=errors.append)
    qtbot.waitUntil(lambda: not pool.busy, timeout=5000)
    assert errors == ["line 12: truncated JSON"]


def test_shutdown_cancels_running_workers(qtbot):
    pool = WorkerPool()
    release = threading.Event()
    results: list[str] = []
    pool.start(_counting_job(release), on_result=results.append)
    qtbot.waitUntil(lambda: pool.busy)
    release.set()
    assert pool.shutdown(5000)
    qtbot.waitUntil(lambda: bool(results))
    assert results[0].startswith(("stopped", "done"))


def _log(name: str, loss: float) -> str:
    """A two-line Headroom JSONL log."""
    return f'{{"headroom": 1, "run": {{"name": "{name}"}}}}\n{{"step": 1, "loss": {loss}}}\n'


def test_ingest_progress_and_cancel_through_the_services(qtbot, services, tmp_path):
    paths = []
    for i in range(40):
        path = tmp_path / f"run-{i:02d}.jsonl"
        path.write_text(_log(f"r{i}", i))
        paths.append(path)
    progress: list[tuple[int, int]] = []

    def on_progress(done: int, total: int, _label: str) -> None:
        progress.append((done, total))
        if done == 3:
            services.cancel_ingest()

    services.sig_ingest_progress.connect(on_progress)
    with qtbot.waitSignal(services.sig_ingest_finished, timeout=30_000) as blocker:
        services.ingest(paths)
    report = blocker.args[0]
    assert report.cancelled and 3 <= len(report.results) < 40
    assert progress[0] == (0, 40) and all(total == 40 for _, total in progress)
    assert services.store.run_count() == len(report.results)  # each stored file is whole
    assert not services.ingesting


def test_a_second_ingest_waits_for_the_first(qtbot, services, tmp_path):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path in (first, second):
        path.write_text(_log(path.stem, 1))
    reports = []
    services.sig_ingest_finished.connect(reports.append)
    services.ingest([first])
    services.ingest([second])  # queued: the user dropped more while the first ran
    qtbot.waitUntil(lambda: len(reports) == 2, timeout=30_000)
    assert [r.results[0].run_name for r in reports] == ["a", "b"]


def test_runs_are_announced_while_the_ingest_is_still_running(qtbot, store, tmp_path):
    from desktop.services import AppServices

    services = AppServices(store, refresh_ms=0)  # announce at once, not at most every 400 ms
    paths = []
    for i in range(6):
        paths.append(tmp_path / f"run-{i}.jsonl")
        paths[-1].write_text(_log(f"r{i}", i))
    seen: list[tuple[bool, int]] = []
    services.sig_runs_changed.connect(
        lambda: seen.append((services.ingesting, services.store.run_count())))
    with qtbot.waitSignal(services.sig_ingest_finished, timeout=30_000):
        services.ingest(paths)
    running, stored = seen[0]
    assert running and stored >= 1  # the table could show the first runs already
    assert seen[-1] == (False, 6)
