#!/usr/bin/env python3
"""Kernel benchmark: pycipherbench vs `openssl speed`, side by side, interleaved.

Usage: python bench/bench_kernels.py [--rounds N] [--quick] [--strict] [--seconds S]
                                     [--cpu N] [--openssl PATH] [--json FILE]

A report, not a test: it prints PASS/FAIL per bar and exits 0 unless --strict.

What `openssl speed -elapsed -evp <c> [-bytes N] [-seconds S]` does per iteration
(OpenSSL 3.0.19, Debian 3.0.19-1~deb12u2). Checked by tracing the installed
/usr/bin/openssl with gdb breakpoints on the EVP_* calls, and by reading apps/speed.c.
The installed 3.0.19 binary behaves like the NEWER speed.c loops (EVP_Update_loop_aead_enc
with loop selection by mode), not like the original 3.0.0 EVP_Update_loop_aead:

* Loop selection:
      if (mode_op == EVP_CIPH_GCM_MODE || ... CCM || OCB || SIV || GCM_SIV) {
          ae_mode = 1; loopfunc = decrypt ? EVP_Update_loop_aead_dec : EVP_Update_loop_aead_enc;
      } else loopfunc = EVP_Update_loop;
  ChaCha20-Poly1305's mode is "stream", so it is NOT an ae_mode. It streams, even with -aead.

* Non-AEAD (aes-128-ctr/ecb/cbc, des-ede3-cbc) and chacha20-poly1305: STREAMING, IN PLACE.
  The setup runs once, untimed:
      EVP_CipherInit_ex(ctx, cipher, NULL, NULL, NULL, 1); EVP_CIPHER_CTX_set_padding(ctx, 0);
      EVP_CIPHER_CTX_rand_key(ctx, key); EVP_CipherInit_ex(ctx, NULL, NULL, key, iv, -1);
  The timed loop:
      for (...) { rc = EVP_EncryptUpdate(ctx, buf, &outl, buf, lengths[testnum]);
                  if (rc != 1) /* reset iv in case of counter overflow */
                      EVP_CipherInit_ex(ctx, NULL, NULL, NULL, iv, -1); }
      EVP_EncryptFinal_ex(ctx, buf, &outl);          /* once */
  There is no key or IV re-init per iteration. CBC chains and CTR counts across calls.
  ChaCha20-Poly1305 is one endless message: no AAD, and the tag is computed once in Final.
  Trace (ctr, 16384 B, 1 s): 2 CipherInit_ex in setup, 3521 EncryptUpdate(out==in), 1 Final.
  == our `stream` scope.

* AES-GCM (plain AND -aead): PER-MESSAGE RE-KEY + IV, IN PLACE, tag computed but never read:
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, sizeof(aead_iv) /*12*/, NULL);
      EVP_CipherInit_ex(ctx, NULL, NULL, key, aead_iv, -1);          /* key+iv EVERY message */
      if (aead) EVP_EncryptUpdate(ctx, NULL, &outl, aad, sizeof(aad)); /* 13-byte AAD */
      EVP_EncryptUpdate(ctx, buf, &outl, buf, lengths[testnum]);
      EVP_EncryptFinal_ex(ctx, buf, &outl);                          /* no GET_TAG */
  Trace (16 B, 1 s): 689 iterations, each with ctrl(SET_IVLEN,12), CipherInit_ex(key!=NULL, iv!=NULL),
  EncryptUpdate(16, out==in) and Final. perf shows CRYPTO_gcm128_init, i.e. the key/H setup runs each message.
  16-B cost is dominated by EVP param plumbing (strcmp 17%, OSSL_PARAM_locate 7.5%).
  With -aead, each iteration also does EncryptUpdate(NULL, aad, 13).
  => Both forms are "rekey" scope. We compare against the PLAIN form (no AAD), because
  pcb.measure() has no AAD either. Measured at 16 B: plain ~47 MB/s, -aead ~44-46 MB/s.
  So our `message` scope (key schedule reused) must beat it (bar >= 1.0), and our `rekey`
  scope is the like-for-like match (bar 0.9..1.1).

`-mr` output: "+F:<idx>:<NAME>:<bytes per second>". -elapsed divides by wall time, and so does
our side (CLOCK_MONOTONIC). `-seconds` is an integer >= 1 (alarm-based).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import _checkout  # noqa: F401,E402  (the checkout's build before an installed copy)
import pycipherbench as pcb  # noqa: E402
from pycipherbench.stats import median_ci, median_ci_level  # noqa: E402


STREAM_CASES = [
    # (label, pcb transformation, key_bits, openssl -evp name)
    ("AES-128-CTR", "AES/CTR/NoPadding", 128, "aes-128-ctr"),
    ("AES-128-ECB", "AES/ECB/NoPadding", 128, "aes-128-ecb"),
    ("AES-128-CBC enc", "AES/CBC/NoPadding", 128, "aes-128-cbc"),
    ("ChaCha20-Poly1305", "ChaCha20-Poly1305", 256, "chacha20-poly1305"),
    ("DES-EDE3-CBC", "DESede/CBC/NoPadding", 192, "des-ede3-cbc"),
]
STREAM_PAYLOAD = 16384
GCM_SIZES = [16, 64, 256, 1024]
TEA_PAYLOAD = 1 << 20

BAR_STREAM = 0.95
BAR_GCM_MESSAGE = 1.0
BAR_GCM_REKEY = (0.9, 1.1)
BAR_TEA = 4.0
BAR_CV = 0.03


# --------------------------------------------------------------------------- openssl side
class OpenSSLSpeed:
    def __init__(self, exe: str, seconds: int):
        self.exe = exe
        self.seconds = max(1, int(seconds))

    def version(self) -> str:
        try:
            return subprocess.run([self.exe, "version"], capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError) as e:
            return f"unavailable ({e})"

    def run(self, cipher: str, nbytes: int, aead: bool = False) -> float:
        """Bytes per second (wall clock) for one `openssl speed` run."""
        cmd = [self.exe, "speed", "-elapsed", "-mr", "-seconds", str(self.seconds),
               "-bytes", str(nbytes)]
        if aead:
            cmd.append("-aead")
        cmd += ["-evp", cipher]
        p = subprocess.run(cmd, capture_output=True, text=True)
        for line in p.stdout.splitlines():
            if line.startswith("+F:"):
                fields = line.split(":")
                return float(fields[-1])
        raise RuntimeError(f"no +F line from {' '.join(cmd)} (rc={p.returncode}): "
                           f"{(p.stderr or p.stdout).strip()[-300:]}")


# --------------------------------------------------------------------------- helpers
def fmt(x, spec=".1f"):
    return "-" if x is None else format(x, spec)


def cv(xs):
    """Coefficient of variation across rounds (a noise indicator)."""
    xs = [x for x in xs if x is not None]
    return statistics.stdev(xs) / statistics.fmean(xs) if len(xs) > 1 else 0.0


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def interval(xs, spec=".3f"):
    """The 95% interval of the median of per-round values (order statistics, as
    pycipherbench.stats.median_ci; the attained level when rounds are too few)."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return "[-]"
    low, high = median_ci(xs)
    level = median_ci_level(len(xs))
    note = f" ({level:.0%})"  # the coverage it attains, always said (the heads say none)
    return f"[{format(low, spec)}, {format(high, spec)}]{note}"


