"""Child process for tests/test_store.py's crash tests: commits (and rotates) until killed.

Usage: python store_crash_child.py PATH MASTER_KEY_FILE MODE   (MODE: "commit" or "rotate")

The child imports the package, then waits for a line on stdin (so the parent can start it
ahead of time), opens the store, reads the committed counter ``c`` and prints ``ready c``.
It then commits the full states ``state(c+1)``, ``state(c+2)``, ... printing ``c i`` after
each commit returns; in "rotate" mode it also rotates the keys after each commit and prints
``r i``. The parent SIGKILLs it at a random moment. It stops by itself after a while (or
when stdin closes before the start line) so that no stray process outlives a failed test.
"""

import sys
import time

N_INTS = 6


def state(i: int) -> dict:
    """The whole content of the store after the child committed counter i."""
    d = {f"k{j}": i for j in range(N_INTS)}
    d["long"] = (i << 33) + 7
    d["text"] = f"state-{i}-" * (1 + i % 7)  # the file's size changes from state to state
    d["set"] = {f"m{i}", f"m{i + 1}", "fixed"}
    d["flag"] = i % 2 == 0
    if i % 3 == 0:
        d["every third"] = f"third {i}"  # entries come and go as well
    return d


def write_state(store, i: int, *, apply: bool = False) -> None:
    e = store.edit()
    for j in range(N_INTS):
        e.put_int(f"k{j}", i)
    e.put_long("long", (i << 33) + 7)
    e.put_string("text", f"state-{i}-" * (1 + i % 7))
    e.put_string_set("set", {f"m{i}", f"m{i + 1}", "fixed"})
    e.put_bool("flag", i % 2 == 0)
    if i % 3 == 0:
        e.put_string("every third", f"third {i}")
    else:
        e.remove("every third")
    if apply:
        e.apply()
    else:
        assert e.commit() is True


def main() -> None:
    path, master_key_file, mode = sys.argv[1:4]
    from pycipherbench import store

    if not sys.stdin.readline():
        return  # the parent went away before starting us
    s = store.open(path, master_key_file=master_key_file)
    c = s.get_int("k0")
    print(f"ready {c}", flush=True)
    deadline = time.monotonic() + 30
    i = c
    while time.monotonic() < deadline:
        i += 1
        write_state(s, i)
        print(f"c {i}", flush=True)
        if mode == "rotate":
            s.rotate()
            print(f"r {i}", flush=True)
    s.close()


if __name__ == "__main__":
    main()
