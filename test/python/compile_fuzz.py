"""A compile-time fuzzer: random programs, each compiled under a time limit.

Each seed gives a program: a random DAG of Graph IR ops (elementwise ops,
row and column reductions broadcast back, softmax and the norms, casts,
matrix products) over one to three [R, C] inputs, where each op reads the
latest value or any earlier one (fan-out) and two values (fan-in), ending
in a scalar that sums several of them. The program is compiled forward or
through `ts.grad`, `ts.jvp`, `ts.hvp` or a gradient of a gradient, in a
worker process; a compile that runs past the limit kills the worker and
the program is written out (as Python source, with the command that reruns
it) to the corpus directory, whose programs `test_compile_fuzz.py` keeps
compiling. Results are checked in float64: forward values against NumPy,
directional derivatives against JAX running the same NumPy program.

  python test/python/compile_fuzz.py --seconds 600            # long run
  python test/python/compile_fuzz.py --seed 1234 --show       # one program
"""

import argparse
import json
import os
import random
import subprocess
import sys
import time
import traceback

MODES = ["forward", "grad", "jvp", "hvp", "grad_of_grad"]

# One op: Tessera and NumPy templates over {a} and {b}; outputs stay of
# order one (binary ops average, products go through tanh), so a chain of
# hundreds stays finite.
OPS = {
    "add": ("({a} + {b}) * 0.5", "({a} + {b}) * 0.5"),
    "sub": ("({a} - {b}) * 0.5", "({a} - {b}) * 0.5"),
    "mul_tanh": ("{a} * op.tanh({b})", "{a} * np.tanh({b})"),
    "maximum": ("op.maximum({a}, {b})", "np.maximum({a}, {b})"),
    "tanh": ("op.tanh({a})", "np.tanh({a})"),
    "sigmoid": ("op.sigmoid({a})", "1.0 / (1.0 + np.exp(-{a}))"),
    "sin": ("op.sin({a})", "np.sin({a})"),
    "gauss": ("op.exp(-({a} * {a}))", "np.exp(-({a} * {a}))"),
    "softmax": ("op.softmax({a}, axis=-1)", "_softmax({a})"),
    "log_softmax": ("op.log_softmax({a}, axis=-1) * 0.1",
                    "_log_softmax({a}) * 0.1"),
    "layernorm": ("op.layernorm({a}) * 0.5 + {b} * 0.5",
                  "_layernorm({a}) * 0.5 + {b} * 0.5"),
    "rmsnorm": ("op.rmsnorm({a}) * 0.5", "_rmsnorm({a}) * 0.5"),
    "row_sum": ("op.reduce_sum({a}, axis=-1, keepdims=True) * 0.1 + {b}",
                "{a}.sum(-1, keepdims=True) * 0.1 + {b}"),
    "row_max": ("op.reduce_max({a}, axis=-1, keepdims=True) - {a}",
                "{a}.max(-1, keepdims=True) - {a}"),
    "col_mean": ("op.reduce_mean({a}, axis=0, keepdims=True) + {b} * 0.5",
                 "{a}.mean(0, keepdims=True) + {b} * 0.5"),
    "matmul": ("op.tanh({a} @ w)", "np.tanh({a} @ w)"),
    "cast": ("op.cast(op.cast({a}, ts.{dtype}), ts.f32)",
             "_round({a}, '{dtype}')"),
}

PRELUDE = '''import numpy as np
import ml_dtypes
import tessera as ts
from tessera import op


def _softmax(h):
    e = np.exp(h - h.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _log_softmax(h):
    m = h.max(-1, keepdims=True)
    return h - m - np.log(np.exp(h - m).sum(-1, keepdims=True))


def _layernorm(h):
    m = h.mean(-1, keepdims=True)
    return (h - m) / np.sqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5)


def _rmsnorm(h):
    return h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-5)


def _round(h, dtype):
    t = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}[dtype]
    return h.astype(t).astype(h.dtype)
'''