class Report:
    def __init__(self):
        self.bars = []  # (name, passed: bool|None, detail)
        self.data = {}

    def bar(self, name, passed, detail):
        self.bars.append((name, passed, detail))


def ours(transformation, *, payload, scope, key_bits=None, rounds=None, min_time, repeats):
    m = pcb.measure(transformation, op="enc", payload=payload, scope=scope, key_bits=key_bits,
                    rounds=rounds, min_time=min_time, repeats=repeats)
    return m


# --------------------------------------------------------------------------- sections
def bench_stream(rep, ossl, rounds, min_time, repeats):
    print(f"\n== stream scope, {STREAM_PAYLOAD} B, pycipherbench `stream` vs "
          f"`openssl speed -elapsed -evp <c> -bytes {STREAM_PAYLOAD} -seconds {ossl.seconds}`")
    print(f"   ours: min_time={min_time:.3f}s x repeats={repeats} (median); interleaved, "
          f"order flips each round; ratio = ours MB/s / openssl MB/s, median of {rounds} rounds;"
          f"\n   best/best = fastest round ours / fastest round openssl (quiet-machine estimate); "
          f"CV = round-to-round noise")
    res = {c[0]: {"ours": [], "openssl": [], "ratio": [], "err": None} for c in STREAM_CASES}
    for r in range(rounds):
        for label, name, kb, oname in STREAM_CASES:
            d = res[label]
            if d["err"]:
                continue
            o = s = None
            try:
                order = (0, 1) if r % 2 == 0 else (1, 0)
                for which in order:
                    if which == 0:
                        o = ours(name, payload=STREAM_PAYLOAD, scope="stream", key_bits=kb,
                                 min_time=min_time, repeats=repeats).mb_per_s
                    else:
                        s = ossl.run(oname, STREAM_PAYLOAD) / 1e6
            except Exception as e:  # report, keep going
                d["err"] = f"{type(e).__name__}: {e}"
                continue
            d["ours"].append(o)
            d["openssl"].append(s)
            d["ratio"].append(o / s)
        print(f"   round {r + 1}/{rounds} done", flush=True)
    print(f"   {'cipher':<20}{'ours MB/s':>11}{'openssl MB/s':>14}{'ratio':>8}"
          f"{'[interval] (cover)':>23}{'best/best':>11}{'CV ours/ossl':>15}   bar >= {BAR_STREAM}")
    for label, *_ in STREAM_CASES:
        d = res[label]
        if d["err"]:
            print(f"   {label:<20}ERROR {d['err']}")
            rep.bar(f"stream {label} >= {BAR_STREAM}", False, d["err"])
            continue
        ratio = med(d["ratio"])
        ok = ratio >= BAR_STREAM
        rng = interval(d["ratio"])
        cvs = "%.0f%%/%.0f%%" % (100 * cv(d["ours"]), 100 * cv(d["openssl"]))
        print(f"   {label:<20}{fmt(med(d['ours'])):>11}{fmt(med(d['openssl'])):>14}"
              f"{fmt(ratio, '.3f'):>8}{rng:>23}{max(d['ours']) / max(d['openssl']):>11.3f}"
              f"{cvs:>15}   {'PASS' if ok else 'FAIL'}")
        rep.bar(f"stream {label} ratio >= {BAR_STREAM}", ok, f"ratio {ratio:.3f} {rng}")
    rep.data["stream"] = res


