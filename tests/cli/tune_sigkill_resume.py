#!/usr/bin/env python3
"""A tuner killed with SIGKILL loses nothing, and the same command again finishes the job.

    tune_sigkill_resume.py KILN MODEL.onnx WORKDIR [--trials N] [--kill-after R]

Starts `KILN tune MODEL --log WORKDIR/tune_sigkill_resume.json --trials N` in a process group
of its own, waits until its log holds R records, and sends SIGKILL to the tuner alone (as
`kill -9 PID` or the OOM killer would; a kill of the whole group would hide a measuring child
that outlives the tuner, which is checked: each child must die with its parent). Then:
  - the log holds only whole records: every line parses, the last ends with its newline;
  - no process of the tuner's group is left (the children it forks to build and measure);
  - the same command again exits 0, reports every record of the killed run as resumed, keeps
    those records byte for byte (the old log is a prefix of the new one), measures no config
    twice, and ends with each task's full trial count in the log (or its space exhausted).
Exits 0 when all holds; otherwise prints what did not and exits 1.
"""
import argparse
import collections
import json
import os
import re
import signal
import subprocess
import sys
import time

FIELDS = ("task", "workload", "target", "config", "costs", "error", "gflops", "timestamp", "version")


def fail(message, output=None):
    print("FAIL: " + message)
    if output:
        print("---- kiln output ----\n" + output)
    sys.exit(1)


def read_records(path, when):
    """The log's records, failing on a torn or malformed line."""
    with open(path, "rb") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        fail(f"{when}: the log's last line is torn (no newline at its end): {data.splitlines()[-1][:200]!r}")
    records = []
    for n, line in enumerate(data.decode().splitlines(), 1):
        try:
            record = json.loads(line)
        except ValueError as e:
            fail(f"{when}: log line {n} does not parse ({e}): {line[:200]!r}")
        missing = [k for k in FIELDS if k not in record]
        if missing:
            fail(f"{when}: log line {n} lacks {missing}: {line[:200]!r}")
        records.append(record)
    return data, records


def group_members(pgid):
    """Live (not zombie) processes of process group pgid: pid -> command name."""
    members = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        state, _ppid, pgrp = stat[stat.rindex(")") + 2:].split()[:3]
        if int(pgrp) == pgid and state != "Z":
            members[int(entry)] = f"{comm} ({state})"
    return members


def config_key(record):
    return json.dumps(record["config"], sort_keys=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kiln")
    p.add_argument("model")
    p.add_argument("workdir")
    p.add_argument("--trials", type=int, default=12)
    # tiny_cnn at 12 trials: tasks of 12, 12, 12, 12 and 2 records; the kill lands in task 2.
    p.add_argument("--kill-after", type=int, default=18, help="records in the log before the kill")
    a = p.parse_args()

    log = os.path.join(a.workdir, "tune_sigkill_resume.json")
    out_path = os.path.join(a.workdir, "tune_sigkill_resume.out")
    for path in (log, out_path):
        if os.path.exists(path):
            os.remove(path)
    # Kernel records only: the graph choices' own resume is a unit test (test_autotune_graph_choices).
    cmd = [a.kiln, "tune", a.model, "--log", log, "--trials", str(a.trials), "--seed", "1", "--no-graph-choices"]
    print("command:", " ".join(cmd))
    t0 = time.monotonic()

    # 1. Run it and kill it, with SIGKILL, once the log holds --kill-after records.
    with open(out_path, "w") as out:
        tuner = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    pgid = tuner.pid  # start_new_session: the tuner leads a group of its own
    try:
        deadline = time.monotonic() + 120
        records_seen = 0
        while True:
            if tuner.poll() is not None:
                fail(f"the tuner ended (status {tuner.returncode}) with {records_seen} records in its log, before it "
                     f"could be killed at {a.kill_after}: raise --trials", open(out_path).read())
            if time.monotonic() > deadline:
                fail(f"the log held {records_seen} records after 120 s, not {a.kill_after}", open(out_path).read())
            if os.path.exists(log):
                with open(log, "rb") as f:
                    records_seen = f.read().count(b"\n")
            if records_seen >= a.kill_after:
                break
            time.sleep(0.02)
        os.kill(tuner.pid, signal.SIGKILL)
        tuner.wait()
        print(f"killed the tuner (pid {tuner.pid}) with SIGKILL after {time.monotonic() - t0:.1f} s, its log holding "
              f"{records_seen}+ records")
        # Its children die with it (PR_SET_PDEATHSIG): give the kernel a moment to deliver.
        left = group_members(pgid)
        wait_until = time.monotonic() + 5
        while left and time.monotonic() < wait_until:
            time.sleep(0.05)
            left = group_members(pgid)
        if left:
            fail(f"processes of the killed tuner's group outlived it by 5 s: {left}")
    finally:
        try:
            os.killpg(pgid, signal.SIGKILL)  # whatever is left, whatever went wrong
        except ProcessLookupError:
            pass
    killed_output = open(out_path).read()
    before_bytes, before = read_records(log, "after the kill")
    print(f"after the kill: {len(before)} whole records, no torn line, no process left")

    # 2. The same command again: resumes and finishes.
    t1 = time.monotonic()
    rerun = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=150)
    output = rerun.stdout
    print(f"rerun: status {rerun.returncode} after {time.monotonic() - t1:.1f} s")
    if rerun.returncode != 0:
        fail(f"the rerun exited with status {rerun.returncode}", output)
    header = re.search(r"log .* \((\d+) records\)", output)
    if not header or int(header.group(1)) != len(before):
        fail(f"the rerun did not report the {len(before)} records of the killed run", output)
    tasks = re.findall(r"^\[(\d+)/(\d+)\] .*?: (\d+)/(\d+) trials \((\d+) resumed, (\d+) errors(, space exhausted|, stopped "
                       r"early)?\)", output, re.M)
    if not tasks or len(tasks) != int(tasks[0][1]):
        fail("the rerun did not report every task", output)
    resumed = sum(int(t[4]) for t in tasks)
    if resumed != len(before):
        fail(f"the rerun resumed {resumed} records, not the {len(before)} of the killed run", output)
    for t in tasks:
        done, wanted, cut_short = int(t[2]), int(t[3]), t[6]
        if done != wanted and not cut_short:
            fail(f"task {t[0]} ended with {done} of {wanted} trials", output)

    after_bytes, after = read_records(log, "after the rerun")
    if not after_bytes.startswith(before_bytes):
        fail("the rerun changed or dropped records of the killed run (the old log is not a prefix of the new)")
    # Tasks are tuned in the same order by both runs, so the log's workloads, in the order of their
    # first records, are the tasks in the order of the report.
    per_workload = collections.OrderedDict()
    for r in after:
        per_workload.setdefault(r["workload"], []).append(config_key(r))
    for workload, configs in per_workload.items():
        if len(set(configs)) != len(configs):
            fail(f"a config of {workload} was measured twice")
    counts = [len(c) for c in per_workload.values()]
    reported = [int(t[2]) for t in tasks]
    if counts != reported:
        fail(f"the log holds {counts} records per task, the rerun reported {reported}", output)
    print(f"rerun: {len(tasks)} tasks, {resumed} records resumed, {len(after) - len(before)} measured, "
          f"per task {reported} trials; every record of the killed run kept")
    print(f"PASS in {time.monotonic() - t0:.1f} s")
    print("---- killed run's output ----\n" + killed_output + "---- rerun's output ----\n" + output)


if __name__ == "__main__":
    main()
