"""pyprob 1.5.0 runs its own inference engines on a PPX simulator:
importance sampling and random-walk Metropolis-Hastings, conditioned on the
observation of a prior trace. Prints, per engine, the traces it kept and
whether every log weight is finite, as JSON.

usage: pyprob_posterior.py ADDRESS OBSERVATION_NAME TRACES
"""

import json
import math
import sys

import pyprob
from pyprob import InferenceEngine, RemoteModel

address, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
pyprob.seed(2)
model = RemoteModel(address)
observed = model.get_trace().named_variables[name].value
result = {}
for engine in (InferenceEngine.IMPORTANCE_SAMPLING, InferenceEngine.RANDOM_WALK_METROPOLIS_HASTINGS):
    posterior = model.posterior(num_traces=count, inference_engine=engine, observe={name: observed})
    weights = [float(w) for w in posterior.log_weights]
    result[engine.name] = {"traces": len(posterior), "finite": all(math.isfinite(w) for w in weights)}
print(json.dumps(result))
model.close()
