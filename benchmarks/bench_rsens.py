"""R-sens cost against one vectorized forward evaluation, measured in one run.

Run: .venv/bin/python benchmarks/bench_rsens.py [--quick]

Prints, per model, the time of R-sens (moment and draw mode) and R-sens2 divided
by the time of one forward evaluation of the likelihood parameters over the
same draws and points (the same vectorized graph without derivatives), the
first-call overhead (graph build + compile), and the peak memory of a large
moment-mode call measured in a fresh process.
"""

import argparse
import gc
import subprocess
import sys
import time

import arviz_base as azb
import numpy as np
import pymc as pm

import pm_sens
from pm_sens._core.context import make_context
from pm_sens._core.request import Request
from pm_sens._run.background import wait_for_compiles
from pm_sens._run.compiling import compiled_for
from pm_sens.graph.compile.compiled import data_for_chunk


def logistic_glm(rng, n, d):
    x = rng.normal(size=(n, d))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=d)
        a = pm.Normal("a")
        pm.Bernoulli("y", logit_p=a + xd @ b, observed=rng.integers(0, 2, n))
    return model


def heteroscedastic_normal(rng, n, d):
    x = rng.normal(size=(n, d))
    with pm.Model() as model:
        xd = pm.Data("X", x)
        b = pm.Normal("b", shape=d)
        g = pm.Normal("g", shape=d)
        pm.Normal("y", mu=xd @ b, sigma=pm.math.exp(0.1 * (xd @ g)), observed=x[:, 0])
    return model


def fake_posterior(model, rng, chains, draws):
    shapes = model.eval_rv_shapes()
    post = {
        rv.name: 0.3 * rng.normal(size=(chains, draws, *shapes[rv.name])) for rv in model.free_RVs
    }
    return azb.from_dict({"posterior": post})


def default_context(model, idata):
    """The validated request of a default `sensitivity` call, without running it."""
    return make_context(Request(idata, model, progressbar=False, extend_inferencedata=False))


def forward_seconds(model, idata, repeats):
    """One vectorized forward evaluation of the per-draw parameters (no derivatives)."""
    ctx = default_context(model, idata)
    compiled = compiled_for(ctx, "draw", 0)
    data = data_for_chunk(compiled, ctx.points.values)
    return best_of(lambda: compiled(data, ctx.draws.values), repeats)


def best_of(fn, repeats):
    """The shortest of ``repeats`` calls of ``fn``, after two more that compile.

    Garbage is collected before each call: a DataTree's nodes refer to each
    other, so a dropped result is freed only by the cycle collector, and until
    then each call writes into memory the system gives out fresh. On this VM,
    touching fresh memory is slow and varies from day to day: draw-mode R-sens
    of the bambi benchmark took 0.25 s in calls after a collection and 0.6-1.1 s
    in the others.
    """
    fn()
    fn()  # a second request starts Numba's compile in the background (pm_sens._run.background)
    wait_for_compiles()
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def ratios(name, build, rng, chains, draws, n, d, repeats):
    model = build(rng, n, d)
    idata = fake_posterior(model, rng, chains, draws)
    start = time.perf_counter()
    pm_sens.sensitivity(idata, model, progressbar=False)
    first = time.perf_counter() - start
    forward = forward_seconds(model, idata, repeats)

    def run(**kw):
        return best_of(lambda: pm_sens.sensitivity(idata, model, progressbar=False, **kw), repeats)

    moment = run()
    print(f"\n{name}: S={chains * draws} draws, N={n} points, D={d} features")
    print(f"  forward evaluation                  {forward:8.3f} s   (baseline)")
    print(
        f"  R-sens, moment mode                 {moment:8.3f} s   {moment / forward:6.2f}x forward"
    )
    draw = run(mode="draw")
    print(f"  R-sens, draw mode                   {draw:8.3f} s   {draw / forward:6.2f}x forward")
    # the floor under draw mode: its result is D times the forward's output
    fill = best_of(lambda: np.empty((chains * draws, n, d)).fill(1.0), repeats)
    print(
        f"  a fresh (S, N, D) array, filled     {fill:8.3f} s   {fill / forward:6.2f}x forward"
        "   (draw mode's result, written once)"
    )
    second = run(interactions=True)
    print(
        f"  R-sens + R-sens2, moment mode       {second:8.3f} s   {second / forward:6.2f}x forward"
        f"   (target <= D+2 = {d + 2})"
    )
    print(
        f"  first call (build + compile + run)  {first:8.3f} s   overhead {first - moment:.3f} s"
    )


#: one moment-mode R-sens call, global outputs only
MOMENT_CALL = "pm_sens.sensitivity(idata, model, progressbar=False)"
#: draw-mode R-sens on dask-backed points, S·N·D local values never held at once:
#: computed block by block into each draw's mean over points
LAZY_DRAW_CALL = (
    "points = xr.Dataset({{'X': (('obs', 'col'), model['X'].get_value())}}).chunk(obs=10000); "
    "pm_sens.sensitivity(idata, model, points=points, mode='draw', progressbar=False, "
    "extend_inferencedata=False, memory_limit=2.5e8)['sensitivity']['rsens'].mean('obs').compute()"
)

PEAK_CODE = """
import sys, threading, time, numpy as np, xarray as xr
sys.path.insert(0, "benchmarks")
from bench_rsens import heteroscedastic_normal, fake_posterior
import pm_sens

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

rng = np.random.default_rng(0)
S, N, D = {s}, {n}, {d}
model = heteroscedastic_normal(rng, N, D)
idata = fake_posterior(model, rng, 4, S // 4)
for mode in ("moment", "draw"):  # compile first
    pm_sens.sensitivity(idata, model, mode=mode, progressbar=False, num_draws=8)
base, peak, done = rss(), [0], []

def watch():
    while not done:
        peak[0] = max(peak[0], rss())
        time.sleep(0.002)

thread = threading.Thread(target=watch)
thread.start()
start = time.perf_counter()
{call}
seconds = time.perf_counter() - start
done.append(1)
thread.join()
print(seconds, base / 2**30, peak[0] / 2**30)
"""


def measure_call(s, n, d, call=MOMENT_CALL):
    """Seconds, resident GB before and peak GB during one R-sens ``call``
    (heteroscedastic Normal), in a fresh process, memory sampled every 2 ms."""
    code = PEAK_CODE.format(s=s, n=n, d=d, call=call.format())
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    return tuple(map(float, out.stdout.split()[-3:]))


def peak_memory(s, n, d):
    """Print the peak memory of one call (see `measure_call`)."""
    _, base, peak = measure_call(s, n, d)
    print(f"\npeak memory, moment mode, S={s}, N={n}, D={d} (heteroscedastic Normal)")
    print(f"  resident before the call {base:.2f} GB, peak during the call {peak:.2f} GB")
    print(f"  added by pm_sens.sensitivity: {peak - base:.2f} GB   (target <= 1.5 GB)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    if args.quick:
        sizes, repeats, peak = dict(chains=2, draws=100, n=200, d=4), 2, (400, 2000, 5)
    else:
        sizes, repeats, peak = dict(chains=4, draws=1000, n=1000, d=10), 3, (4000, 20000, 20)
    ratios("logistic GLM (one parameter)", logistic_glm, rng, **sizes, repeats=repeats)
    ratios(
        "Normal, sigma depends on x (two parameters)",
        heteroscedastic_normal,
        rng,
        **sizes,
        repeats=repeats,
    )
    peak_memory(*peak)


if __name__ == "__main__":
    main()
