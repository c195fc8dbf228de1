#!/usr/bin/env python3
"""Runs the MPI test programs listed in mpi_tests/testlist.

Each line: `program nranks [key=value ...]` where keys are
  env.VAR=VALUE   environment for the job
  exit=N[|M...]   expected exit status of mpirun (default 0; alternatives with |)
  stderr=TEXT     text that must appear in the job's stderr (repeatable; '~' = space)
  stdout=TEXT     text that must appear in stdout
  timeout=S       seconds before the job is killed (default 60)
  cuda=double     ranks use the project's test double of the CUDA driver
                  (mpi_tests/cuda_double.c, built here as libcuda.so.1)
  cuda=devbuf     as cuda=double, and the ranks preload mpi_tests/devbuf_shim.c,
                  which moves the buffers of the wrapped MPI calls to device memory
Programs are C files in mpi_tests/ built with PREFIX/bin/mpicc (or mpicxx for .cc).
Every job runs under `mpirun --timeout` and in its own session; when the
timeout fires the whole session is killed and the case fails with a message.
After each job /dev/shm must hold no oxmpi-* file.
Usage: run.py PREFIX [--cflags=...] [--filter=substring]
"""
import os, shlex, signal, subprocess, sys, time, pathlib

here = pathlib.Path(__file__).resolve().parent
root = here.parent

