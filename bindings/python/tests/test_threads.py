"""Cancellation from another thread, Ctrl-C, concurrent planners."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import alpa
from conftest import HERE, SMALL_CLUSTER, SMALL_MODEL

LONG_MODEL = "gpt-2.6b"  # a few seconds to plan on p3.16xlarge:2


def test_cancel_from_another_thread():
    token = alpa.CancelToken()
    started = threading.Event()

    def canceller():
        started.wait(60)
        token.cancel()

    t = threading.Thread(target=canceller)
    t.start()
    t0 = time.monotonic()
    with pytest.raises(alpa.CancelledError) as info:
        alpa.plan(LONG_MODEL, "p3.16xlarge:2", progress=lambda p: started.set(), cancel=token)
    t.join()
    assert info.value.status == 5
    assert token.cancelled
    assert time.monotonic() - t0 < 60
    token.close()


def test_exception_in_progress_callback_cancels_and_propagates():
    class Stop(Exception):
        pass

    def progress(p):
        raise Stop(p.phase)

    with pytest.raises(Stop):
        alpa.plan(SMALL_MODEL, SMALL_CLUSTER, progress=progress)


def test_ctrl_c_cancels_a_long_plan():
    code = textwrap.dedent(
        f"""
        import signal, sys, time, alpa
        # A shell without job control starts background jobs with SIGINT ignored, and Python
        # then installs no handler: restore Python's own, as in an interactive session.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        first = []
        token = alpa.CancelToken()
        def progress(p):
            # The first report holds the plan for up to 10 s: on a busy machine the parent may
            # send Ctrl-C only after a plan of a few seconds would have finished. The wait ends
            # once Ctrl-C has triggered the token (its handler runs in the main thread).
            if not first:
                first.append(1); print("started", flush=True)
                for _ in range(100):
                    if token.cancelled:
                        break
                    time.sleep(0.1)
        t0 = time.monotonic()
        try:
            alpa.plan({LONG_MODEL!r}, "p3.16xlarge:2", progress=progress, cancel=token)
            print("finished")
        except KeyboardInterrupt:
            print("interrupted after %.2f s" % (time.monotonic() - t0), flush=True)
            sys.exit(3)
        """
    )
    env = dict(os.environ, PYTHONPATH=str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "started"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 3, out
    assert out.startswith("interrupted")


def test_four_concurrent_planners_agree_with_a_serial_run():
    models = [
        SMALL_MODEL,
        "gpt:hidden=128,layers=2,heads=2,seq=64,vocab=512,batch=8",
        "gpt:hidden=256,layers=2,heads=4,seq=64,vocab=512,batch=16",
        "mlp:layers=4,hidden=64,batch=64",
    ]

    def summary(p: alpa.Plan):
        return (p.iteration_seconds, p.microbatches, [(s.first_layer, s.last_layer, s.devices)
                                                      for s in p.stages])

    serial = []
    for m in models:
        with alpa.plan(m, SMALL_CLUSTER) as p:
            serial.append(summary(p))
    results: list = [None] * len(models)
    errors: list = []

    def worker(i: int) -> None:
        try:
            with alpa.plan(models[i], SMALL_CLUSTER) as p:
                results[i] = summary(p)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(models))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == serial
    # Several threads planning the same model share nothing and agree too.
    same: list = []
    threads = [threading.Thread(target=lambda: same.append(summary(alpa.plan(SMALL_MODEL, SMALL_CLUSTER))))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert same == [serial[0]] * 4