def generate(seed, max_ops=120):
    """The program of `seed` as Python source defining `SHAPE`, `MODE`,
    `CASTS` and `KINKS` (whether it rounds, where float32 and float64 may
    part, or has maxima, whose derivative at a tie is a convention),
    `f(x, *rest)` (Tessera),
    `f_np(x, *rest)` (NumPy) and `inputs(rng)`."""
    rng = random.Random(seed)
    rows = rng.choice([1, 2, 3, 5, 8, 17])
    cols = rng.choice([1, 3, 6, 16, 33])
    n_inputs = rng.randint(1, 3)
    n_ops = rng.randint(1, max_ops)
    mode = rng.choice(MODES)
    names = list(OPS)
    # Long chains of few kinds (the patterns fusion treats
    # specially) as well as mixtures.
    if rng.random() < 0.3:
        names = rng.sample(names, rng.randint(1, 3))
    pool = [f"x{i}" for i in range(n_inputs)]
    body_ts, body_np, casts, kinks = [], [], False, False
    for k in range(n_ops):
        name = rng.choice(names)
        latest = pool[-1]
        a = latest if rng.random() < 0.6 else rng.choice(pool)
        b = rng.choice(pool)
        ts_t, np_t = OPS[name]
        dtype = rng.choice(["f16", "bf16"])
        casts |= name == "cast"
        kinks |= name in ("maximum", "row_max")
        v = f"v{k}"
        body_ts.append(f"    {v} = " + ts_t.format(a=a, b=b, dtype=dtype))
        body_np.append(f"    {v} = " + np_t.format(a=a, b=b, dtype=dtype))
        pool.append(v)
    outs = [pool[-1]] + rng.sample(pool, min(len(pool), rng.randint(0, 3)))
    ret_ts = " + ".join(f"op.reduce_sum({o} * {o})" for o in outs)
    ret_np = " + ".join(f"({o} * {o}).sum()" for o in outs)
    params = ", ".join(pool[:n_inputs] + ["w"])
    return (PRELUDE + f'''

# seed {seed}: {n_ops} ops, {n_inputs} inputs, mode {mode}
SHAPE = ({rows}, {cols})
MODE = "{mode}"
CASTS = {casts}
KINKS = {kinks}


def f({params}):
''' + "\n".join(body_ts) + f'''
    return {ret_ts}


def f_np({params}):
''' + "\n".join(body_np) + f'''
    return {ret_np}


def inputs(rng):
    xs = [rng.standard_normal(SHAPE).astype(np.float32)
          for _ in range({n_inputs})]
    w = (rng.standard_normal(({cols}, {cols})) / np.sqrt({cols})).astype(
        np.float32)
    return xs + [w]
''')


def _jax_program(source):
    """The program's NumPy function run by jax.numpy in float64: the oracle
    of its derivatives (central differences lose too many digits where a
    normalization over few elements curves sharply)."""
    import jax
    jax.config.update("jax_enable_x64", True)
    ns = {}
    exec(compile(source.replace("import numpy as np",
                                "import jax.numpy as np", 1),
                 "<fuzz program, JAX>", "exec"), ns)
    return ns["f_np"]


def load(seed, max_ops=120):
    """The program of `seed` (see generate), run: its namespace and the
    inputs it makes."""
    import numpy as np
    ns = {}
    exec(compile(generate(seed, max_ops), f"<fuzz {seed}>", "exec"), ns)
    return ns, ns["inputs"](np.random.default_rng(seed))


def program(ns, args):
    """The function the program's mode compiles (f, its gradient, a JVP, an
    HVP or a gradient of a gradient, with respect to its first input, along
    fixed random directions; the other inputs are arguments too) and the
    arguments it takes."""
    import numpy as np
    import tessera as ts
    from tessera import op
    f, mode = ns["f"], ns["MODE"]
    x, rest = args[0], tuple(args[1:])
    t = np.random.default_rng(7).standard_normal(x.shape).astype(np.float32)
    u = np.random.default_rng(8).standard_normal(x.shape).astype(np.float32)
    if mode == "forward":
        return f, (x, *rest)
    if mode == "grad":
        return ts.grad(f), (x, *rest)
    if mode == "jvp":
        return (lambda x, t, *r: ts.jvp(lambda x: f(x, *r), (x,), (t,))[1],
                (x, t, *rest))
    if mode == "hvp":
        return (lambda x, u, *r: ts.hvp(lambda x: f(x, *r), (x,), (u,))[0],
                (x, u, *rest))
    return (ts.grad(lambda x, *r: op.reduce_sum(ts.grad(f)(x, *r) * u)),
            (x, *rest))


def _compiled(ns, args, source):
    """The jit function for the program's mode, its arguments, a reduction
    of its result to what is compared, and the float64 value that should
    come out (NumPy for values, JAX for derivatives)."""
    import numpy as np
    import tessera as ts
    f_np, mode = ns["f_np"], ns["MODE"]
    x, rest = args[0], args[1:]
    fn, call_args = program(ns, args)
    jitted = ts.jit(fn, cache_dir="")
    if mode == "forward":
        return (jitted, call_args, lambda r: r,
                f_np(x.astype(np.float64),
                     *[r.astype(np.float64) for r in rest]))
    import jax
    import jax.numpy as jnp
    f_jax = _jax_program(source)
    t = np.random.default_rng(7).standard_normal(x.shape).astype(np.float32)
    u = np.random.default_rng(8).standard_normal(x.shape).astype(np.float32)
    x64, t64, u64 = (jnp.asarray(a, jnp.float64) for a in (x, t, u))

    def g_jax(x):
        return f_jax(x, *[jnp.asarray(r, jnp.float64) for r in rest])
    along = float(jax.jvp(g_jax, (x64,), (t64,))[1])
    second = float(jnp.vdot(jax.jvp(jax.grad(g_jax), (x64,), (u64,))[1],
                            t64))
    t_np = np.asarray(t, np.float64)
    if mode in ("grad", "hvp", "grad_of_grad"):
        return (jitted, call_args, lambda r: np.vdot(r, t_np),
                along if mode == "grad" else second)
    return jitted, call_args, lambda r: r, along