def main():
    prefix = pathlib.Path(sys.argv[1]).resolve()
    cflags = []
    filt = None
    for a in sys.argv[2:]:
        if a.startswith("--cflags="):
            cflags = shlex.split(a[len("--cflags="):])
        elif a.startswith("--filter="):
            filt = a[len("--filter="):]
    tag = "asan" if any("sanitize" in c for c in cflags) else "plain"
    bdir = root / "build" / "tests" / tag
    bdir.mkdir(parents=True, exist_ok=True)
    gen = here / "gen_constants.py"
    subprocess.run([sys.executable, str(gen), str(bdir / "constants.c")], check=True)
    cases = []
    for line in (here / "testlist").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        f = line.split()
        opts = {"env": {}, "exit": [0], "stderr": [], "stdout": [], "timeout": 60.0}
        for kv in f[2:]:
            k, v = kv.split("=", 1)
            if k.startswith("env."):
                opts["env"][k[4:]] = v
            elif k in ("stderr", "stdout"):
                opts[k].append(v.replace("~", " "))
            elif k == "exit":
                opts["exit"] = [int(x) for x in v.split("|")]
            elif k == "timeout":
                opts["timeout"] = float(v)
            elif k == "cuda" and v in ("double", "devbuf"):
                opts["cuda"] = v
        cases.append((f[0], int(f[1]), opts))
    built = {}
    failures = []
    # The test double of the CUDA driver, for cases with cuda=double.
    double = bdir / "cuda_double"
    double.mkdir(exist_ok=True)
    r = subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-g", "-Wall", "-Werror", str(here / "cuda_double.c"),
                        "-o", str(double / "libcuda.so.1"), "-lpthread"], capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"cuda_double: build failed\n{r.stderr}")
    shim = bdir / "devbuf_shim.so"
    r = subprocess.run([str(prefix / "bin" / "mpicc"), "-shared", "-fPIC", "-O1", "-g", "-Wall", "-Werror", str(here / "devbuf_shim.c"),
                        "-o", str(shim)], capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"devbuf_shim: build failed\n{r.stderr}")
    t0 = time.time()
    for prog, n, opts in cases:
        name = f"{prog} -n {n}" + "".join(f" {k}={v}" for k, v in opts["env"].items()) + (f" cuda={opts['cuda']}" if opts.get("cuda") else "")
        if filt and filt not in name:
            continue
        if opts.get("cuda") == "devbuf" and tag == "asan":
            # A preloaded shim cannot come before ASan's runtime.
            continue
        if "CUDA_DOUBLE_KERNELS" in opts["env"] and not os.environ.get("OXMPI_NVRTC_LIB"):
            # The kernels are compiled with NVRTC first (tools/test.sh sets
            # OXMPI_NVRTC_LIB to the wheel's library).
            print(f"skip {name}: OXMPI_NVRTC_LIB is not set", flush=True)
            continue
        if prog not in built:
            src = next((p for p in (here / (prog + e) for e in (".c", ".f", ".f90")) if p.exists()), bdir / (prog + ".c"))
            exe = bdir / prog
            if src.suffix == ".c":
                cmd = [str(prefix / "bin" / "mpicc"), "-O1", "-g", "-Wall", "-Werror", *cflags, str(src), "-o", str(exe), "-lpthread", "-lm"]
            else:
                fflags = [c for c in cflags if "sanitize=undefined" not in c]
                cmd = [str(prefix / "bin" / "mpif90"), "-O1", "-g", "-Wall", *fflags, str(src), "-o", str(exe), "-J", str(bdir)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                failures.append(f"{prog}: build failed\n{r.stderr}")
                print(f"BUILD FAIL {prog}\n{r.stderr}", flush=True)
                built[prog] = None
                continue
            built[prog] = exe
        exe = built[prog]
        if exe is None:
            continue
        env = dict(os.environ)
        env.update(opts["env"])
        if opts.get("cuda"):
            env["LD_LIBRARY_PATH"] = str(double) + ":" + env.get("LD_LIBRARY_PATH", "")
            if os.environ.get("OXMPI_NVRTC_LIB"):
                # NVRTC opens libnvrtc-builtins by name from its own
                # directory ($ORIGIN), which ASan's dlopen interceptor hides.
                nvrtc_dir = os.path.dirname(os.environ["OXMPI_NVRTC_LIB"])
                env["LD_LIBRARY_PATH"] = nvrtc_dir + ":" + env["LD_LIBRARY_PATH"]
            env["OXMPI_CUDA_LIB"] = str(double / "libcuda.so.1")
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        tmo = opts["timeout"]
        cmd = [str(prefix / "bin" / "mpirun"), "-n", str(n), "--timeout", str(tmo), str(exe)]
        if opts.get("cuda") == "devbuf":
            cmd[1:1] = ["-x", f"LD_PRELOAD={shim}"]
        start = time.time()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
        try:
            out, err = p.communicate(timeout=tmo + 15)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            rc = None
        dt = time.time() - start
        out = out.decode(errors="replace")
        err = err.decode(errors="replace")
        problems = []
        if rc is None:
            problems.append(f"hung: killed after {tmo + 15:.0f} s")
        elif rc not in opts["exit"]:
            problems.append(f"exit status {rc}, expected {'|'.join(map(str, opts['exit']))}")
        for t in opts["stderr"]:
            if t not in err:
                problems.append(f"stderr lacks {t!r}")
        for t in opts["stdout"]:
            if t not in out:
                problems.append(f"stdout lacks {t!r}")
        if opts["exit"] == [0] and "FAIL" in out:
            problems.append("a rank printed FAIL")
        left = [x for x in os.listdir("/dev/shm") if x.startswith("oxmpi-")]
        if left:
            problems.append(f"left in /dev/shm: {left}")
            for x in left:
                try:
                    os.unlink("/dev/shm/" + x)
                except OSError:
                    pass
        status = "ok  " if not problems else "FAIL"
        print(f"{status} {name:60s} {dt:6.2f}s", flush=True)
        if problems:
            failures.append(f"{name}: {'; '.join(problems)}\n--- stdout ---\n{out[-3000:]}\n--- stderr ---\n{err[-3000:]}")
    print(f"\n{len(cases)} cases, {len(failures)} failed, {time.time() - t0:.1f} s")
    for f in failures:
        print("\n=== " + f)
    sys.exit(1 if failures else 0)

if __name__ == "__main__":
    main()