def bench_gcm(rep, ossl, rounds, min_time, repeats, openssl_aead):
    form = "-aead (13-B AAD)" if openssl_aead else "plain, no AAD"
    print(f"\n== AES-128-GCM per message vs `openssl speed -elapsed -evp aes-128-gcm -bytes N"
          f"{' -aead' if openssl_aead else ''}` ({form})")
    print("   openssl 3.0.19 re-keys (key schedule + GHASH H) and sets the IV every message in BOTH forms,")
    print("   so it is `rekey` scope: ours `message` must be >= 1.0x, ours `rekey` should be ~1.0x.")
    keys = [(n, sc) for n in GCM_SIZES for sc in ("message", "rekey")]
    res = {f"{n}/{sc}": {"ours": [], "ratio": [], "err": None} for n, sc in keys}
    oss = {n: [] for n in GCM_SIZES}
    for r in range(rounds):
        for n in GCM_SIZES:
            steps = ["openssl", "message", "rekey"]
            if r % 2:
                steps.reverse()
            vals = {}
            for st in steps:
                try:
                    if st == "openssl":
                        vals[st] = ossl.run("aes-128-gcm", n, aead=openssl_aead) / 1e6
                    else:
                        vals[st] = ours("AES/GCM/NoPadding", payload=n, scope=st, key_bits=128,
                                        min_time=min_time, repeats=repeats).mb_per_s
                except Exception as e:
                    key = f"{n}/{st}" if st != "openssl" else None
                    for k in ([key] if key else [f"{n}/message", f"{n}/rekey"]):
                        res[k]["err"] = f"{type(e).__name__}: {e}"
            if "openssl" not in vals:
                continue
            oss[n].append(vals["openssl"])
            for sc in ("message", "rekey"):
                if sc in vals:
                    res[f"{n}/{sc}"]["ours"].append(vals[sc])
                    res[f"{n}/{sc}"]["ratio"].append(vals[sc] / vals["openssl"])
        print(f"   round {r + 1}/{rounds} done", flush=True)
    print(f"   {'bytes':>6}{'openssl MB/s':>14}{'message MB/s':>14}{'ratio':>8}"
          f"{'rekey MB/s':>12}{'ratio':>8}{'best/best m,r':>15}{'CV ossl':>9}   bars: message >= "
          f"{BAR_GCM_MESSAGE}, rekey in {BAR_GCM_REKEY[0]}..{BAR_GCM_REKEY[1]}")
    for n in GCM_SIZES:
        dm, dr = res[f"{n}/message"], res[f"{n}/rekey"]
        rm, rr = med(dm["ratio"]), med(dr["ratio"])
        okm = rm is not None and rm >= BAR_GCM_MESSAGE
        okr = rr is not None and BAR_GCM_REKEY[0] <= rr <= BAR_GCM_REKEY[1]
        bb = "-"
        if oss[n] and dm["ours"] and dr["ours"]:
            bb = f"{max(dm['ours']) / max(oss[n]):.2f},{max(dr['ours']) / max(oss[n]):.2f}"
        print(f"   {n:>6}{fmt(med(oss[n])):>14}{fmt(med(dm['ours'])):>14}{fmt(rm, '.3f'):>8}"
              f"{fmt(med(dr['ours'])):>12}{fmt(rr, '.3f'):>8}{bb:>15}{cv(oss[n]):>9.0%}   "
              f"{'PASS' if okm else 'FAIL'}/{'PASS' if okr else 'FAIL'}")
        for d in (dm, dr):
            if d["err"]:
                print(f"          error: {d['err']}")
        rep.bar(f"GCM {n} B message ratio >= {BAR_GCM_MESSAGE}", okm,
                f"ratio {fmt(rm, '.3f')} {interval(dm['ratio'])}"
                + (f" ({dm['err']})" if dm["err"] else ""))
        rep.bar(f"GCM {n} B rekey ratio in {BAR_GCM_REKEY[0]}..{BAR_GCM_REKEY[1]}", okr,
                f"ratio {fmt(rr, '.3f')} {interval(dr['ratio'])}"
                + (f" ({dr['err']})" if dr["err"] else ""))
    rep.data["gcm"] = {"openssl_form": form, "openssl_mb_s": oss, "ours": res}