def run_program(source):
    """Compiles and runs one program: (compile seconds, error or None)."""
    import numpy as np
    ns = {}
    exec(compile(source, "<fuzz program>", "exec"), ns)
    args = ns["inputs"](np.random.default_rng(0))
    fn, fn_args, reduce, expected = _compiled(ns, args, source)
    start = time.perf_counter()
    result = fn(*fn_args)
    seconds = time.perf_counter() - start
    if ns["CASTS"] or not np.all(np.isfinite(expected)):
        return seconds, None
    if ns["KINKS"] and ns["MODE"] != "forward":
        return seconds, None  # (a maximum's derivative at near-ties)
    got = reduce(np.asarray(result, np.float64))
    scale = 1.0 + np.abs(expected)
    if not np.all(np.abs(got - expected) <= 2e-2 * scale):
        return seconds, f"value {got} where NumPy gives {expected}"
    return seconds, None


def worker():
    """Reads {"seed", "max_ops"} lines, answers one JSON line each."""
    for line in sys.stdin:
        job = json.loads(line)
        source = generate(job["seed"], job["max_ops"])
        try:
            seconds, error = run_program(source)
        except Exception:  # noqa: BLE001 -- reported, the run goes on
            seconds, error = -1.0, traceback.format_exc(limit=3)
        print(json.dumps({"seed": job["seed"], "seconds": seconds,
                          "error": error}), flush=True)


class Pool:
    """One worker process, restarted after a compile over the limit."""

    def __init__(self):
        self.proc = None

    def ask(self, job, limit):
        if self.proc is None:
            self.proc = subprocess.Popen(
                [sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, text=True, bufsize=1)
            # The first program also imports Tessera: not counted.
            limit += 30
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        import selectors
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout=limit):
            self.close()
            return None
        line = self.proc.stdout.readline()
        if not line:
            self.close()
            return {"seed": job["seed"], "seconds": -1.0,
                    "error": "the worker process died"}
        return json.loads(line)

    def close(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def keep(corpus, seed, max_ops, limit):
    """Writes the program of `seed` to the corpus directory."""
    os.makedirs(corpus, exist_ok=True)
    path = os.path.join(corpus, f"seed_{seed}.py")
    with open(path, "w") as out:
        out.write(f"# Compiled for more than {limit:g} s when found; "
                  f"`compile_fuzz.py --seed {seed} --max-ops {max_ops}` "
                  f"reruns it.\n")
        out.write(generate(seed, max_ops))
    return path


def fuzz(seconds, limit, max_ops, first_seed, corpus, log=print):
    """Runs programs from `first_seed` on for `seconds`; returns a summary
    dict (programs, failures, slow seeds, (compile time, seed) pairs)."""
    pool = Pool()
    summary = {"programs": 0, "failures": [], "slow": [], "times": []}
    deadline = time.monotonic() + seconds
    seed = first_seed
    try:
        while time.monotonic() < deadline:
            answer = pool.ask({"seed": seed, "max_ops": max_ops}, limit)
            summary["programs"] += 1
            if answer is None:
                path = keep(corpus, seed, max_ops, limit) if corpus else None
                summary["slow"].append(seed)
                log(f"seed {seed}: over the {limit:g} s limit"
                    + (f"; kept as {path}" if path else ""))
            elif answer["error"]:
                summary["failures"].append((seed, answer["error"]))
                log(f"seed {seed}: {answer['error']}")
            else:
                summary["times"].append((answer["seconds"], seed))
            seed += 1
    finally:
        pool.close()
    return summary


def report(summary):
    times = sorted(summary["times"])
    if times:
        slowest, seed = times[-1]
        print(f"{summary['programs']} programs; compile time median "
              f"{times[len(times) // 2][0]:.2f} s, max {slowest:.2f} s "
              f"(seed {seed}); {len(summary['slow'])} over the limit, "
              f"{len(summary['failures'])} failures")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--limit", type=float, default=20,
                        help="compile time limit per program (s)")
    parser.add_argument("--max-ops", type=int, default=120)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--seed", type=int, help="run this program only")
    parser.add_argument("--show", action="store_true",
                        help="print the program of --seed")
    parser.add_argument("--corpus", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "compile_fuzz_corpus"))
    parser.add_argument("--worker", action="store_true",
                        help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.worker:
        return worker()
    if a.seed is not None:
        source = generate(a.seed, a.max_ops)
        if a.show:
            print(source)
            return 0
        seconds, error = run_program(source)
        print(f"seed {a.seed}: {seconds:.2f} s" + (f"; {error}" if error
                                                   else ""))
        return 1 if error else 0
    summary = fuzz(a.seconds, a.limit, a.max_ops, a.first_seed, a.corpus)
    report(summary)
    return 1 if summary["slow"] or summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
