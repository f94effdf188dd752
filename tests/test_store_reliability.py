"""The store keeps its promises under write failures, fork and threads (issue 11,
in-process items): nothing waits forever, a failed commit leaves memory equal to
disk, a failed apply stays pending until it is written, a forked child can use
the store, no thread waits for the store's lock holding the GIL, and a shared
editor loses nothing.

Hangs are checked in a subprocess with a timeout; write failures come from
replacing the store's file by a directory (rename refuses it, even for root)
or from RLIMIT_FSIZE.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import pycipherbench as pcb
from pycipherbench import store

from conftest import PACKAGE_ROOT, child_env  # noqa: E402  (shared scaffolding)

REPO = Path(PACKAGE_ROOT)
ENV = child_env()

PRELUDE = """
import os, sys, signal, threading, time, resource, gc, shutil
from pycipherbench import store
path, mk = sys.argv[1], sys.argv[2]

def break_file():
    os.replace(path, path + '.saved')
    os.mkdir(path)

def mend_file():
    os.rmdir(path)
    os.replace(path + '.saved', path)

def fails(fn):
    try:
        fn()
    except OSError as e:
        return e
    raise AssertionError(f'{fn} did not fail')
"""


def run_child(tmp_path: Path, body: str, timeout: float = 60) -> str:
    """Runs PRELUDE + body in a fresh interpreter; fails on a hang or a non-zero exit."""
    path, mk = tmp_path / "s.xml", tmp_path / "mk.bin"
    script = PRELUDE + textwrap.dedent(body)
    try:
        r = subprocess.run([sys.executable, "-X", "faulthandler", "-c", script, str(path), str(mk)],
                           env=ENV, cwd=tmp_path, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"hung (no exit in {timeout} s); stderr:\n{e.stderr}")
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return r.stdout


# ------------------------------------------------------------------ item 1: no hang


def test_failed_commit_then_flush_close_rotate_exit_do_not_hang(tmp_path):
    out = run_child(tmp_path, """
        s = store.open(path, master_key_file=mk)
        s.edit().put_string('a', '1').commit()
        break_file()
        fails(lambda: s.edit().put_string('b', '2').commit())
        s.flush()                      # nothing pending: memory equals disk
        fails(lambda: s.rotate())      # the write fails: raised, not hung
        s.flush()
        assert s.get_string('a') == '1' and 'b' not in s
        mend_file()
        s.edit().put_string('c', '3').commit()
        s.close()
        with store.open(path, master_key_file=mk) as s2:
            assert s2.all() == {'a': '1', 'c': '3'}, s2.all()
        # And an unclosed store with a failed commit at interpreter exit.
        s3 = store.open(path, master_key_file=mk)
        break_file()
        fails(lambda: s3.edit().put_string('d', '4').commit())
        print('done')
    """)
    assert "done" in out


def test_disk_full_commit_and_apply_do_not_hang(tmp_path):
    """RLIMIT_FSIZE: writes past the limit fail with EFBIG (SIGXFSZ ignored)."""
    out = run_child(tmp_path, """
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        s = store.open(path, master_key_file=mk)
        s.edit().put_string('small', 'x').commit()
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, resource.RLIM_INFINITY))
        e = fails(lambda: s.edit().put_string('big', 'y' * (256 << 10)).commit())
        assert 'big' not in s and s.get_string('small') == 'x'
        s.edit().put_string('big2', 'z' * (256 << 10)).apply()
        fails(s.flush)
        fails(s.flush)                 # still pending: raised again
        fails(s.close)                 # the last chance: raised, and released
        assert s.closed
        s = store.open(path, master_key_file=mk)
        assert s.all() == {'small': 'x'}
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        s.close()
        print('done')
    """)
    assert "done" in out


def test_failed_rotate_does_not_hang_and_keeps_everything(tmp_path):
    out = run_child(tmp_path, """
        s = store.open(path, master_key_file=mk)
        s.edit().put_string('a', '1').put_int('n', 5).commit()
        break_file()
        fails(s.rotate)
        fails(lambda: s.rotate(master_key_file=mk + '.new'))
        assert s.all() == {'a': '1', 'n': 5}
        mend_file()
        s.edit().put_string('b', '2').commit()   # under the old keys, which still work
        s.rotate()
        s.close()
        with store.open(path, master_key_file=mk) as s2:
            assert s2.all() == {'a': '1', 'n': 5, 'b': '2'}
        print('done')
    """)
    assert "done" in out


# ------------------------------------------------------------------ item 2: fork


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
@pytest.mark.parametrize("child", ["close", "apply_flush", "exit"])
def test_fork_child_uses_the_store(tmp_path, child):
    out = run_child(tmp_path, f"""
        import warnings
        warnings.simplefilter('ignore', DeprecationWarning)   # fork with threads
        s = store.open(path, master_key_file=mk)
        s.edit().put_string('parent', 'p').apply()           # the writer thread runs
        s.flush()
        pid = os.fork()
        if pid == 0:
            child = {child!r}
            if child == 'close':
                s.close()
                os._exit(0)
            if child == 'apply_flush':
                s.edit().put_string('child', 'c').apply()
                s.flush()
                s.close()
                with store.open(path, master_key_file=mk) as s2:
                    assert s2.all() == {{'parent': 'p', 'child': 'c'}}, s2.all()
                os._exit(0)
            s.edit().put_string('child', 'c').apply()
            sys.exit(0)       # a normal exit: the unclosed store is flushed at shutdown
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        s.edit().put_string('after', 'a').apply()
        s.close()
        with store.open(path, master_key_file=mk) as s2:
            print(sorted(s2.all()))
        print('done')
    """, timeout=60)
    assert "done" in out


# ------------------------------------------------------------------ item 3: GIL


def test_all_with_gc_and_a_reader_thread_does_not_deadlock(tmp_path):
    out = run_child(tmp_path, """
        s = store.open(path, master_key_file=mk)
        e = s.edit()
        for i in range(3000):
            e.put_string_set(f'k{i}', {f'v{i}', 'w'})
        e.commit()
        # A GC pass during all() runs a callback that releases the GIL while
        # another thread reads.
        gc.callbacks.append(lambda *a: time.sleep(0.0005))
        gc.set_threshold(50, 1, 1)
        stop = False
        def reader():
            while not stop:
                s.get_string_set('k7')
                len(s)
                'k9' in s
        t = threading.Thread(target=reader)
        t.start()
        for _ in range(15):
            assert len(s.all()) == 3000
        stop = True
        t.join()
        s.close()
        print('done')
    """, timeout=120)
    assert "done" in out


def test_big_rotate_and_all_do_not_freeze_other_threads(tmp_path):
    out = run_child(tmp_path, """
        s = store.open(path, master_key_file=mk, faithful=True)   # per-call key setup: a slow rotate
        e = s.edit()
        for i in range(350000):
            e.put_string(f'key{i}', 'value')
        e.commit()
        ticks = [0]
        stop = False
        def ticker():   # runs only while no other thread holds the GIL
            while not stop:
                time.sleep(0.001)
                ticks[0] += 1
        def reader():   # waits for the store's lock: must not hold the GIL meanwhile
            while not stop:
                assert s.get_string('key1') == 'value'
        threads = [threading.Thread(target=ticker), threading.Thread(target=reader)]
        for t in threads:
            t.start()
        time.sleep(0.05)
        before = ticks[0]
        s.rotate()
        during_rotate = ticks[0] - before
        before = ticks[0]
        assert len(s.all()) == 350000
        during_all = ticks[0] - before
        stop = True
        for t in threads:
            t.join()
        s.close()
        # Each call lasts far longer than the 5 ms switch interval: a call holding the GIL
        # throughout would let the ticker through at most about once; one that releases
        # it lets the ticker run all along (hundreds of ticks).
        print('ticks during rotate', during_rotate, 'during all', during_all)
        assert during_rotate >= 10 and during_all >= 3, (during_rotate, during_all)
        print('done')
    """, timeout=300)
    assert "done" in out


# ------------------------------------------------------- item 5: failures are kept


def test_failed_commit_leaves_memory_equal_to_disk(tmp_path):
    out = run_child(tmp_path, """
        s = store.open(path, master_key_file=mk, cache=True)
        s.edit().put_string('owner', 'alice').put_int('n', 1).commit()
        assert s.get_string('owner') == 'alice'       # cached
        break_file()
        fails(lambda: s.edit().put_string('owner', 'mallory').remove('n').put_int('m', 2).commit())
        assert s.all() == {'owner': 'alice', 'n': 1}, s.all()
        assert s.get_string('owner') == 'alice'
        fails(lambda: s.edit().clear().put_string('only', 'x').commit())
        assert s.all() == {'owner': 'alice', 'n': 1}, s.all()
        mend_file()
        s.edit().put_string('unrelated', 'u').commit()
        s.close()
        with store.open(path, master_key_file=mk) as s2:
            assert s2.all() == {'owner': 'alice', 'n': 1, 'unrelated': 'u'}, s2.all()
        print('done')
    """)
    assert "done" in out


def test_failed_apply_stays_pending(tmp_path):
    out = run_child(tmp_path, """
        s = store.open(path, master_key_file=mk)
        s.edit().put_string('a', '1').commit()
        break_file()
        s.edit().put_string('b', '2').apply()
        fails(s.flush)
        fails(s.flush)                # not forgotten after one report
        assert s.get_string('b') == '2'
        mend_file()
        s.flush()                     # retried here, and written
        s.close()
        with store.open(path, master_key_file=mk) as s2:
            assert s2.all() == {'a': '1', 'b': '2'}, s2.all()
        # A later commit writes the pending apply with it.
        s = store.open(path, master_key_file=mk)
        break_file()
        s.edit().put_string('c', '3').apply()
        fails(s.flush)
        mend_file()
        s.edit().put_string('d', '4').commit()
        s.flush()
        s.close()
        with store.open(path, master_key_file=mk) as s2:
            assert s2.all() == {'a': '1', 'b': '2', 'c': '3', 'd': '4'}, s2.all()
        # A failed commit after a failed apply keeps the apply pending, drops only itself.
        s = store.open(path, master_key_file=mk)
        break_file()
        s.edit().put_string('e', '5').apply()
        fails(lambda: s.edit().put_string('f', '6').commit())
        assert s.get_string('e') == '5' and 'f' not in s
        fails(s.flush)                # the writer has given up on 'e' too: no write in flight
        mend_file()
        s.close()
        with store.open(path, master_key_file=mk) as s2:
            assert s2.all() == {'a': '1', 'b': '2', 'c': '3', 'd': '4', 'e': '5'}, s2.all()
        print('done')
    """)
    assert "done" in out


# ------------------------------------------------------------- item 8: editors


def test_editor_shared_between_threads_loses_no_op(tmp_path, mk):
    path = tmp_path / "e.xml"
    s = store.open(path, master_key_file=mk)
    e = s.edit()
    done, committing = threading.Event(), threading.Event()
    n = 3000

    def putter():
        committing.wait(30)
        for i in range(n):
            e.put_int(f"k{i}", i)
            if i % 20 == 0:
                time.sleep(0.0002)  # let the committer in between puts
        done.set()

    def committer():
        while not done.is_set():
            e.commit()
            committing.set()
        e.commit()

    threads = [threading.Thread(target=putter), threading.Thread(target=committer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert len(s) == n
    s.close()
    with store.open(path, master_key_file=mk) as s2:
        assert s2.all() == {f"k{i}": i for i in range(n)}


def test_editor_keeps_one_op_per_key(tmp_path):
    out = run_child(tmp_path, """
        s = store.open(path, master_key_file=mk)
        e = s.edit()
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for i in range(300000):
            e.put_string('one', 'v' * 100)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0   # KiB
        e.put_string('two', 't').remove('one')
        e.put_string('one', 'last')
        e.commit()
        assert s.all() == {'one': 'last', 'two': 't'}
        e.put_string('before', 'b').clear().put_string('after', 'a')
        e.commit()   # Android: the clear is done first, whenever it was called
        assert s.all() == {'before': 'b', 'after': 'a'}, s.all()
        s.close()
        print('grown KiB', grown)
        if os.environ.get('PCB_SANITIZED') != '1':   # ASan's quarantine keeps what is freed
            assert grown < 32 << 10, grown    # was ~118 MiB for 300k ops (160 MiB for 10^6)
        print('done')
    """, timeout=120)
    assert "done" in out


# ----------------------------------------------------------- item 9: rollback


def test_failed_rotate_keeps_applies_made_meanwhile(tmp_path):
    out = run_child(tmp_path, """
        s = store.open(path, master_key_file=mk)
        e = s.edit()
        for i in range(60000):
            e.put_string(f'base{i}', 'x' * 20)
        e.commit()
        break_file()
        stop = False
        applied = []
        def applier():
            i = 0
            while not stop:
                s.edit().put_int(f'during{i}', i).apply()
                applied.append(i)
                i += 1
        t = threading.Thread(target=applier)
        t.start()
        for _ in range(3):
            fails(s.rotate)
        stop = True
        t.join()
        for i in applied:
            assert s.get_int(f'during{i}') == i, i
        assert len(s) == 60000 + len(applied)
        fails(s.flush)                # the writer has given up too: no write in flight
        mend_file()
        s.flush()
        s.close()
        with store.open(path, master_key_file=mk) as s2:
            assert len(s2) == 60000 + len(applied)
        print('applied during rotate:', len(applied))
        print('done')
    """, timeout=180)
    assert "done" in out


@pytest.mark.skipif(os.environ.get("PCB_SANITIZED") == "1",
                    reason="ASan's shadow memory does not fit under an RLIMIT_AS")
def test_out_of_memory_apply_is_all_or_nothing(tmp_path):
    """RLIMIT_AS: the map cannot grow for a big commit; nothing of it may stay."""
    out = run_child(tmp_path, """
        s = store.open(path, master_key_file=mk)
        s.edit().put_string('keep', 'k').commit()
        editors = []
        for _ in range(2):                                     # one to apply, one to commit
            e = s.edit()
            for i in range(48):
                e.put_string(f'big{i}', str(i) * (1 << 20))   # ~48 MiB of ops, built now
            e.remove('keep')
            editors.append(e)
        def vm_bytes():
            with open('/proc/self/status') as f:
                for line in f:
                    if line.startswith('VmSize:'):
                        return int(line.split()[1]) * 1024
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (vm_bytes() + (24 << 20), hard))
        for commit in (editors[0].apply, editors[1].commit):
            try:
                commit()
            except MemoryError:
                pass
            else:
                raise AssertionError(f'{commit} fitted: the test needs a smaller limit')
            assert s.all() == {'keep': 'k'}, sorted(s.all())[:5]
            s.flush()                                          # nothing pending
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        s.edit().put_string('after', 'a').commit()
        s.close()
        with store.open(path, master_key_file=mk) as s2:
            assert s2.all() == {'keep': 'k', 'after': 'a'}, sorted(s2.all())
        print('done')
    """, timeout=120)
    assert "done" in out


def test_ctrl_c_during_store_bench_acts_within_a_second(tmp_path):
    """A signal handler's exception while a big bench instance is populated
    (GIL released) is raised within a fraction of a second, not at the end."""
    out = run_child(tmp_path, """
        from pycipherbench import _core
        class Stop(Exception):
            pass
        caught = []
        def on_alarm(signum, frame):
            caught.append(time.perf_counter())
            raise Stop
        signal.signal(signal.SIGALRM, on_alarm)
        d = os.path.join(os.path.dirname(path), 'bench')
        os.mkdir(d)
        args = dict(directory=d, n_keys=1000000, key_len=12, value_len=4)
        t0 = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        try:
            _core.StoreKernel('get', **args)
        except Stop:
            pass
        else:
            raise AssertionError('populated before the alarm: nothing checked')
        interrupted = caught[0] - t0
        assert not os.listdir(d), os.listdir(d)   # the instance's files are gone
        # The margin, measured in this run on this machine: the same population, whole.
        t0 = time.perf_counter()
        _core.StoreKernel('get', **args).close()
        whole = time.perf_counter() - t0
        print('interrupted after', interrupted, 'of', whole)
        # Checked during the population, the handler ran long before its end (~0.3 s of
        # ~2.7 s); checked only at the end, it would run after the whole population.
        assert interrupted < whole / 2, (interrupted, whole)
        print('done')
    """, timeout=120)
    assert "done" in out