def bench_tea(rep, rounds, min_time, repeats):
    print(f"\n== TEA optimized vs reference, ECB/NoPadding, 32 cycles, {TEA_PAYLOAD} B, message scope")
    opt, ref, ratio = [], [], []
    err = None
    for r in range(rounds):
        try:
            pair = ["TEA/ECB/NoPadding", "TEA-ref/ECB/NoPadding"]
            if r % 2:
                pair.reverse()
            v = {}
            for name in pair:
                v[name] = ours(name, payload=TEA_PAYLOAD, scope="message", rounds=32,
                               min_time=min_time, repeats=repeats).mb_per_s
        except Exception as e:
            err = f"{type(e).__name__}: {e}"
            break
        opt.append(v["TEA/ECB/NoPadding"])
        ref.append(v["TEA-ref/ECB/NoPadding"])
        ratio.append(opt[-1] / ref[-1])
    if err:
        print(f"   ERROR {err}")
        rep.bar(f"TEA speedup >= {BAR_TEA}x", False, err)
        return
    sp = med(ratio)
    ok = sp >= BAR_TEA
    print(f"   optimized {med(opt):.1f} MB/s, reference {med(ref):.1f} MB/s, speedup {sp:.2f}x "
          f"{interval(ratio, '.2f')}   bar >= {BAR_TEA}x: {'PASS' if ok else 'FAIL'}")
    rep.bar(f"TEA speedup >= {BAR_TEA}x", ok, f"{sp:.2f}x {interval(ratio, '.2f')}")
    rep.data["tea"] = {"opt_mb_s": opt, "ref_mb_s": ref, "speedup": ratio}


