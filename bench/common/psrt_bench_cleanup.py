"""psrt_bench_cleanup: the drivers' cleanup, written once: every child process (by its process
group) and the emulated network are removed on exit, on SIGINT, SIGTERM and SIGHUP, and after each
job; and the drivers' log line. Standard library only; psrt_bench re-exports it (pb.Cleanup,
pb.log), and CMake copies it next to the drivers.
"""

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import time


def log(prog, msg):
    print(prog + ": " + msg, file=sys.stderr, flush=True)


def reap(p):
    """p's exit status, or None while it runs. Reaps with os.waitpid rather than p.poll():
    inside a signal handler that interrupted p.wait(), Popen's lock is held and p.poll() would
    say 'running' for ever (and p.wait() would deadlock)."""
    if p.returncode is None:
        try:
            pid, status = os.waitpid(p.pid, os.WNOHANG)
        except ChildProcessError:  # reaped by Popen already (its returncode is set just after)
            return p.returncode if p.returncode is not None else 0
        if pid == 0:
            return None
        p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode


def group_alive(pgid):
    """Whether any process of the group is left (a zombie counts until it is reaped)."""
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


class Cleanup:
    """Ends every child (by its process group, which is its own pid) and removes the network.
    One per driver; install() makes SIGINT, SIGTERM, SIGHUP and exit run it."""

    def __init__(self, prog, kill_timeout_s=3.0):
        self.prog = prog
        self.kill_timeout_s = kill_timeout_s
        self.note = None  # said after "stopping" (e.g. how to resume)
        self.children = []
        self.holding = 0  # inside hold(): a signal waits until the child is tracked
        self.pending = None
        self.emunet = None
        self.prefix = None
        self.netns = False
        self.done = False

    def kill_children(self):
        for p in self.children:
            if reap(p) is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except OSError:
                    pass
        deadline = time.monotonic() + self.kill_timeout_s
        for p in self.children:
            # the whole group: a daemon under `emunet.sh exec` outlives its wrapper by a moment
            while (reap(p) is None or group_alive(p.pid)) and time.monotonic() < deadline:
                time.sleep(0.05)
            if reap(p) is None or group_alive(p.pid):
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                while reap(p) is None:
                    time.sleep(0.01)
        self.children = []

    def run(self):
        if self.done:
            return
        self.done = True
        self.kill_children()
        if self.netns and self.emunet:
            r = subprocess.run([self.emunet, "down", "--prefix", self.prefix],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0:
                log(self.prog, "emunet down failed: " + r.stdout.strip())
            else:
                log(self.prog, "network %s removed" % self.prefix)

    @contextlib.contextmanager
    def hold(self):
        """Defers SIGINT/SIGTERM/SIGHUP over a start of a child and its entry in children: a
        signal between the fork and the entry would leave that child running."""
        self.holding += 1
        try:
            yield
        finally:
            self.holding -= 1
            if not self.holding and self.pending:
                signum, self.pending = self.pending, None
                self.on_signal(signum, None)

    def on_signal(self, signum, _frame):
        if self.holding:
            self.pending = signum
            return
        log(self.prog, "signal %d: stopping" % signum + ("; " + self.note if self.note else ""))
        try:
            self.run()
        finally:
            # os._exit, not sys.exit: a SystemExit raised into whatever code the signal
            # interrupted can be replaced by another exception there (and a driver that carries
            # on after a failed cell would then run on without its network); nothing after the
            # cleanup is wanted anyway
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(128 + signum)

    def install(self):
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, self.on_signal)
        atexit.register(self.run)