def bench_repeat(rep, n=5):
    print(f"\n== repeatability: {n} x pcb.measure('AES/CTR/NoPadding', scope='stream', "
          f"payload={STREAM_PAYLOAD}) with default min_time/repeats")
    meds = []
    try:
        for _ in range(n):
            m = pcb.measure("AES/CTR/NoPadding", scope="stream", payload=STREAM_PAYLOAD,
                            key_bits=128)
            meds.append(m.median)
    except Exception as e:
        print(f"   ERROR {type(e).__name__}: {e}")
        rep.bar(f"repeatability CV <= {BAR_CV:.0%}", False, str(e))
        return
    mean = statistics.fmean(meds)
    cv = statistics.stdev(meds) / mean
    ok = cv <= BAR_CV
    print("   medians (ns/op): " + ", ".join(f"{x:.0f}" for x in meds)
          + f"  -> {STREAM_PAYLOAD * 1e3 / mean:.1f} MB/s mean")
    print(f"   CV of medians = {cv:.2%} (sample stdev / mean)   bar <= {BAR_CV:.0%}: "
          f"{'PASS' if ok else 'FAIL'}")
    rep.bar(f"repeatability CV <= {BAR_CV:.0%}", ok, f"CV {cv:.2%}")
    rep.data["repeat"] = {"medians_ns": meds, "cv": cv}


# --------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=None,
                    help="interleaved rounds per comparison (default 7, --quick 2)")
    ap.add_argument("--quick", action="store_true", help="short run (< 1 min)")
    ap.add_argument("--strict", action="store_true", help="exit 1 if any bar fails")
    ap.add_argument("--seconds", type=int, default=1,
                    help="openssl speed -seconds (integer >= 1; default 1)")
    ap.add_argument("--openssl", default="openssl", help="openssl executable")
    ap.add_argument("--openssl-aead", action="store_true",
                    help="compare GCM against `openssl speed -aead` (13-B AAD) instead of plain")
    ap.add_argument("--cpu", type=int, default=None,
                    help="pin this process and the openssl children to one CPU")
    ap.add_argument("--json", metavar="FILE", help="write raw numbers as JSON")
    args = ap.parse_args(argv)

    rounds = args.rounds or (2 if args.quick else 7)
    seconds = max(1, args.seconds)
    # Our side: about as long as one `openssl speed -seconds S` run (plus calibration).
    repeats = 5 if args.quick else 9
    min_time = (0.5 if args.quick else 1.0) * seconds / repeats
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})

    t_start = time.monotonic()
    ossl = OpenSSLSpeed(args.openssl, seconds)
    mach = pcb.machine()
    print("pycipherbench kernel benchmark")
    print("machine:")
    for k, v in mach.items():
        if k == "cpu_flags" and isinstance(v, (list, tuple)):
            interesting = [f for f in v if f in ("aes", "pclmulqdq", "avx", "avx2", "avx512f",
                                                  "avx512bw", "vaes", "vpclmulqdq", "sha_ni")]
            v = " ".join(interesting) + f"  ({len(mach[k])} flags)"
        print(f"  {k}: {v}")
    print(f"  openssl CLI: {ossl.version()}")
    try:
        la = os.getloadavg()
        print(f"  loadavg: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}   affinity: "
              f"{sorted(os.sched_getaffinity(0))}")
    except OSError:
        pass
    print(f"settings: rounds={rounds}, openssl -seconds {seconds}, ours min_time={min_time:.3f}s "
          f"x repeats={repeats}{' (quick)' if args.quick else ''}")

    rep = Report()
    bench_stream(rep, ossl, rounds, min_time, repeats)
    bench_gcm(rep, ossl, rounds, min_time, repeats, args.openssl_aead)
    bench_tea(rep, max(2, rounds // 2), min_time=0.1 if args.quick else 0.2,
              repeats=3 if args.quick else 5)
    bench_repeat(rep)

    print("\n== summary")
    for name, ok, detail in rep.bars:
        print(f"   {'PASS' if ok else 'FAIL'}  {name:<42} {detail}")
    nfail = sum(1 for _, ok, _ in rep.bars if not ok)
    print(f"   {len(rep.bars) - nfail}/{len(rep.bars)} bars passed; "
          f"total time {time.monotonic() - t_start:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": mach, "settings": {"rounds": rounds, "seconds": seconds,
                       "min_time": min_time, "repeats": repeats}, "bars": rep.bars,
                       "data": rep.data}, f, indent=1, default=str)
    return 1 if (args.strict and nfail) else 0


if __name__ == "__main__":
    sys.exit(main())
